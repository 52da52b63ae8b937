package core

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// StartMonitors runs the monitors in this process: it takes the state
// dir's lock (one monitoring process per state dir), opens the wake
// journal, and starts the tmux watcher and the supervisor. The returned
// function stops everything and releases the lock.
func (a *App) StartMonitors(ctx context.Context) (facade.Service, func() error, error) {
	if TestStartMonitors != nil {
		svc, stop, err := TestStartMonitors(a, ctx)
		if err != nil {
			return nil, nil, err
		}
		lm, err := a.Lifecycle(svc)
		if err != nil {
			a.Log.Warn("orchestrators unavailable", "err", err)
		}
		return a.Local(ctx, svc, lm, err), stop, nil
	}
	// A tmux too old to work with is said at once, in its one sentence,
	// not by monitors that never see a pane (a wait that times out).
	if err := a.TmuxServer().CheckVersion(ctx); errors.Is(err, tmux.ErrTooOld) {
		return nil, nil, err
	}
	m, err := a.openMonitors()
	if err != nil {
		return nil, nil, err
	}
	if err := a.buildMonitors(ctx, m); err != nil {
		m.close()
		return nil, nil, err
	}
	svc := a.runMonitors(ctx, m)
	return svc, m.stop, nil
}

// monitors are the parts of running monitors, in the order StartMonitors
// builds them: what the state dir holds (openMonitors), what watches and
// decides (buildMonitors), and the goroutines that run them
// (runMonitors).
type monitors struct {
	a          *App
	lock       *wake.Lock
	store      *wake.Store
	eng        *rules.Engine
	rulesStamp fileStamp
	auditLog   *audit.Log

	tw         *tasks.Watcher
	watcher    *tmux.Watcher
	sup        *monitor.Supervisor
	co         *coach.Coach
	closeCoach func()
	val        *monitor.Validator
	del        *monitor.Delivery

	g      *errgroup.Group
	gctx   context.Context
	cancel context.CancelFunc
}

// openMonitors takes the state dir's lock and opens its wake journal,
// audit log and rules.
func (a *App) openMonitors() (*monitors, error) {
	dir := a.Settings.StateDir
	lock, err := wake.AcquireLock(dir)
	if err != nil {
		if errors.Is(err, wake.ErrLocked) {
			return nil, fmt.Errorf("%w; another system3 is monitoring this state dir but its socket does not answer: stop it, or pass another --state-dir", err)
		}
		return nil, err
	}
	store, warnings, err := wake.Open(wake.Config{Dir: dir})
	if err != nil {
		lock.Release()
		return nil, err
	}
	for _, w := range warnings {
		a.Log.Warn("wake journal", "warning", w.String())
	}
	m := &monitors{a: a, lock: lock, store: store, rulesStamp: stampOf(a.RulesPath()), closeCoach: func() {}}
	if m.eng, err = a.LoadRules(); err != nil {
		m.close()
		return nil, err
	}
	m.auditLog = audit.Open(dir)
	return m, nil
}

// close releases what openMonitors and buildMonitors opened, when the
// monitors do not start.
func (m *monitors) close() {
	m.closeCoach()
	if m.auditLog != nil {
		m.auditLog.Close()
	}
	m.store.Close()
	m.lock.Release()
}

