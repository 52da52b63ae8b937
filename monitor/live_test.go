package monitor

import (
	"context"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// liveMonitors are real monitors (a tmux watcher and a Supervisor with the
// built-in rules, a wake store, an audit log) on the private tmux server
// of a real agent CLI's test session, watching its pane.
type liveMonitors struct {
	t       *testing.T
	ctx     context.Context
	sup     *Supervisor
	store   *wake.Store
	pane    string
	screen  func() string // the pane's screen, for failures
	timeout time.Duration // how long each wait may take
}

// watchLive starts real monitors on the tmux server at socket, for the
// agent in pane, until the test ends. mod, when set, changes the
// Supervisor's Config first.
func watchLive(t *testing.T, socket, pane string, screen func() string, timeout time.Duration, mod func(*Config)) *liveMonitors {
	t.Helper()
	srv := tmux.Server{Path: socket}
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
	cfg := Config{Server: srv.String(), Tmux: client, Send: client, Events: watcher.Events(), Rules: eng, Wakes: store,
		Audit: audit.Open(t.TempDir()), Processes: ProcessTree, HeartbeatEvery: -1, ErrorGrace: time.Second, Tick: 100 * time.Millisecond,
		Probe: func(p tmux.Pane, how *agent.Probe) AgentInfo { return ProbeAgent(how, p.PID, p.Path) }}
	if mod != nil {
		mod(&cfg)
	}
	sup, err := New(cfg)
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
	return &liveMonitors{t: t, ctx: ctx, sup: sup, store: store, pane: pane, screen: screen, timeout: timeout}
}

// wait polls the pane's session until ok accepts it.
func (m *liveMonitors) wait(what string, ok func(api.Session) bool) api.Session {
	m.t.Helper()
	return testkit.WaitForValue(m.t, m.timeout, "the pane "+what, func() (api.Session, bool) {
		s, found := paneSession(m.sup, m.pane)
		return s, found && ok(s)
	}, func() string { return "screen:\n" + m.screen() })
}

// paneSession is pane's session in sup's snapshot, if it is there.
func paneSession(sup *Supervisor, pane string) (api.Session, bool) {
	snap, _ := sup.Snapshot(context.Background())
	for _, s := range snap.Sessions {
		if s.Pane == pane {
			return s, true
		}
	}
	return api.Session{}, false
}

// waitState waits until the pane is in state want of kind kind.
func (m *liveMonitors) waitState(want api.State, kind string) api.Session {
	m.t.Helper()
	return m.wait(string(want)+"/"+kind, func(s api.Session) bool { return s.State == want && s.Kind == kind })
}

// waitRule waits until the rule named rule classifies the pane.
func (m *liveMonitors) waitRule(rule string) api.Session {
	m.t.Helper()
	return m.wait("rule "+rule, func(s api.Session) bool { return s.Evidence.Rule == rule })
}

// waitWake waits for an unacknowledged wake of reason r and acknowledges it.
func (m *liveMonitors) waitWake(r api.Reason) api.Wake {
	m.t.Helper()
	wctx, wcancel := context.WithTimeout(m.ctx, m.timeout)
	defer wcancel()
	ev, err := m.store.Wait(wctx, api.WakeFilter{Reasons: []api.Reason{r}})
	if err != nil {
		m.t.Fatalf("no %s wake: %v\nscreen:\n%s", r, err, m.screen())
	}
	if _, err := m.store.Ack(ev.ID, "test"); err != nil {
		m.t.Fatal(err)
	}
	return ev
}
