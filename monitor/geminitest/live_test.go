package geminitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// TestRealGemini runs the supervisor, fed by a polling tmux watcher,
// against the real Gemini CLI talking to the fake API: the pane
// is recognised as gemini by its process (node …/gemini), each screen class
// is classified, and a shell approval raises a wake with its question and
// options that `answer 1` resolves in the real CLI.
func TestRealGemini(t *testing.T) {
	fakeAPI := NewFakeAPI(t,
		Rule{Contains: "slow-essay", Steps: []Step{{Text: essay, Chunks: 12, ChunkDelay: 300 * time.Millisecond}}},
		Rule{Contains: "deploy-now", Steps: []Step{
			{Text: "I'll run the deploy script.", Call: Shell("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}},
	)
	gs := Start(t, Options{API: fakeAPI})
	if err := os.WriteFile(filepath.Join(gs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := watch(t, gs)

	s := m.waitState(rules.Idle, "")
	if s.Agent != "gemini" || s.AgentBy != "process" {
		t.Fatalf("agent = %q by %q, want gemini by process (pane command %q)", s.Agent, s.AgentBy, gs.CurrentCommand())
	}

	gs.Send("write the slow-essay")
	m.waitState(rules.Working, "")
	gs.Keys("Escape")
	m.waitState(rules.Idle, "interrupted")

	gs.Send("deploy-now please")
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Allow execution of [Shell]?" || len(ev.Options) != 3 ||
		ev.Options[0] != "Allow once" || !strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Pane != gs.Pane {
		t.Fatalf("permission wake = %+v", ev)
	}
	gs.WaitStable(300*time.Millisecond, 0)
	res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: gs.Pane}, Answer: "1", Origin: "test"})
	if err != nil {
		t.Fatalf("answer 1: %v", err)
	}
	t.Logf("answer: %+v", res)
	gs.WaitFor("deployed", 0, func(sc string) bool { return strings.Contains(sc, "Deployed.") && idleAfter("deploy-now")(sc) })
	m.waitState(rules.Idle, "")
	if !strings.Contains(strings.Join(fakeAPI.MainPrompts(), "\n"), "deployed-ok") {
		t.Errorf("the fake API never saw the shell command's output; prompts:\n%s", strings.Join(fakeAPI.MainPrompts(), "\n"))
	}

	fakeAPI.FailNext(1, ErrorStatus(400))
	gs.Send("bad-key please")
	m.waitState(rules.Error, "auth")

	gs.Send("/quit")
	m.waitState(rules.Exited, "process_gone")
}

type monitors struct {
	sup       *monitor.Supervisor
	waitState func(want rules.State, kind string) api.Session
	waitWake  func(r api.Reason) api.Wake
}

func watch(t *testing.T, gs *Session) *monitors {
	t.Helper()
	srv := tmux.Server{Path: gs.Socket()}
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	client := tmux.NewClient(srv)
	sup, err := monitor.New(monitor.Config{Server: srv.String(), Tmux: client, Events: watcher.Events(), Rules: eng, Wakes: store,
		Processes: monitor.ProcessTree, Cmdlines: monitor.ProcessCmdlines, Send: client,
		HeartbeatEvery: -1, ErrorGrace: time.Second, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil && err != context.Canceled {
			t.Errorf("monitors: %v", err)
		}
		store.Close()
	})
	m := &monitors{sup: sup}
	m.waitState = func(want rules.State, kind string) api.Session {
		t.Helper()
		deadline := time.Now().Add(40 * time.Second)
		var last api.Session
		for time.Now().Before(deadline) {
			snap, _ := sup.Snapshot(ctx)
			for _, s := range snap.Sessions {
				if s.Pane == gs.Pane {
					last = s
					if s.State == want && s.Kind == kind {
						return s
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("pane never reached %s/%s; last %+v\nscreen:\n%s", want, kind, last, gs.Capture())
		return last
	}
	m.waitWake = func(r api.Reason) api.Wake {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 40*time.Second)
		defer wcancel()
		ev, err := store.Wait(wctx, api.WakeFilter{Reasons: []api.Reason{r}})
		if err != nil {
			t.Fatalf("no %s wake: %v\nscreen:\n%s", r, err, gs.Capture())
		}
		if _, err := store.Ack(ev.ID, "test"); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	return m
}