// buildMonitors builds the task watcher, tmux's watcher, the supervisor,
// the coach, the validation monitor and the delivery to the supervisor
// pane.
func (a *App) buildMonitors(ctx context.Context, m *monitors) error {
	m.tw = tasks.NewWatcher(tasks.Config{Root: a.Settings.TasksDir, TodosDir: a.Settings.TodosDir, Logger: a.Log})
	m.watcher = tmux.NewWatcher(a.TmuxServer(), tmux.WatcherOptions{Logger: a.Log})
	// Captures and listings are the client's own connections: the watcher
	// attaches no control client (see tmux.WatcherOptions.Control), and a
	// client with Control set would capture one pane per connection.
	client := tmux.NewClient(a.TmuxServer())
	policy, err := a.Policy()
	if err != nil {
		return err
	}
	// The hook key lets a hook event signed with its session's token in
	// (hooks.LoadKey); without it, process ancestry alone proves events.
	hookKey, err := hooks.LoadKey(a.Settings.StateDir, true)
	if err != nil {
		a.Log.Warn("hook key; hook events must come from a process in their pane", "err", err)
	}
	cfg := a.supervisorConfig(m.eng, m.store, client, watchedProgress(m.tw, a.Settings.TasksDir))
	// What only running monitors have: tmux's events, the task watcher's
	// lists, typing into panes, and what acting on them needs. The coach
	// (opened once the supervisor exists) watches the tool calls the
	// supervisor reads from transcripts.
	cfg.Events = m.watcher.Events()
	cfg.TaskLists = m.tw.Snapshot
	cfg.Send = client
	cfg.OnToolCall = func(c api.ToolCall) {
		if m.co != nil {
			m.co.Observe(c)
		}
	}
	cfg.Audit = m.auditLog
	cfg.HookKey = hookKey
	cfg.Policy = policy
	if m.sup, err = monitor.New(cfg); err != nil {
		return err
	}
	// The coach sends its reminders and raises its wakes through the
	// supervisor, the one raiser of wakes; without its database the
	// monitors still run.
	if co, closeCoach, err := a.OpenCoach(ctx, m.eng.Patterns(), m.sup, m.sup); err != nil {
		a.Log.Warn("behaviour patterns off", "err", err)
	} else {
		m.co, m.closeCoach = co, closeCoach
	}
	if m.val, err = a.validator(m.sup, m.tw); err != nil {
		return err
	}
	m.del, err = a.delivery(m.sup)
	return err
}

