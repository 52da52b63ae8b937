package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// scriptedSupervisor is the model behind a real Claude Code supervisor:
// told to supervise, it runs the wait in the background and ends its
// turn; each <task-notification> it reads the brief from the task's
// output, answers the wake with option 1, and waits again with the
// command the brief gave.
type scriptedSupervisor struct {
	t       *testing.T
	cmdline string // system3 as install wrote it, global flags included

	mu       sync.Mutex
	next     string      // the next wait, from the last brief
	wakes    []string    // the wake ids the briefs named, in order
	notified []time.Time // when each brief's notification request came
	briefs   []string
	// acting, when set, runs before the answer to the next wake (the
	// supervisor is busy meanwhile).
	acting func()
	// polling: the supervisor waits with MCP wait_for_wake instead,
	// calling it again each time it returns, until stopPolling.
	polling, stopPolling bool
}

var (
	outputFileRE = regexp.MustCompile(`<output-file>([^<]+)</output-file>`)
	briefWakeRE  = regexp.MustCompile(`(?m)^system3 wake (\S+): `)
)

func (s *scriptedSupervisor) reply(req claudetest.Request) claudetest.Step {
	p := req.Prompt
	s.mu.Lock()
	polling, stop := s.polling, s.stopPolling
	s.mu.Unlock()
	poll := claudetest.Tool("mcp__system3__wait_for_wake", map[string]any{"max_wait_seconds": 25, "reasons": []string{"worker_failed"}})
	switch {
	case strings.Contains(p, "poll with mcp"):
		return claudetest.Step{Text: "Polling.", Tool: poll}
	case polling && strings.Contains(p, "wait_for_wake"):
		if stop {
			return claudetest.Step{Text: "Stopped polling."}
		}
		return claudetest.Step{Tool: poll}
	case strings.Contains(p, "supervise my orchestrators"):
		return claudetest.Step{Text: "Starting the monitor.", Tool: claudetest.BashBackground(s.cmdline+" wait --for-agent", "Wait for a system3 wake")}
	case strings.Contains(p, "<task-notification>"):
		m := outputFileRE.FindStringSubmatch(p)
		if m == nil {
			s.t.Errorf("a task notification names no output file: %q", p)
			return claudetest.Step{Text: "No output file."}
		}
		out, err := os.ReadFile(strings.TrimSpace(m[1]))
		if err != nil {
			s.t.Errorf("read the wait's output: %v", err)
		}
		brief := string(out)
		w := briefWakeRE.FindStringSubmatch(brief)
		s.mu.Lock()
		if _, rest, ok := strings.Cut(brief, "run the same command again (nothing is lost):\n"); ok {
			s.next = strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])
		}
		next := s.next
		if w == nil {
			s.mu.Unlock()
			s.t.Logf("a wait ended without a wake:\n%s", brief)
			return claudetest.Step{Tool: claudetest.BashBackground(next, "Wait for a system3 wake")}
		}
		s.wakes = append(s.wakes, w[1])
		s.notified = append(s.notified, req.Time)
		s.briefs = append(s.briefs, brief)
		acting := s.acting
		s.acting = nil
		s.mu.Unlock()
		if acting != nil {
			acting()
		}
		return claudetest.Step{Text: "Routine: approving.", Tool: claudetest.Bash(s.cmdline+" answer --wake "+w[1]+" 1", "Answer the prompt")}
	case strings.Contains(p, "running in background"):
		return claudetest.Step{Text: "Waiting for system3."}
	default:
		// The answer's result (typed, or refused): wait again.
		s.mu.Lock()
		next := s.next
		s.mu.Unlock()
		return claudetest.Step{Tool: claudetest.BashBackground(next, "Wait for a system3 wake")}
	}
}

func (s *scriptedSupervisor) seen() ([]string, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.wakes), slices.Clone(s.notified)
}

// messageRequests counts the requests for a model turn the supervisor
// sent.
func messageRequests(api *claudetest.FakeAPI) int {
	n := 0
	for _, r := range api.Requests() {
		if r.Path == "/v1/messages" {
			n++
		}
	}
	return n
}

