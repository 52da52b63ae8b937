package monitor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/chattest"
	"github.com/system3-dev/system3/monitor/agents"
)

// TestRealChatAgents runs the supervisor against the real opencode, Qwen
// Code, Cline and GitHub Copilot CLIs talking to the fake Chat Completions API: each pane
// is recognised as its agent by its process (Qwen Code and Copilot by
// their arguments: they run as node, Copilot's binary as MainThread), system3's interrupt stops a turn, a shell command
// approval raises an awaiting_input wake
// with its question and options, Answer "1" (typed with the agent's own
// keys) lets the command run in the real CLI, and quitting leaves the pane
// exited, not idle, with no failed worker.
func TestRealChatAgents(t *testing.T) {
	for _, tc := range []struct {
		cli      chattest.CLI
		question string
		option   string
		quitKeys []string
		quitText string
		// interrupted is the kind of idle after an interrupt (Cline shows
		// nothing to tell it).
		interrupted string
	}{
		{chattest.Opencode, "Permission required", "Allow once", []string{"C-c"}, "", "interrupted"},
		{chattest.Qwen, "Allow execution of: 'deploy.sh'?", "Yes, allow once", nil, "/quit", "interrupted"},
		{chattest.Cline, "Approve tool call?", "Approve", []string{"C-c"}, "", ""},
		{chattest.Copilot, "Do you want to run this command?", "Yes", []string{"C-c", "C-c"}, "", "interrupted"},
	} {
		t.Run(string(tc.cli), func(t *testing.T) {
			t.Parallel()
			fakeAPI := chattest.NewFakeAPI(t, chattest.Rule{Contains: "deploy-now", Steps: []chattest.Step{
				{Text: "I'll run the deploy script.", Tool: chattest.Shell(tc.cli, "./deploy.sh --prod", "Deploy to production")},
				{Text: "Deployed."},
			}}, chattest.Rule{Contains: "slow-essay", Steps: []chattest.Step{
				{Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12), Chunks: 60, ChunkDelay: 300 * time.Millisecond},
			}})
			cs := chattest.Start(t, tc.cli, chattest.Options{API: fakeAPI})
			if err := os.WriteFile(filepath.Join(cs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
			s := m.waitState(api.Idle, "")
			if s.Agent != string(tc.cli) || s.AgentBy != "process" {
				t.Fatalf("agent = %q by %q, want %s by process (pane command %q)", s.Agent, s.AgentBy, tc.cli, cs.CurrentCommand())
			}

			// system3's interrupt stops a turn (opencode's takes Escape twice).
			cs.Send("write the slow-essay")
			m.waitState(api.Working, "")
			// opencode has been seen to send its first request 30 s late on a busy machine.
			cs.WaitForText("lazy dog. The quick", 90*time.Second)
			interrupt := func() {
				t.Helper()
				if _, err := m.sup.Interrupt(context.Background(), api.InterruptRequest{Target: api.Target{Pane: cs.Pane}, Origin: "test"}); err != nil {
					t.Fatalf("interrupt: %v", err)
				}
			}
			interrupt()
			began := time.Now()
			if tc.cli == chattest.Opencode || tc.cli == chattest.Copilot {
				// On a busy machine opencode (and Copilot, which also takes
				// Escape twice) can read both Escapes at once, as one key
				// that interrupts nothing; a person presses again.
				time.Sleep(3 * time.Second)
				if sc := cs.Capture(); strings.Contains(sc, "esc interrupt") || strings.Contains(sc, "esc again to interrupt") {
					t.Logf("%s still offers to interrupt; interrupting again", tc.cli)
					interrupt()
				}
			}
			m.waitState(api.Idle, tc.interrupted)
			// Cline shows nothing to tell an interrupted turn: idle well
			// before the answer could have run out is the interrupt's.
			if d := time.Since(began); tc.interrupted == "" && d > 10*time.Second {
				t.Errorf("idle %v after the interrupt: the answer ran out instead", d)
			}
			if tc.cli == chattest.Qwen {
				// Qwen Code puts the cancelled prompt back in its input box.
				for range len("write the slow-essay") + 2 {
					cs.Keys("BSpace")
				}
			}

			cs.Send("deploy-now please")
			ev := m.waitWake(api.ReasonAwaitingInput)
			if ev.Kind != "permission" || ev.Question != tc.question || len(ev.Options) < 2 || ev.Options[0] != tc.option ||
				!strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Agent != string(tc.cli) {
				t.Fatalf("permission wake = %+v", ev)
			}
			ps := m.wait("a prompt on screen", func(s api.Session) bool { return s.State == api.AwaitingInput && s.Prompt != "" })
			res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: cs.Pane}, Prompt: ps.Prompt, Answer: "1", Origin: "test"})
			if err != nil {
				t.Fatalf("answer 1: %v", err)
			}
			if res.Option != tc.option {
				t.Errorf("answer chose %q, want %q", res.Option, tc.option)
			}
			cs.WaitFor("the command's output at the API", 0, func(string) bool { return fakeAPI.CountMain("deployed-ok") > 0 })
			m.waitState(api.Idle, "")

			if tc.quitText != "" {
				cs.Send(tc.quitText)
			}
			for _, k := range tc.quitKeys {
				cs.Keys(k)
				time.Sleep(500 * time.Millisecond)
			}
			m.waitState(api.Exited, "process_gone")
			noWake(t, m, api.ReasonWorkerFailed)
		})
	}
}