// runMonitors starts the monitors' goroutines and returns the one service
// of this process, served on the state dir's socket too.
func (a *App) runMonitors(ctx context.Context, m *monitors) facade.Service {
	runCtx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	m.g, m.gctx = errgroup.WithContext(runCtx)
	g, gctx, sup := m.g, m.gctx, m.sup
	// Task progress and completions count from the task watcher's first
	// read; then one pass over the panes, so the first snapshot a caller
	// takes (and the first wakes) already show everything.
	g.Go(func() error { return m.tw.Run(gctx) })
	select {
	case <-m.tw.Ready():
	case <-gctx.Done():
	}
	sup.Refresh(gctx)
	// Hook events Claude Code sent while no system3 ran wait in the spool.
	spool := hooks.Spool{Path: filepath.Join(a.Settings.StateDir, hooks.SpoolFile)}
	a.replayHooks(gctx, sup, spool)
	g.Go(func() error { return m.watcher.Run(gctx) })
	g.Go(func() error { return m.store.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	taskEvents := m.tw.Subscribe(0)
	g.Go(func() error {
		defer taskEvents.Close()
		return sup.FollowTasks(gctx, taskEvents.C())
	})
	var rulesTo rulesTarget = sup
	if m.co != nil {
		g.Go(func() error { return m.co.Run(gctx) })
		rulesTo = coachedRules{sup, m.co}
		a.coach = m.co
	}
	g.Go(func() error { return a.watchRules(gctx, rulesTo, rulesCheckEvery, m.rulesStamp) })
	if m.val != nil {
		g.Go(func() error { return m.val.Run(gctx) })
	}
	a.useStages(m)
	lm, lmErr := a.runLifecycle(m, m.sup)
	svc := a.Local(ctx, m.sup, lm, lmErr)
	// Serve the monitors to other system3 commands for this state dir, so a
	// second `wait` shares them instead of finding the lock taken. Last, so
	// a command that finds the socket finds everything running.
	if a.serveSocket(m, svc) {
		// Events spooled while the socket was not yet up.
		a.replayHooks(gctx, sup, spool)
	}
	if ls := a.LearnStore(); ls != nil {
		g.Go(func() error { return a.runLearnIdle(gctx, sup, ls) })
	}
	a.Log.Info("monitors started", "server", a.TmuxServer().String(), "state_dir", a.Settings.StateDir)
	return svc
}

// useStages gives the supervisor its hook stages: permission requests
// decided at the hook by the approval policy, reloaded when its files
// change (a file that does not load is shown as the snapshot's problem,
// and the rules in force stay), and the supervisor pane typed its wakes
// and its Stop hook answered.
func (a *App) useStages(m *monitors) {
	approvals := approval.NewWatcher(a.Settings.ConfigPath, a.Log)
	policyProblem := func(problem string) {
		if problem != "" {
			problem = "approval policy: " + problem
		}
		m.sup.SetProblem(monitor.PermissionProblem, problem)
	}
	policyProblem(approvals.Problem())
	m.g.Go(func() error { return approvals.Run(m.gctx, approval.CheckEvery, policyProblem) })
	m.sup.UsePermissions(monitor.NewPermissions(m.sup, approvals.Policy))
	if m.del != nil {
		m.g.Go(func() error { return m.del.Run(m.gctx) })
		m.sup.UseDelivery(m.del)
	}
}

// runLifecycle starts the orchestrators' lifecycle: its records learn
// their agents' session ids, and auto-restore watches for the tmux server
// to come back. Without it, nil and why.
func (a *App) runLifecycle(m *monitors, svc api.Service) (*lifecycle.Manager, error) {
	lm, err := a.Lifecycle(svc)
	if err != nil {
		a.Log.Warn("orchestrators unavailable; records not kept current", "err", err)
		return nil, err
	}
	m.g.Go(func() error { return lm.Run(m.gctx) })
	return lm, nil
}

// serveSocket serves svc on the state dir's socket, and says whether it
// does; when it cannot, SocketErr says why.
func (a *App) serveSocket(m *monitors, svc facade.Service) bool {
	a.socketErr = nil
	ln, err := ipc.Listen(a.SocketPath())
	if err != nil {
		a.socketErr = err
		if !a.Dashboard {
			fmt.Fprintf(a.Stderr, "system3: warning: %v; other system3 commands cannot share these monitors\n", err)
		}
		a.Log.Warn("serve socket", "err", err)
		return false
	}
	srv := ipc.NewServer(ln, svc, a.Log)
	if len(a.RemoteHosts()) > 0 {
		// Clients (status --all-hosts) read the hosts this daemon
		// follows instead of asking each over ssh.
		srv.Hosts = func(ctx context.Context) (any, error) { return a.HostSet().Docs(ctx), nil }
	}
	m.g.Go(func() error { return srv.Run(m.gctx) })
	return true
}

// stop stops the monitors started by runMonitors and releases the state
// dir.
func (m *monitors) stop() error {
	m.cancel()
	err := m.g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	m.a.coach = nil
	m.closeCoach()
	if cerr := m.store.Close(); err == nil {
		err = cerr
	}
	m.auditLog.Close()
	if rerr := m.lock.Release(); err == nil {
		err = rerr
	}
	m.a.Log.Info("monitors stopped")
	return err
}

// supervisorConfig is the supervisor's Config from the app's settings,
// the one every caller classifies panes with, so status classifying once
// says what running monitors say: how a pane's processes are read (below
// its process, who holds a shell's terminal, command lines), an agent's
// version and what its process tells, links, prices, budgets and the
// monitor's timings. progress looks task lists up. The monitors add what
// only they have (tmux's events, sending, the audit, hooks, the policy).
func (a *App) supervisorConfig(eng *rules.Engine, wakes *wake.Store, client *tmux.Client, progress func(listID string) (api.TaskProgress, bool)) monitor.Config {
	m := a.Settings.File.Monitor
	return monitor.Config{
		Server:           a.TmuxServer().String(),
		Tmux:             client,
		Rules:            eng,
		Wakes:            wakes,
		Processes:        monitor.ProcessTree,
		Foreground:       monitor.PaneForeground,
		RawTerminal:      monitor.TerminalRaw,
		AgentVersion:     monitor.AgentVersion,
		Cmdlines:         monitor.ProcessCmdlines,
		Probe:            ProbeAgent,
		Zone:             monitor.PaneZone,
		TaskProgress:     progress,
		LinksPath:        filepath.Join(a.Settings.StateDir, monitor.LinksFile),
		StatesPath:       filepath.Join(a.Settings.StateDir, monitor.StatesFile),
		Logger:           a.Log,
		UnmatchedAfter:   m.UnmatchedAfter,
		IdleAfter:        m.IdleAfter,
		HeartbeatEvery:   time.Duration(m.HeartbeatEvery),
		ErrorGrace:       m.ErrorGrace,
		LoopThreshold:    m.LoopThreshold,
		LoopWindow:       m.LoopWindow,
		SummaryEvery:     m.SummaryEvery,
		ResumeAfterLimit: m.ResumeAfterLimit,
		Prices:           PriceTable(a.Settings.File.Usage).Lookup,
		Budget:           a.Settings.File.Usage.BudgetFor,
	}
}

// replayHooks feeds the hook spool to the supervisor.
func (a *App) replayHooks(ctx context.Context, sup *monitor.Supervisor, spool hooks.Spool) {
	n, err := sup.ReplaySpool(ctx, spool)
	if err != nil {
		a.Log.Warn("hook spool", "path", spool.Path, "err", err)
	}
	if n > 0 {
		a.Log.Info("hook spool replayed", "events", n)
	}
}

// validator returns the validation monitor, fed by the task watcher, when
// the config has validation rules, else nil.
func (a *App) validator(wakes api.WakeRaiser, tw *tasks.Watcher) (*monitor.Validator, error) {
	vs := a.Settings.File.Validation
	if len(vs) == 0 {
		return nil, nil
	}
	rules := make([]monitor.ValidationRule, len(vs))
	for i, v := range vs {
		rules[i] = monitor.ValidationRule{List: v.List, Command: v.Command, Dir: config.ExpandHome(v.Dir, a.Settings.Home), Timeout: v.Timeout}
	}
	val, err := monitor.NewValidator(rules, tw.Subscribe(0).C(), wakes, nil, a.Log)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	return val, nil
}

// delivery returns the delivery of wakes to the supervisor pane the config
// names (supervisor.session), else nil.
func (a *App) delivery(sup *monitor.Supervisor) (*monitor.Delivery, error) {
	c := a.Settings.File.Supervisor
	if strings.TrimSpace(c.Session) == "" {
		return nil, nil
	}
	reasons := make([]api.Reason, len(c.Reasons))
	for i, r := range c.Reasons {
		reasons[i] = api.Reason(r)
	}
	d, err := monitor.NewDelivery(sup, monitor.DeliveryConfig{
		Target:      api.Target{Session: strings.TrimSpace(c.Session)},
		Reasons:     reasons,
		Sessions:    c.Sessions,
		MinInterval: c.MinInterval,
		CursorPath:  monitor.DeliveryCursorPath(a.Settings.StateDir),
		Logger:      a.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	a.Log.Info("supervisor pane", "session", c.Session, "reasons", c.Reasons, "sessions", c.Sessions, "min_interval", c.MinInterval)
	return d, nil
}

// ProbeAgent reads what a Claude Code pane's process tells: its transcript
// and task list.
func ProbeAgent(p tmux.Pane, how *agent.Probe) monitor.AgentInfo {
	return monitor.ProbeAgent(how, p.PID, p.Path)
}

// watchedProgress looks a task list's progress up in the watcher's model.
func watchedProgress(tw *tasks.Watcher, root string) func(string) (api.TaskProgress, bool) {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return func(id string) (api.TaskProgress, bool) {
		l, ok := tw.Lookup(filepath.Join(root, id))
		return progressOf(l), ok
	}
}

// PriceTable is the config's prices as the monitor reads them.
func PriceTable(u config.Usage) api.PriceTable {
	pt := make(api.PriceTable, len(u.Prices))
	for i, p := range u.Prices {
		pt[i] = api.PriceRule{Model: p.Model, Price: api.Price{Input: p.Input, Output: p.Output, CacheWrite: p.CacheWrite, CacheRead: p.CacheRead}}
	}
	return pt
}
