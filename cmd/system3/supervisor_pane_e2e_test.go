package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/tmux"
)

// supervisedRig is a private tmux server with a supervisor pane and the
// monitors for it, configured with supervisor.session.
type supervisedRig struct {
	t        *testing.T
	srv      tmux.Server
	c        *tmux.Client
	env      map[string]string
	svc      api.Service
	stateDir string
	supPane  string
}

func startSupervised(t *testing.T, supCommand []string, supEnv map[string]string, minInterval string) *supervisedRig {
	t.Helper()
	r := &supervisedRig{t: t, srv: agentServer(t), stateDir: testkit.ShortDir(t)}
	r.c = tmux.NewClient(r.srv)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	body := fmt.Sprintf("supervisor:\n  session: sup\n  sessions: ['orch-*']\n  min_interval: %s\n", minInterval)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": r.stateDir, "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": r.srv.Path, "SYSTEM3_CONFIG": cfg}
	// The supervisor's own commands (system3 hook) find this config and
	// state dir, never the developer's.
	env := map[string]string{"HOME": r.env["HOME"], "SYSTEM3_STATE_DIR": r.stateDir, "SYSTEM3_CONFIG": cfg}
	for k, v := range supEnv {
		env[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pane, err := r.c.NewSession(ctx, tmux.NewSessionOptions{Name: "sup", Command: supCommand, Env: env, Width: 120, Height: 40})
	if err != nil {
		t.Fatal(err)
	}
	r.supPane = pane
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(r.stateDir, "system3.log"))
			t.Logf("system3.log:\n%s", log)
		}
	})
	r.svc = startTestMonitors(t, r.env)
	return r
}

// orchestrator starts a fake agent running script in session name.
func (r *supervisedRig) orchestrator(name, script string) string {
	r.t.Helper()
	cmd, err := fakeAgentCommand()
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pane, err := r.c.NewSession(ctx, tmux.NewSessionOptions{Name: name, Command: append(cmd, "--script", script), Width: 100, Height: 30})
	if err != nil {
		r.t.Fatal(err)
	}
	return pane
}

// wakeOf waits for the open awaiting_input wake of session.
func (r *supervisedRig) wakeOf(session string) api.Wake {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev, err := r.svc.WaitWake(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, Session: session, IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		r.t.Fatalf("no awaiting_input wake from %s: %v", session, err)
	}
	return ev
}

func (r *supervisedRig) state() api.Session {
	snap, err := r.svc.Snapshot(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range snap.Sessions {
		if s.Pane == r.supPane {
			return s
		}
	}
	return api.Session{}
}

func (r *supervisedRig) screen() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, _ := r.c.Capture(ctx, r.supPane, tmux.CaptureOptions{})
	return s
}

// deliveries are the audited deliveries to the supervisor pane, in order.
func (r *supervisedRig) deliveries() []api.AuditEntry {
	r.t.Helper()
	entries, err := audit.Read(filepath.Join(r.stateDir, audit.File))
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	var out []api.AuditEntry
	for _, e := range entries {
		if e.Origin == api.DeliveryOrigin {
			out = append(out, e)
		}
	}
	return out
}

// typedCount waits until n deliveries are audited with their result.
func (r *supervisedRig) typedCount(n int) {
	r.t.Helper()
	testkit.WaitFor(r.t, 10*time.Second, fmt.Sprintf("%d deliveries audited", n), func() bool {
		d := r.deliveries()
		return len(d) == n && d[n-1].Phase == audit.PhaseResult
	})
}

// timeline records the supervisor pane's states as the monitors publish
// them.
type timeline struct {
	mu     sync.Mutex
	states []api.Session
}

