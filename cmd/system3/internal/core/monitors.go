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
	dir := a.Settings.StateDir
	lock, err := wake.AcquireLock(dir)
	if err != nil {
		if errors.Is(err, wake.ErrLocked) {
			return nil, nil, fmt.Errorf("%w; another system3 is monitoring this state dir but its socket does not answer: stop it, or pass another --state-dir", err)
		}
		return nil, nil, err
	}
	store, warnings, err := wake.Open(wake.Config{Dir: dir})
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	for _, w := range warnings {
		a.Log.Warn("wake journal", "warning", w.String())
	}
	fail := func(err error) (facade.Service, func() error, error) {
		store.Close()
		lock.Release()
		return nil, nil, err
	}
	rulesStamp := stampOf(a.RulesPath())
	eng, err := a.LoadRules()
	if err != nil {
		return fail(err)
	}

	tw := tasks.NewWatcher(tasks.Config{Root: a.Settings.TasksDir, TodosDir: a.Settings.TodosDir, Logger: a.Log})
	srv := a.TmuxServer()
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{Logger: a.Log})
	// Captures and listings are the client's own connections: the watcher
	// attaches no control client (see tmux.WatcherOptions.Control), and a
	// client with Control set would capture one pane per connection.
	client := tmux.NewClient(srv)
	// The coach (opened once the supervisor exists) watches the tool
	// calls the supervisor reads from transcripts.
	var co *coach.Coach
	onToolCall := func(c api.ToolCall) {
		if co != nil {
			co.Observe(c)
		}
	}
	policy, err := a.Policy()
	if err != nil {
		return fail(err)
	}
	auditLog := audit.Open(dir)
	// The hook key lets a hook event signed with its session's token in
	// (hooks.LoadKey); without it, process ancestry alone proves events.
	hookKey, err := hooks.LoadKey(dir, true)
	if err != nil {
		a.Log.Warn("hook key; hook events must come from a process in their pane", "err", err)
	}
	cfg := a.supervisorConfig(eng, store, client, watchedProgress(tw, a.Settings.TasksDir))
	// What only running monitors have: tmux's events, the task watcher's
	// lists, typing into panes, and what acting on them needs.
	cfg.Events = watcher.Events()
	cfg.TaskLists = tw.Snapshot
	cfg.Send = client
	cfg.OnToolCall = onToolCall
	cfg.Audit = auditLog
	cfg.HookKey = hookKey
	cfg.Policy = policy
	sup, err := monitor.New(cfg)
	if err != nil {
		return fail(err)
	}
	// The coach sends its reminders and raises its wakes through the
	// supervisor, the one raiser of wakes; without its database the
	// monitors still run.
	co, closeCoach, err := a.OpenCoach(ctx, eng.Patterns(), sup, sup)
	if err != nil {
		a.Log.Warn("behaviour patterns off", "err", err)
		co, closeCoach = nil, func() {}
	}
	val, err := a.validator(sup, tw)
	if err != nil {
		closeCoach()
		return fail(err)
	}
	del, err := a.delivery(sup)
	if err != nil {
		closeCoach()
		return fail(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(runCtx)
	// Task progress and completions count from the task watcher's first
	// read; then one pass over the panes, so the first snapshot a caller
	// takes (and the first wakes) already show everything.
	g.Go(func() error { return tw.Run(gctx) })
	select {
	case <-tw.Ready():
	case <-gctx.Done():
	}
	sup.Refresh(gctx)
	// Hook events Claude Code sent while no system3 ran wait in the spool.
	spool := hooks.Spool{Path: filepath.Join(dir, hooks.SpoolFile)}
	a.replayHooks(gctx, sup, spool)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return store.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	taskEvents := tw.Subscribe(0)
	g.Go(func() error {
		defer taskEvents.Close()
		return sup.FollowTasks(gctx, taskEvents.C())
	})
	var rulesTo rulesTarget = sup
	if co != nil {
		g.Go(func() error { return co.Run(gctx) })
		rulesTo = coachedRules{sup, co}
		a.coach = co
	}
	g.Go(func() error { return a.watchRules(gctx, rulesTo, rulesCheckEvery, rulesStamp) })
	if val != nil {
		g.Go(func() error { return val.Run(gctx) })
	}
	// Permission requests are decided at the hook by the approval policy,
	// reloaded when its files change; a file that does not load is shown
	// as the snapshot's problem, and the rules in force stay.
	approvals := approval.NewWatcher(a.Settings.ConfigPath, a.Log)
	policyProblem := func(problem string) {
		if problem != "" {
			problem = "approval policy: " + problem
		}
		sup.SetProblem(monitor.PermissionProblem, problem)
	}
	policyProblem(approvals.Problem())
	g.Go(func() error { return approvals.Run(gctx, approval.CheckEvery, policyProblem) })
	served := monitor.NewPermissions(sup, approvals.Policy).Service(sup)
	// The supervisor pane is typed its wakes, and its Stop hook answered.
	if del != nil {
		g.Go(func() error { return del.Run(gctx) })
		served = del.Service(served)
	}
	// The orchestrator records learn their agents' session ids, and
	// auto-restore watches for the tmux server to come back.
	lm, lmErr := a.Lifecycle(served)
	if lmErr != nil {
		a.Log.Warn("orchestrators unavailable; records not kept current", "err", lmErr)
		lm = nil
	} else {
		g.Go(func() error { return lm.Run(gctx) })
	}
	// The one service of this process, served on the socket too.
	svc := a.Local(ctx, served, lm, lmErr)
	// Serve the monitors to other system3 commands for this state dir, so a
	// second `wait` shares them instead of finding the lock taken. Last, so
	// a command that finds the socket finds everything running.
	a.socketErr = nil
	if ln, err := ipc.Listen(a.SocketPath()); err != nil {
		a.socketErr = err
		if !a.Dashboard {
			fmt.Fprintf(a.Stderr, "system3: warning: %v; other system3 commands cannot share these monitors\n", err)
		}
		a.Log.Warn("serve socket", "err", err)
	} else {
		srv := ipc.NewServer(ln, svc, a.Log)
		if len(a.RemoteHosts()) > 0 {
			// Clients (status --all-hosts) read the hosts this daemon
			// follows instead of asking each over ssh.
			srv.Hosts = func(ctx context.Context) (any, error) { return a.HostSet().Docs(ctx), nil }
		}
		g.Go(func() error { return srv.Run(gctx) })
		// Events spooled while the socket was not yet up.
		a.replayHooks(gctx, sup, spool)
	}
	if ls := a.LearnStore(); ls != nil {
		g.Go(func() error { return a.runLearnIdle(gctx, sup, ls) })
	}
	a.Log.Info("monitors started", "server", srv.String(), "state_dir", dir)

	stop := func() error {
		cancel()
		err := g.Wait()
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		a.coach = nil
		closeCoach()
		if cerr := store.Close(); err == nil {
			err = cerr
		}
		auditLog.Close()
		if rerr := lock.Release(); err == nil {
			err = rerr
		}
		a.Log.Info("monitors stopped")
		return err
	}
	return svc, stop, nil
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
