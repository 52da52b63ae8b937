package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

// hookedClaude is the real Claude Code CLI in a private tmux server, with
// system3's monitors running in this process for it.
type hookedClaude struct {
	cs       *claudetest.Session
	svc      api.Service
	stateDir string
}

// startHookedClaude starts Claude Code (with hooks from hooks.Settings
// that run this test binary as `system3 hook`, when hooked) and monitors
// for its tmux server.
func startHookedClaude(t testing.TB, fakeAPI *claudetest.FakeAPI, hooked bool) *hookedClaude {
	t.Helper()
	return startHookedClaudeConfig(t, fakeAPI, hooked, "")
}

// startHookedClaudeConfig is startHookedClaude with the monitors reading
// config (config.yaml's text; "" for none).
func startHookedClaudeConfig(t testing.TB, fakeAPI *claudetest.FakeAPI, hooked bool, config string) *hookedClaude {
	t.Helper()
	dir := testkit.ShortDir(t)
	args := []string{"--permission-mode", "default"}
	if hooked {
		cmdline := hookCommand(t, dir)
		settings, err := hooks.Settings(cmdline)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--settings", string(settings))
	}
	// claudetest runs the CLI under `env -i`, which drops the TMUX_PANE
	// tmux gives every pane; the first pane of a fresh server is %0.
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: args, Env: []string{"TMUX_PANE=%0"}})
	if cs.Pane != "%0" {
		t.Fatalf("the CLI runs in pane %s, not %%0", cs.Pane)
	}
	// The script the scripted tool calls run, so they succeed.
	if err := os.WriteFile(filepath.Join(cs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": dir, "SYSTEM3_TASKS_DIR": t.TempDir(), "SYSTEM3_TMUX_SOCKET_PATH": cs.Socket()}
	if config != "" {
		env["SYSTEM3_CONFIG"] = filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(env["SYSTEM3_CONFIG"], []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	svc := startTestMonitors(t, env)
	return &hookedClaude{cs: cs, svc: svc, stateDir: dir}
}

func (h *hookedClaude) session(t testing.TB) api.Session {
	t.Helper()
	snap, err := h.svc.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap.Sessions {
		if s.Pane == h.cs.Pane {
			return s
		}
	}
	return api.Session{}
}

// await polls the session until ok says so, and fails with the screen
// when timeout passes first.
func (h *hookedClaude) await(t testing.TB, what string, timeout time.Duration, ok func(api.Session) bool) api.Session {
	t.Helper()
	return testkit.WaitForValue(t, timeout, what, func() (api.Session, bool) {
		s := h.session(t)
		return s, ok(s)
	}, func() string { return "screen:\n" + h.cs.Capture() })
}

// approve selects "Yes" at the permission prompt, again if the first
// Enter came before the dialog took keys.
func (h *hookedClaude) approve(t testing.TB) {
	t.Helper()
	// With hooks, awaiting_input is known before the dialog is drawn.
	h.cs.WaitForText("Do you want to proceed?", 0)
	for range 5 {
		h.cs.Keys("Enter")
		if testkit.Poll(2*time.Second, func() bool { return !strings.Contains(h.cs.Capture(), "Do you want to proceed?") }) {
			return
		}
	}
	t.Fatalf("the permission prompt did not take Enter:\n%s", h.cs.Capture())
}

// TestHooksOnRealClaudeCode: Claude Code started with system3's hook
// settings reports its permission prompt through the PermissionRequest
// hook (awaiting_input, the hook as evidence; the benchmark below shows it
// comes before the screen would have),
// the screen then fills the question and options, and the end of the turn
// comes through the Stop hook. Nothing is spooled while the monitors run.
func TestHooksOnRealClaudeCode(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t, claudetest.Rule{Contains: "deploy-now", Steps: []claudetest.Step{
		{Tool: claudetest.Bash("./deploy.sh --prod", "Deploy to production")},
		{Text: "Deployed."},
	}})
	h := startHookedClaude(t, fakeAPI, true)
	h.await(t, "the agent recognised", 20*time.Second, func(s api.Session) bool { return s.Agent == "claude" && s.State == api.Idle })

	h.cs.Send("deploy-now please")
	first := h.await(t, "awaiting_input", 30*time.Second, func(s api.Session) bool { return s.State == api.AwaitingInput })
	t.Logf("awaiting_input first reported by %s (%s)", first.Evidence.Source, first.Evidence.Rule)
	// Claude Code may draw the dialog while the hook process starts; the
	// hook then confirms what the screen showed, and is the evidence.
	first = h.await(t, "awaiting_input from the hook", 10*time.Second, func(s api.Session) bool {
		return s.State == api.AwaitingInput && s.Evidence.Source == "hook"
	})
	if first.Evidence.Source != "hook" || (first.Evidence.Rule != "hook.permission_request" && first.Evidence.Rule != "hook.notification.permission_prompt") ||
		!strings.Contains(strings.Join(first.Evidence.Lines, "\n"), "./deploy.sh --prod") {
		t.Fatalf("first awaiting_input: %+v\nscreen:\n%s", first, h.cs.Capture())
	}
	s := h.await(t, "the prompt's question", 20*time.Second, func(s api.Session) bool { return s.Question != "" })
	if s.State != api.AwaitingInput || s.Evidence.Source != "hook" || s.Question != "Do you want to proceed?" || len(s.Options) < 3 || s.Options[0] != "Yes" {
		t.Fatalf("prompt drawn: %+v", s)
	}

	h.approve(t)
	h.cs.WaitForText("Deployed.", 0)
	s = h.await(t, "idle from the Stop hook", 20*time.Second, func(s api.Session) bool {
		return s.State == api.Idle && s.Evidence.Source == "hook"
	})
	if s.Evidence.Rule != "hook.stop" {
		t.Fatalf("after the turn: %+v", s)
	}
	if fi, err := os.Stat(filepath.Join(h.stateDir, hooks.SpoolFile)); err == nil && fi.Size() > 0 {
		b, _ := os.ReadFile(filepath.Join(h.stateDir, hooks.SpoolFile))
		t.Fatalf("events were spooled while the monitors ran:\n%s", b)
	}
}

// BenchmarkHookDetectionLatency measures how long after the fake API hands
// Claude Code a tool call needing permission the monitors report
// awaiting_input: with hooks (PermissionRequest) and from the screen alone.
// Each iteration is one prompt; read p50-ms and p95-ms.
//
//	go test -run XXX -bench HookDetectionLatency -benchtime 10x ./cmd/system3/
func BenchmarkHookDetectionLatency(b *testing.B) {
	for _, hooked := range []bool{true, false} {
		name := "screen"
		if hooked {
			name = "hooks"
		}
		b.Run(name, func(b *testing.B) {
			fakeAPI := claudetest.NewFakeAPI(b)
			h := startHookedClaude(b, fakeAPI, hooked)
			h.await(b, "the agent recognised", 20*time.Second, func(s api.Session) bool { return s.Agent == "claude" && s.State == api.Idle })
			var lat []time.Duration
			var byHook int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				key := fmt.Sprintf("deploy-%d-now", i)
				fakeAPI.AddRule(claudetest.Rule{Contains: key, Steps: []claudetest.Step{
					{Tool: claudetest.Bash(fmt.Sprintf("./deploy.sh --build %d", i), "Deploy")}, {Text: fmt.Sprintf("Deployed %d.", i)}}})
				h.cs.Send(key + " please")
				s := h.await(b, "awaiting_input", 30*time.Second, func(s api.Session) bool { return s.State == api.AwaitingInput })
				seen := time.Now()
				if s.Evidence.Source == "hook" {
					byHook++
				}
				served := time.Time{}
				for _, r := range fakeAPI.Requests() {
					if r.Rule == key && served.IsZero() {
						served = r.Time
					}
				}
				if served.IsZero() {
					b.Fatal("the fake API never served the tool call")
				}
				lat = append(lat, seen.Sub(served))
				b.StopTimer()
				h.approve(b)
				h.cs.WaitForText(fmt.Sprintf("Deployed %d.", i), 0)
				h.await(b, "idle", 20*time.Second, func(s api.Session) bool { return s.State == api.Idle })
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(byHook)/float64(b.N), "by-hook")
			b.ReportMetric(0, "ns/op")
		})
	}
}