func (r *supervisedRig) watch() *timeline {
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	ch, err := r.svc.Watch(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	tl := &timeline{}
	go func() {
		for u := range ch {
			if u.Session.Pane == r.supPane {
				tl.mu.Lock()
				tl.states = append(tl.states, u.Session)
				tl.mu.Unlock()
			}
		}
	}()
	return tl
}

// at is the state the monitors showed at t.
func (tl *timeline) at(t time.Time) api.Session {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var cur api.Session
	for _, s := range tl.states {
		if s.Updated.After(t) {
			break
		}
		cur = s
	}
	return cur
}

// TestSupervisorPaneE2E: a supervisor pane (a fake agent drawing Claude
// Code's screens) is typed each wake as text once it is idle at its
// prompt; while it works or waits at its own question, nothing reaches
// it. The fake agent records every key and paste it reads with what it
// was doing then.
func TestSupervisorPaneE2E(t *testing.T) {
	t.Parallel()
	cmd, err := fakeAgentCommand()
	if err != nil {
		t.Fatal(err)
	}
	inputs := filepath.Join(t.TempDir(), "inputs")
	r := startSupervised(t, append(cmd, "--script", "question", "--inputs", inputs), nil, "1s")
	tl := r.watch()

	// The supervisor works, then waits at a question of its own.
	testkit.WaitFor(t, 30*time.Second, "the supervisor pane at its question", func() bool { return r.state().State == api.AwaitingInput })
	r.orchestrator("orch-a", "question")
	a := r.wakeOf("orch-a")
	time.Sleep(3 * time.Second)
	if d := r.deliveries(); len(d) != 0 {
		t.Fatalf("typed into the supervisor pane at its question: %+v", d)
	}
	if !strings.Contains(r.screen(), "Which database should we use?") {
		t.Fatalf("the supervisor's question is gone:\n%s", r.screen())
	}
	// Answered, it works for a few seconds, then is idle: then, and only
	// then, the wake is typed.
	answered := time.Now()
	if err := r.c.SendKeys(context.Background(), r.supPane, tmux.Key("1")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "wake A on the supervisor's screen", func() bool { return strings.Contains(r.screen(), a.ID) })
	seenA := time.Now()
	r.typedCount(1)
	d := r.deliveries()
	if len(d) != 1 || d[0].Action != "inject" || !d[0].Sent || !d[0].Checked || !strings.HasPrefix(d[0].Text, "system3 wake "+a.ID+": awaiting_input in orch-a") ||
		!strings.HasSuffix(d[0].Text, "system3 types the next wake here once you are idle.\n") {
		t.Fatalf("deliveries = %+v", d)
	}
	if s := tl.at(d[0].Time); s.State != api.Idle || !s.Since.After(answered) {
		t.Fatalf("wake A typed while the supervisor was %s since %v (answered at %v)", s.State, s.Since, answered)
	}
	busy := false
	tl.mu.Lock()
	for _, s := range tl.states {
		busy = busy || (s.Updated.After(answered) && s.Updated.Before(d[0].Time) && s.State == api.Working)
	}
	tl.mu.Unlock()
	if !busy {
		t.Fatal("the supervisor was never seen working between the answer and the delivery")
	}
	t.Logf("wake A: raised while the supervisor waited at its question, held %s until it was idle; typed %s after it went idle, on screen %s later",
		d[0].Time.Sub(a.Time).Round(time.Millisecond), d[0].Time.Sub(tl.at(d[0].Time).Since).Round(time.Millisecond), seenA.Sub(d[0].Time).Round(time.Millisecond))

	// An idle supervisor gets a new wake at once.
	var latencies []time.Duration
	for i, name := range []string{"orch-b", "orch-c", "orch-d"} {
		testkit.WaitFor(t, 30*time.Second, "the supervisor idle again", func() bool {
			s := r.state()
			return s.State == api.Idle && time.Since(s.Since) > 1500*time.Millisecond
		})
		r.orchestrator(name, "question")
		ev := r.wakeOf(name)
		testkit.WaitFor(t, 30*time.Second, "the wake on the supervisor's screen", func() bool { return strings.Contains(r.screen(), ev.ID) })
		latencies = append(latencies, time.Since(ev.Time))
		r.typedCount(i + 2)
		if got := r.deliveries(); len(got) != i+2 || !strings.HasPrefix(got[i+1].Text, "system3 wake "+ev.ID+":") {
			t.Fatalf("deliveries = %+v", got)
		}
	}
	t.Logf("idle supervisor: wake raised → its text on the supervisor's screen: %v", latencies)

	// What the supervisor read, and when: every paste and Enter came at
	// its prompt; the one key at its question was the test's answer.
	raw, err := os.ReadFile(inputs)
	if err != nil {
		t.Fatal(err)
	}
	pastes := 0
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		switch {
		case l == "question rune":
		case strings.HasPrefix(l, "idle "):
			if strings.HasPrefix(l, "idle paste ") {
				pastes++
			}
		default:
			t.Errorf("the supervisor read %q while not at its prompt", l)
		}
	}
	if pastes != 4 {
		t.Errorf("%d pastes reached the supervisor, want 4 (one per wake):\n%s", pastes, raw)
	}
	var c struct {
		Seq  uint64 `json:"seq"`
		Wake string `json:"wake"`
	}
	b, _ := os.ReadFile(filepath.Join(r.stateDir, monitor.DeliveryCursorFile))
	if err := json.Unmarshal(b, &c); err != nil || c.Wake == "" {
		t.Fatalf("cursor file: %s, %v", b, err)
	}
}

