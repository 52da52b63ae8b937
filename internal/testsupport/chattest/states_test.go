package chattest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

var updateCaptures = flag.Bool("update-captures", false,
	"save the real screens the states tests classify to monitor/testdata/captures/<cli>/")

// These tests drive each real CLI through its states and check what
// system3's rules make of every real screen, with the pane's real
// processes. With -update-captures they save those screens as the
// fixtures monitor/rules tests (see the README beside them).

// checker classifies a session's screen and saves it as a fixture.
type checker struct {
	t     *testing.T
	s     *Session
	eng   *rules.Engine
	saver clitest.Captures
}

func newChecker(t *testing.T, s *Session) *checker {
	t.Helper()
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	return &checker{t: t, s: s, eng: e, saver: clitest.Captures{Dir: filepath.Join("monitor", "testdata", "captures", string(s.CLI))}}
}

func (c *checker) classify(screen string) rules.Result {
	return c.eng.Classify(rules.Input{Screen: screen, Processes: c.s.Processes(), Cmdlines: c.s.Cmdlines()})
}

// state waits until the real screen classifies as state/kind by rule, as
// this CLI's, and returns that result; with -update-captures it saves the
// screen as name.txt.
func (c *checker) state(name string, state api.State, kind, rule string) rules.Result {
	c.t.Helper()
	got := testkit.WaitForValue(c.t, DefaultTimeout, fmt.Sprintf("the screen classified %s/%s by %s", state, kind, rule), func() (classified, bool) {
		screen := c.s.Capture()
		r := c.classify(screen)
		return classified{r, screen}, r.State == state && r.Kind == kind && r.Rule == rule
	})
	last := got.res
	// Once the CLI has quit, only its screen is left to tell.
	if by := map[bool]string{true: "screen", false: "process"}[state == api.Exited]; last.Agent != string(c.s.CLI) || last.AgentBy != by {
		c.t.Fatalf("agent = %q by %s, want %s by %s: %+v", last.Agent, last.AgentBy, c.s.CLI, by, last)
	}
	if *updateCaptures && name != "" {
		c.saver.Save(c.t, name+".txt", got.screen)
	}
	return last
}

// classified is a screen and what it classified as, shown as a failed
// wait shows the last one: the state, kind, rule and evidence, then the
// screen.
type classified struct {
	res    rules.Result
	screen string
}

func (c classified) String() string {
	return fmt.Sprintf("%s/%s by %s %q\nscreen:\n%s", c.res.State, c.res.Kind, c.res.Rule, c.res.Evidence, c.screen)
}

// answer presses the keys system3 would press to choose option i of the
// prompt r.
func (c *checker) answer(r rules.Result, i int) {
	c.t.Helper()
	keys, err := agents.Lookup(r.Agent).KeysOrDefault().Choose(agent.Prompt{Kind: r.Kind, Options: r.Options}, i)
	if err != nil {
		c.t.Fatal(err)
	}
	c.press(keys...)
}

// decline presses the keys system3 would press to answer no.
func (c *checker) decline(r rules.Result) {
	c.t.Helper()
	_, keys, err := agents.Lookup(r.Agent).KeysOrDefault().No(agent.Prompt{Kind: r.Kind, Options: r.Options})
	if err != nil {
		c.t.Fatal(err)
	}
	c.press(keys...)
}

func (c *checker) press(keys ...tmux.Key) {
	c.t.Helper()
	// Like system3's answer: a prompt that has just appeared may drop a key.
	time.Sleep(300 * time.Millisecond)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	for _, n := range names {
		c.s.Keys(n)
		time.Sleep(100 * time.Millisecond)
	}
}

// essay is a long answer; streamed slowly it keeps the CLI busy.
var essay = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 12)

// captureHome is the fixed parent of the HOMEs of sessions that save
// captures, so paths on screen do not change between regenerations.
const captureHome = "/tmp/system3-chat-captures"

// home is the HOME for a session of cli: fixed while saving captures.
func home(t *testing.T, cli CLI) string {
	t.Helper()
	if !*updateCaptures {
		return ""
	}
	h := filepath.Join(captureHome, string(cli))
	if err := os.RemoveAll(h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h) })
	return h
}