// TestRealClineResume: system3 learns the id of the conversation the real
// Cline holds in a pane from the session files Cline keeps (its probe),
// the id Cline itself names when it quits ("Continue  cline --id ID"), and
// Cline started again with its Spec's resume of that id (what system3
// restore runs) carries the earlier conversation into its next request.
func TestRealClineResume(t *testing.T) {
	// The answer streams for 15 s, longer than the probe waits between
	// looks at a pane's process (reprobeEvery), as an orchestrator's turns
	// do.
	fakeAPI := chattest.NewFakeAPI(t, chattest.Rule{Contains: "remember-kumquat", Steps: []chattest.Step{
		{Text: "Let me think about that for a while. Noted: KUMQUAT-7.", Chunks: 30, ChunkDelay: 500 * time.Millisecond},
	}}, chattest.Rule{Contains: "what-did-i-say", Steps: []chattest.Step{
		{Text: "You asked me to remember KUMQUAT-7, and I did.", Chunks: 30, ChunkDelay: 500 * time.Millisecond},
	}})
	cs := chattest.Start(t, chattest.Cline, chattest.Options{API: fakeAPI})
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 60*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	if s := m.waitState(api.Idle, ""); s.Agent != "cline" || s.AgentSessionID != "" {
		t.Fatalf("before any prompt: agent %q, session id %q; want cline and none (Cline keeps no session yet)", s.Agent, s.AgentSessionID)
	}
	cs.Send("remember-kumquat please")
	cs.WaitForText("Noted: KUMQUAT-7.", 60*time.Second)
	id := m.wait("the conversation's id", func(s api.Session) bool { return s.AgentSessionID != "" }).AgentSessionID

	cs.Keys("C-c")
	m.waitState(api.Exited, "process_gone")
	named := regexp.MustCompile(`Continue\s+cline --id (\S+)`).FindStringSubmatch(cs.Capture())
	if named == nil || named[1] != id {
		t.Fatalf("system3 learnt conversation %q; Cline names %q on quitting:\n%s", id, named, cs.Capture())
	}

	spec := agents.Lookup("cline")
	if got := ProbeAgent(spec.Probe, cs.PanePID(), cs.Dir).SessionID; got != "" {
		t.Errorf("Cline quit, yet its probe names conversation %q", got)
	}
	cs.Run(append(slices.Clone(spec.Launch.Command[1:]), spec.Resume(id)...)...)
	cs.WaitFor("the resumed conversation", 60*time.Second, func(screen string) bool {
		return cs.Ready(screen) && strings.Contains(screen, "Noted: KUMQUAT-7.")
	})
	m.waitState(api.Idle, "")
	cs.Send("what-did-i-say now")
	cs.WaitFor("the request after the resume", 0, func(string) bool { return fakeAPI.CountMain("what-did-i-say") > 0 })
	for _, r := range fakeAPI.Requests() {
		if r.Kind == chattest.KindMain && strings.Contains(r.Prompt, "what-did-i-say") &&
			(!bytes.Contains(r.Body, []byte("remember-kumquat please")) || !bytes.Contains(r.Body, []byte("Noted: KUMQUAT-7."))) {
			t.Fatalf("the request after the resume does not carry the earlier conversation:\n%.3000s", r.Body)
		}
	}
	// The resumed Cline, a new process, holds the same conversation (its
	// manifest still names the process that began it).
	if got := ProbeAgent(spec.Probe, cs.PanePID(), cs.Dir).SessionID; got != id {
		t.Errorf("the resumed Cline's probe names conversation %q, want %q", got, id)
	}
	if s := m.wait("the resumed conversation's id", func(s api.Session) bool { return s.AgentSessionID != "" }); s.AgentSessionID != id {
		t.Errorf("after the resume system3 names conversation %q, want %q", s.AgentSessionID, id)
	}
}