// TestSupervisorStopHookE2E runs the real `system3 hook` in the supervisor
// pane, as Claude Code runs its Stop hook there, with a Stop event on
// stdin: its output blocks the end of the turn with the waiting wake,
// which counts as delivered; a Stop with nothing waiting is let through.
func TestSupervisorStopHookE2E(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	// Two arguments: tmux runs them as the pane's process, not through a
	// shell.
	r := startSupervised(t, []string{exe, "play-stop-hooks"}, map[string]string{stopLoopEnv: work}, "1s")
	testkit.WaitFor(t, 20*time.Second, "the supervisor pane watched", func() bool { return r.state().Pane != "" })
	r.orchestrator("orch-a", "question")
	a := r.wakeOf("orch-a")
	if s := r.state(); s.State == api.Idle {
		t.Fatalf("the stand-in for Claude Code looks idle: %+v", s)
	}
	r.orchestrator("orch-b", "question")
	b := r.wakeOf("orch-b")

	stop := func(name string, active bool) (api.HookReply, time.Duration) {
		t.Helper()
		payload := fmt.Sprintf(`{"session_id":"sup-1","transcript_path":"/tmp/t.jsonl","cwd":"/p","hook_event_name":"Stop","stop_hook_active":%v}`, active)
		start := time.Now()
		if err := os.WriteFile(filepath.Join(work, name+".tmp"), []byte(payload), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(work, name+".tmp"), filepath.Join(work, name+".json")); err != nil {
			t.Fatal(err)
		}
		var out []byte
		testkit.WaitFor(t, 20*time.Second, "the hook's reply", func() bool {
			out, err = os.ReadFile(filepath.Join(work, name+".reply"))
			return err == nil
		})
		took := time.Since(start)
		if len(out) == 0 {
			return api.HookReply{}, took
		}
		var rep api.HookReply
		if err := json.Unmarshal(out, &rep); err != nil || !strings.HasSuffix(string(out), "}\n") {
			t.Fatalf("hook printed %q: %v", out, err)
		}
		return rep, took
	}
	rep, took := stop("1", false)
	if rep.Decision != "block" || !strings.HasPrefix(rep.Reason, "system3 wake "+a.ID+": awaiting_input in orch-a") ||
		!strings.Contains(rep.Reason, "(1 more wake waits after it)") || !strings.HasSuffix(rep.Reason, "once you are idle.\n") {
		t.Fatalf("Stop with wakes waiting: %+v", rep)
	}
	ran, _ := os.ReadFile(filepath.Join(work, "1.took"))
	t.Logf("Stop hook: the system3 hook process ran %s (start-up included); file written → reply read %s", ran, took.Round(time.Millisecond))
	// The turn went on; its next Stop, after min_interval, gets the next
	// wake, never the same one.
	time.Sleep(1100 * time.Millisecond)
	rep, _ = stop("2", true)
	if rep.Decision != "block" || !strings.HasPrefix(rep.Reason, "system3 wake "+b.ID+":") {
		t.Fatalf("the turn's second Stop: %+v", rep)
	}
	time.Sleep(1100 * time.Millisecond)
	if rep, _ = stop("3", true); !rep.Empty() {
		t.Fatalf("Stop with nothing waiting: %+v", rep)
	}
	var got []string
	for _, e := range r.deliveries() {
		got = append(got, e.Action+" "+strings.SplitN(e.Text, ":", 2)[0])
	}
	if want := []string{"stop_hook system3 wake " + a.ID, "stop_hook system3 wake " + b.ID}; !slices.Equal(got, want) {
		t.Fatalf("deliveries %q, want %q", got, want)
	}
	logs, _ := os.ReadFile(filepath.Join(work, "1.err"))
	if len(logs) != 0 {
		t.Errorf("the hook wrote to stderr: %s", logs)
	}
}