func writeProjectFiles(t *testing.T, s *Session) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.Dir, "deploy.sh"), []byte("#!/bin/sh\nsleep 3\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "notes.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitAnswered waits until the fake received a main request whose latest
// turn holds text (a tool's output, an answer) and the CLI's turn is over.
func waitAnswered(t *testing.T, s *Session, text string) {
	t.Helper()
	s.WaitFor("the API to receive "+text, 0, func(string) bool { return s.API.CountMain(text) > 0 })
}

// script is what differs between the CLIs in TestRealStates.
type script struct {
	cli CLI
	// interrupt is the keys that stop a turn; interrupted the kind of idle
	// that follows (Cline shows nothing to tell an interrupted turn).
	interrupt   []string
	interrupted string
	// quit exits the CLI: keys, or a command typed.
	quitKeys []string
	quitText string
	// permission, edit and question are what the prompts show.
	// editQuestion begins the edit approval's question.
	question, editQuestion string
	options                []string
	detail, editDetail     string
	// authText is the CLI's words for a refused key; retry makes the API
	// fail with 500s to see the CLI retry and give up (error/api_error).
	authText string
	retry    bool
	// trust: the CLI opens on its folder-trust dialog.
	trust bool
}

var scripts = []script{
	{cli: Opencode, interrupt: []string{"Escape", "Escape"}, interrupted: "interrupted", quitKeys: []string{"C-c"},
		question: "Permission required", editQuestion: "Permission required", options: []string{"Allow once", "Allow always", "Reject"},
		detail: "# Shell command · $ ./deploy.sh --prod", editDetail: "→ Edit notes.txt", authText: "Incorrect API key"},
	{cli: Qwen, interrupt: []string{"Escape"}, interrupted: "interrupted", quitText: "/quit",
		question: "Allow execution of: 'deploy.sh'?", editQuestion: "Apply this change?",
		options: []string{"Yes, allow once", "Always allow run './deploy.sh *' commands in this project", "Always allow run './deploy.sh *' commands for this user", "No, suggest changes (esc)"},
		detail:  "./deploy.sh --prod", editDetail: "hello.go", authText: "Incorrect API key"},
	{cli: Cline, interrupt: []string{"Escape"}, interrupted: "", quitKeys: []string{"C-c"},
		question: "Approve tool call?", editQuestion: "Approve tool call?", options: []string{"Approve", "Deny"},
		detail: "run_commands · $ ./deploy.sh --prod", editDetail: "editor · ", authText: "Incorrect API key"},
	{cli: Copilot, interrupt: []string{"Escape", "Escape"}, interrupted: "interrupted", quitKeys: []string{"C-c", "C-c"},
		question: "Do you want to run this command?", editQuestion: "Do you want to edit ",
		options: []string{"Yes", "Yes, and don't ask again for `./deploy.sh` in this directory (~/project)", "No, and tell Copilot what to do differently (Esc to stop)"},
		detail:  "Deploy to production · ./deploy.sh --prod", editDetail: "Edit file · notes.txt +1 -1",
		authText: "Authentication failed with provider", retry: true, trust: true},
}

// TestRealStates drives each CLI through its folder-trust dialog where it
// has one (answered with system3's keys), idle, a streamed answer (working),
// an interrupt, a shell command approved with system3's keys (working
// while it runs, its output reaching the API), an edit declined with
// system3's keys, its question tool answered with them, 500s it retries
// and gives up on where the CLI shows that (Copilot: error/api_error), a
// rejected key (error/auth), and its exit back to the shell (exited, not idle).
func TestRealStates(t *testing.T) {
	for _, sc := range scripts {
		t.Run(string(sc.cli), func(t *testing.T) {
			t.Parallel()
			runStates(t, sc)
		})
	}
}

func runStates(t *testing.T, sc script) {
	cli := sc.cli
	name := string(cli)
	fakeAPI := NewFakeAPI(t,
		Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 60, ChunkDelay: 500 * time.Millisecond}}},
		// The answer after the approved command streams for about two
		// seconds: the turn the approval resumes stays working long enough
		// to be seen on a loaded machine, where the command and an
		// instant answer are over within one look.
		Rule{Contains: "deploy-now", Steps: []Step{{Text: "I'll run the deploy script.", Tool: Shell(cli, "./deploy.sh --prod", "Deploy to production")}, {Text: "Deployed.", Chunks: 5, ChunkDelay: 400 * time.Millisecond}}},
		Rule{Contains: "pick-db", Steps: []Step{
			{Tool: Question(cli, "Which database should we use?", "Database", Option{"Postgres", "Relational, robust"}, Option{"SQLite", "Embedded file"})},
			{Text: "Using your choice."},
		}},
	)
	s := Start(t, cli, Options{API: fakeAPI, Home: home(t, cli), TrustDialog: sc.trust})
	c := newChecker(t, s)
	if sc.trust {
		r := c.state("trust", api.AwaitingInput, "trust", name+".trust")
		if r.Question != TrustQuestion || len(r.Options) != 3 || r.Options[0] != "Yes" || r.Options[2] != "No (Esc)" {
			t.Errorf("trust dialog = question %q options %q", r.Question, r.Options)
		}
		c.answer(r, 0)
		s.WaitFor("the input box", 0, s.Ready)
	}
	writeProjectFiles(t, s)
	// Qwen Code writes only files it has read, or new ones.
	edited := filepath.Join(s.Dir, "notes.txt")
	if cli == Qwen {
		edited = filepath.Join(s.Dir, "hello.go")
	}
	fakeAPI.AddRule(Rule{Contains: "edit-notes", Steps: []Step{{Tool: Edit(cli, edited, "alpha", "BETA")}, {Text: "Edited."}}})
	c.state("idle", api.Idle, "", name+".idle")

	s.Send("write the slow-essay")
	c.state("working_streaming", api.Working, "", name+".working")
	// opencode has been seen to send its first request 30 s late on a busy machine.
	s.WaitForText("lazy dog. The quick", 90*time.Second)
	streaming := time.Now()
	for _, k := range sc.interrupt {
		s.Keys(k)
		time.Sleep(300 * time.Millisecond)
	}
	if len(sc.interrupt) > 1 {
		// On a busy machine opencode and Copilot can read both Escapes
		// at once, as one key that interrupts nothing, or too far apart
		// to be a double press; a person presses again, as often as it
		// takes while the answer still streams.
		for range 3 {
			time.Sleep(3 * time.Second)
			if sc2 := s.Capture(); !strings.Contains(sc2, "esc interrupt") && !strings.Contains(sc2, "esc again to interrupt") {
				break
			}
			t.Log("still offers to interrupt; interrupting again")
			for _, k := range sc.interrupt {
				s.Keys(k)
				time.Sleep(300 * time.Millisecond)
			}
		}
	}
	if sc.interrupted != "" {
		c.state("interrupted", api.Idle, sc.interrupted, name+".interrupted")
	} else {
		c.state("interrupted", api.Idle, "", name+".idle")
	}
	// The whole answer streams for 30 s, a sixth of it was on screen: idle
	// well before the rest could stream is the interrupt's (the others say
	// so on screen).
	if d := time.Since(streaming); sc.interrupted == "" && d > 10*time.Second {
		t.Errorf("idle %v after the interrupt: the answer ran out instead", d)
	}
	if cli == Qwen {
		// Qwen Code puts the cancelled prompt back in its input box.
		for range len("write the slow-essay") + 2 {
			s.Keys("BSpace")
		}
	}

	s.Send("deploy-now please")
	r := c.state("permission_exec", api.AwaitingInput, "permission", name+".permission")
	if r.Question != sc.question || !slices.Equal(r.Options, sc.options) || !strings.Contains(r.Detail, sc.detail) {
		t.Errorf("command approval = question %q options %q detail %q", r.Question, r.Options, r.Detail)
	}
	c.answer(r, 0)
	c.state("working_tool_running", api.Working, "", name+".working")
	waitAnswered(t, s, "deployed-ok")
	c.state("idle_after_turn", api.Idle, "", name+".idle")

	s.Send("edit-notes now")
	r = c.state("permission_edit", api.AwaitingInput, "permission", name+".permission")
	if !strings.HasPrefix(r.Question, sc.editQuestion) || !strings.Contains(r.Detail, sc.editDetail) || len(r.Options) < 2 {
		t.Errorf("edit approval = question %q options %q detail %q", r.Question, r.Options, r.Detail)
	}
	c.decline(r)
	c.state("", api.Idle, "", name+".idle")
	if b, _ := os.ReadFile(filepath.Join(s.Dir, "notes.txt")); string(b) != "alpha\n" || fileExists(filepath.Join(s.Dir, "hello.go")) {
		t.Errorf("a declined edit changed the files: notes.txt %q", b)
	}

	s.Send("pick-db for me")
	r = c.state("question", api.AwaitingInput, "question", name+".question")
	if r.Question != "Which database should we use?" || len(r.Options) < 2 || r.Options[0] != "Postgres" || r.Options[1] != "SQLite" {
		t.Errorf("question = %q options %q", r.Question, r.Options)
	}
	c.answer(r, 1)
	waitAnswered(t, s, "SQLite")
	c.state("", api.Idle, "", name+".idle")

	if sc.retry {
		fakeAPI.FailNext(1000, ErrorStatus(500))
		s.Send("fail-500 now")
		c.state("api_retry", api.Error, "api_error", name+".api_retry")
		s.WaitFor("the CLI to give up", 90*time.Second, func(screen string) bool { return !strings.Contains(screen, "Working") })
		c.state("api_error", api.Error, "api_error", name+".api_error")
	}

	fakeAPI.FailNext(1000, ErrorStatus(401))
	s.Send("fail-401 now")
	// Classified once the CLI shows the error, so a screen that matched
	// the rule too early (the prompt "fail-401" under a running turn) is
	// not what passes.
	s.WaitForText(sc.authText, 0)
	c.state("auth_error", api.Error, "auth", name+".auth")
	fakeAPI.FailNext(0, APIError{})

	if sc.quitText != "" {
		s.Send(sc.quitText)
	}
	for _, k := range sc.quitKeys {
		s.Keys(k)
		time.Sleep(500 * time.Millisecond)
	}
	c.state("exited_shell", api.Exited, "process_gone", name+".exited")
	if got := fakeAPI.CountMain("deployed-ok"); got < 1 {
		t.Errorf("the approved command's output never reached the API; prompts: %q", fakeAPI.MainPrompts())
	}
}