// TestSupervisingClaudeCode: a real Claude Code, set up by `system3
// supervise install` and told to supervise, waits with `system3 wait
// --for-agent` as a background task: it sends no request while nothing
// happens, is woken by the wait's completion when a second real Claude
// Code (an orchestrator) asks permission, and answers it through system3
// (audited as its own); twenty prompts in a row, each answered, measure
// how soon the supervisor's request follows the wake; three wakes raised
// while it acts reach it each once, in order.
func TestSupervisingClaudeCode(t *testing.T) {
	const trials = 20
	bin := buildSystem3(t)
	var steps []claudetest.Step
	for i := 1; i <= trials; i++ {
		steps = append(steps, claudetest.Step{Tool: claudetest.Bash(fmt.Sprintf("./step.sh %d", i), fmt.Sprintf("Step %d", i))})
	}
	steps = append(steps, claudetest.Step{Text: "All steps done."})
	orchAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "run-steps", Steps: steps},
		claudetest.Rule{Contains: "one-more", Steps: []claudetest.Step{{Tool: claudetest.Bash("./step.sh last", "The last step")}, {Text: "Done."}}},
	)
	orch := claudetest.Start(t, claudetest.Options{API: orchAPI, Args: []string{"--permission-mode", "default"}})
	if err := os.WriteFile(filepath.Join(orch.Dir, "step.sh"), []byte("#!/bin/sh\n# A step takes a while, so each prompt finds the supervisor waiting.\nsleep 2\necho step \"$@\" done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := e2eEnv(t)
	stateDir := envValue(env, "SYSTEM3_STATE_DIR")
	startServe(t, bin, env, "--tmux-socket-path", orch.Socket(), "serve", "--listen", "127.0.0.1:0")

	// One command sets the supervisor up.
	supHome := t.TempDir()
	install := exec.Command(bin, "--state-dir", stateDir, "--tmux-socket-path", orch.Socket(), "supervise", "install", "--allow-actions", "--command", bin)
	install.Env = append(slices.Clone(env), "HOME="+supHome)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("supervise install: %v\n%s", err, out)
	}
	script := &scriptedSupervisor{t: t, cmdline: bin + " --state-dir " + stateDir + " --tmux-socket-path " + orch.Socket()}
	supAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "supervise my orchestrators", Reply: script.reply},
		claudetest.Rule{Contains: "<task-notification>", Reply: script.reply},
		claudetest.Rule{Contains: "poll with mcp", Reply: script.reply},
	)
	sup := claudetest.Start(t, claudetest.Options{API: supAPI, Home: supHome, Args: []string{"--permission-mode", "default"}})
	sup.Send("supervise my orchestrators")
	sup.WaitForText("Waiting for system3.", 60*time.Second)
	if strings.Contains(sup.Capture(), "Do you want to proceed?") {
		t.Fatalf("the installed permission did not cover the wait:\n%s", sup.Capture())
	}

	// Nothing happens for a minute: no request.
	before := messageRequests(supAPI)
	time.Sleep(idleWait)
	if n := messageRequests(supAPI) - before; n != 0 {
		t.Fatalf("the idle supervisor sent %d requests in a minute:\n%s", n, supAPI.Summary())
	}
	t.Logf("requests from the idle supervisor in %v: 0", idleWait)

	// Twenty prompts in a row, each answered by the supervisor.
	orch.Send("run-steps please")
	orch.WaitForText("All steps done.", 5*time.Minute)
	ids, times := script.seen()
	if len(ids) != trials {
		t.Fatalf("the supervisor saw %d wakes, want %d: %q", len(ids), trials, ids)
	}
	byID := wakesByID(t, bin, env)
	var lat []time.Duration
	for i, id := range ids {
		w, ok := byID[id]
		if !ok || w.Reason != api.ReasonAwaitingInput || w.Pane != orch.Pane || !strings.Contains(w.Details, fmt.Sprintf("./step.sh %d", i+1)) {
			t.Fatalf("wake %d the supervisor saw: %s = %+v", i+1, id, w)
		}
		if !w.Resolved || !strings.HasPrefix(w.Resolution, "answered by cli") {
			t.Errorf("wake %s: resolved %v (%s), want answered by the supervisor's answer", id, w.Resolved, w.Resolution)
		}
		lat = append(lat, times[i].Sub(w.Time))
	}
	slices.Sort(lat)
	p50, p95 := lat[len(lat)/2], lat[(len(lat)*95+99)/100-1]
	t.Logf("wake raised -> supervisor's request, %d trials: p50 %v, p95 %v, max %v", len(lat), p50.Round(time.Millisecond), p95.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	if p95 > time.Second {
		t.Errorf("p95 %v from a wake to the supervisor's request", p95)
	}
	// The answers are in the audit log as the supervisor's.
	code, out, errOut := invokeEnv(env, "audit", "--json")
	if code != 0 {
		t.Fatalf("audit: %s", errOut)
	}
	// The daemon saw that the supervising Claude Code ran each answer.
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"action":"answer"`) && strings.Contains(l, ",agent=claude:") && strings.Contains(l, `"delivered":true`) {
			n++
		}
	}
	if n < trials {
		t.Errorf("%d answers audited as the supervising Claude Code's, want %d:\n%s", n, trials, out)
	}

	// Three wakes come while the supervisor acts: each reaches it once,
	// in order.
	script.mu.Lock()
	script.acting = func() {
		for i := range 3 {
			name := fmt.Sprintf("q%d", i)
			cmd := exec.Command(tmuxtest.Bin(), "-S", orch.Socket(), "new-session", "-d", "-s", name, "-x", "100", "-y", "30",
				"env", runMainEnv+"=1", bin, "fake-agent", "--script", "question")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("start %s: %v %s", name, err, out)
			}
			time.Sleep(300 * time.Millisecond) // raised in this order
		}
		if !testkit.Poll(20*time.Second, func() bool {
			n := 0
			for _, w := range wakesByID(t, bin, env) {
				if strings.HasPrefix(w.Session, "q") && w.Reason == api.ReasonAwaitingInput {
					n++
				}
			}
			return n == 3
		}) {
			t.Errorf("the three question wakes were not raised within 20s")
		}
	}
	script.mu.Unlock()
	orch.Send("one-more please")
	testkit.Poll(90*time.Second, func() bool {
		ids, _ = script.seen()
		return len(ids) >= trials+4
	})
	byID = wakesByID(t, bin, env)
	var qs []api.Wake
	for _, w := range byID {
		if strings.HasPrefix(w.Session, "q") {
			qs = append(qs, w)
		}
	}
	slices.SortFunc(qs, func(a, b api.Wake) int { return int(a.Seq) - int(b.Seq) })
	got := ids[trials+1:]
	var want []string
	for _, w := range qs {
		want = append(want, w.ID)
	}
	if len(qs) != 3 || !slices.Equal(got, want) {
		t.Fatalf("after the last step the supervisor saw %q; the question wakes, in order, are %q", got, want)
	}
	time.Sleep(2 * time.Second)
	if ids, _ = script.seen(); len(ids) != trials+4 {
		t.Fatalf("a wake reached the supervisor twice: %q", ids)
	}
	t.Logf("three wakes raised while the supervisor acted came once each, in order: %q", got)
	var woken, size int
	for _, r := range supAPI.Requests() {
		if strings.Contains(r.Prompt, "<task-notification>") {
			woken++
			size += len(r.Body)
		}
	}
	t.Logf("background wait: %d requests for %d wakes (%.1f per wake); a woken request carries %d KB on average",
		messageRequests(supAPI), trials+4, float64(messageRequests(supAPI))/float64(trials+4), size/max(woken, 1)/1024)

	// The other way to wait, for comparison: MCP wait_for_wake, called
	// again each time it returns empty-handed, for the same minute.
	script.mu.Lock()
	script.polling = true
	script.mu.Unlock()
	before = messageRequests(supAPI)
	start := time.Now()
	sup.Send("poll with mcp")
	time.Sleep(idleWait)
	script.mu.Lock()
	script.stopPolling = true
	script.mu.Unlock()
	polled := messageRequests(supAPI) - before
	size = 0
	for _, r := range supAPI.Requests()[before:] {
		size += len(r.Body)
	}
	t.Logf("MCP wait_for_wake polling: %d requests in %v with nothing happening (%.0f an hour), %d KB each on average",
		polled, time.Since(start).Round(time.Second), float64(polled)*float64(time.Hour)/float64(time.Since(start)), size/max(polled, 1)/1024)
	if polled < 2 {
		t.Errorf("MCP polling sent %d requests in %v; the comparison measured nothing:\n%s", polled, idleWait, supAPI.Summary())
	}
}

// wakesByID reads every wake of the daemon's journal.
func wakesByID(t *testing.T, bin string, env []string) map[string]api.Wake {
	t.Helper()
	cmd := exec.Command(bin, "wakes", "--all", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("wakes --all --json: %v", err)
	}
	var ws []api.Wake
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatalf("wakes --json: %v\n%s", err, out)
	}
	m := map[string]api.Wake{}
	for _, w := range ws {
		m[w.ID] = w
	}
	return m
}

// invokeEnv runs system3 in this process with an environment list.
func invokeEnv(env []string, args ...string) (int, string, string) {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return invokeStdin(m, "", args...)
}

// idleWait is how long the supervisor is left with nothing to do.
var idleWait = time.Minute