// stopLoopEnv makes this test binary, started with it, play Claude Code's
// side of the Stop hook in a pane: for each FILE.json that appears in the
// directory it names, it runs `system3 hook` (this binary) with the file
// on stdin, as Claude Code does, and writes what it printed to
// FILE.reply. It is no shell and no agent, so the monitors never see it
// idle at a prompt: only the Stop hook can hand it a wake.
const stopLoopEnv = "SYSTEM3_TEST_STOP_LOOP"

func init() {
	if dir := os.Getenv(stopLoopEnv); dir != "" {
		os.Exit(playStopHooks(dir))
	}
}

func playStopHooks(dir string) int {
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	env := []string{runMainEnv + "=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, stopLoopEnv+"=") {
			env = append(env, kv)
		}
	}
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range files {
			in, err := os.Open(f)
			if err != nil {
				continue
			}
			var out, errb bytes.Buffer
			cmd := exec.Command(exe, "hook")
			cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, in, &out, &errb
			start := time.Now()
			_ = cmd.Run()
			took := time.Since(start)
			in.Close()
			base := strings.TrimSuffix(f, ".json")
			os.WriteFile(base+".err", errb.Bytes(), 0o600)
			os.WriteFile(base+".took", []byte(took.String()), 0o600)
			os.WriteFile(base+".reply.tmp", out.Bytes(), 0o600)
			os.Rename(base+".reply.tmp", base+".reply")
			os.Remove(f)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A supervisor pane that is gone while a wake waits is said by `system3
// status` (and so the dashboard's header and /health), and the wake waits
// for it.
func TestSupervisorPaneMissingShowsInStatus(t *testing.T) {
	t.Parallel()
	r := startSupervised(t, []string{"sleep", "600"}, nil, "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.orchestrator("orch-a", "working")
	if err := r.c.KillSession(ctx, "sup"); err != nil {
		t.Fatal(err)
	}
	r.orchestrator("orch-b", "question")
	b := r.wakeOf("orch-b")
	var doc statusDoc
	testkit.WaitFor(t, 10*time.Second, "status to report the missing supervisor pane", func() bool {
		doc = statusNow(t, r.env)
		return strings.Contains(doc.Problem, "supervisor pane")
	})
	if doc.Source != "daemon" || !strings.Contains(doc.Problem, `"sup"`) || !strings.Contains(doc.Problem, "1 wake waits for it") {
		t.Fatalf("status: source %s, problem %q", doc.Source, doc.Problem)
	}
	if d := r.deliveries(); len(d) != 0 {
		t.Fatalf("delivered to a pane that is gone: %+v", d)
	}
	log, _ := os.ReadFile(filepath.Join(r.stateDir, "system3.log"))
	if !strings.Contains(string(log), "supervisor pane: missing") {
		t.Fatalf("the log does not say so:\n%s", log)
	}
	t.Logf("status problem with wake %s waiting: %s", b.ID, doc.Problem)
}
