package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tmux"
)

// TestSupervisorPaneRealClaude: the real Claude Code is the supervisor
// pane (with system3's hooks), against a fake API that answers every wake
// it is given. Idle, it is typed a wake and sends it to its model; busy
// with a long answer when another wake comes, it gets that one only as its
// turn ends (its Stop hook, or typed once idle), once.
func TestSupervisorPaneRealClaude(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "slow-essay", Steps: []claudetest.Step{{
			Text: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6), Chunks: 20, ChunkDelay: 300 * time.Millisecond,
		}}},
		claudetest.Rule{Contains: "system3 wake", Steps: []claudetest.Step{{Text: "Noted the wake; I leave it to a person."}}},
	)
	dir := testkit.ShortDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	settings, err := hooks.Settings(fmt.Sprintf("env %s=1 SYSTEM3_STATE_DIR=%s %s hook", runMainEnv, core.ShellQuote(dir), core.ShellQuote(exe)))
	if err != nil {
		t.Fatal(err)
	}
	// claudetest runs the CLI under `env -i`: the pane it runs in is the
	// fresh server's first.
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: []string{"--permission-mode", "default", "--settings", string(settings)},
		Env: []string{"TMUX_PANE=%0"}, Width: 120, Height: 40})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("supervisor:\n  session: '%0'\n  min_interval: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": dir, "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": cs.Socket(), "SYSTEM3_CONFIG": cfg}
	svc := startTestMonitors(t, env)
	r := &supervisedRig{t: t, c: tmux.NewClient(tmux.Server{Path: cs.Socket()}), env: env, svc: svc, stateDir: dir, supPane: cs.Pane}
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "system3.log"))
			t.Logf("system3.log:\n%s", log)
		}
	})
	testkit.WaitFor(t, 30*time.Second, "Claude Code idle as the monitors see it", func() bool { return r.state().State == api.Idle })

	// seen waits for the fake API to be sent the wake, and returns when.
	seen := func(ev api.Wake) time.Time {
		t.Helper()
		var at time.Time
		testkit.WaitFor(t, 60*time.Second, "the supervisor's model to be sent wake "+ev.ID, func() bool {
			for _, q := range fakeAPI.Requests() {
				if q.Kind == claudetest.KindMain && strings.Contains(q.Prompt, "system3 wake "+ev.ID+":") {
					at = q.Time
					return true
				}
			}
			return false
		})
		return at
	}

	// Idle: typed at once, and sent to its model.
	r.orchestrator("orch-a", "question")
	a := r.wakeOf("orch-a")
	gotA := seen(a)
	r.typedCount(1)
	d := r.deliveries()
	if d[0].Action != "inject" || !d[0].Sent || !d[0].Checked {
		t.Fatalf("wake A: %+v", d[0])
	}
	t.Logf("idle Claude Code: wake raised → typed %s → its model request %s (%s in all)",
		d[0].Time.Sub(a.Time).Round(time.Millisecond), gotA.Sub(d[0].Time).Round(time.Millisecond), gotA.Sub(a.Time).Round(time.Millisecond))
	testkit.WaitFor(t, 30*time.Second, "Claude Code idle after the wake", func() bool {
		s := r.state()
		return s.State == api.Idle && s.Since.After(gotA)
	})

	// Busy: a wake raised while it streams a long answer waits for the
	// end of that turn.
	cs.Send("write the slow-essay")
	testkit.WaitFor(t, 30*time.Second, "Claude Code working", func() bool { return r.state().State == api.Working })
	r.orchestrator("orch-b", "question")
	b := r.wakeOf("orch-b")
	if s := r.state(); s.State != api.Working {
		t.Fatalf("Claude Code was %s when wake B came; the test needs it busy", s.State)
	}
	gotB := seen(b)
	essayAsked := time.Time{}
	for _, q := range fakeAPI.Requests() {
		if q.Kind == claudetest.KindMain && strings.Contains(q.Prompt, "slow-essay") {
			essayAsked = q.Time
		}
	}
	testkit.WaitFor(t, 10*time.Second, "wake B audited", func() bool {
		d := r.deliveries()
		return len(d) == 2 && d[1].Phase == audit.PhaseResult
	})
	d = r.deliveries()
	if !strings.HasPrefix(d[1].Text, "system3 wake "+b.ID+":") || !d[1].Sent {
		t.Fatalf("wake B: %+v", d[1])
	}
	if !d[1].Time.After(b.Time) || d[1].Time.Before(essayAsked.Add(5*time.Second)) {
		t.Fatalf("wake B given at %v, while the essay (asked for at %v, 6 s of streaming) was under way", d[1].Time, essayAsked)
	}
	t.Logf("busy Claude Code: wake B held %s, given by %s, its model request %s later", d[1].Time.Sub(b.Time).Round(time.Millisecond), d[1].Action, gotB.Sub(d[1].Time).Round(time.Millisecond))
	// Each wake went to the model once.
	count := map[string]int{}
	for _, q := range fakeAPI.Requests() {
		for _, ev := range []api.Wake{a, b} {
			if q.Kind == claudetest.KindMain && strings.Contains(q.Prompt, "system3 wake "+ev.ID+":") {
				count[ev.ID]++
			}
		}
	}
	if count[a.ID] != 1 || count[b.ID] != 1 {
		t.Fatalf("requests carrying each wake: %v", count)
	}
	time.Sleep(2 * time.Second)
	if n := len(r.deliveries()); n != 2 {
		t.Fatalf("%d deliveries, want 2: %+v", n, r.deliveries())
	}
}
