package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

type logFunc func(format string, args ...any)

// sleepCtx sleeps d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// detectionsOf matches arrivals (a session and when a caller got its
// wake) with the prompts drawn in [from, to]: each prompt's latency is its
// first arrival; prompts with none are missed.
func detectionsOf(w *Workload, from, to time.Time, arrivals []arrival) (lat, raised []time.Duration, prompts, missed int) {
	type key struct {
		session string
		mark    time.Time
	}
	first := map[key]arrival{}
	for _, a := range arrivals {
		m, ok := w.promptBefore(a.session, a.at)
		if !ok || m.Before(from) || m.After(to) {
			continue
		}
		k := key{a.session, m}
		if prev, ok := first[k]; !ok || a.at.Before(prev.at) {
			first[k] = a
		}
	}
	for _, p := range w.byRole(RolePrompt) {
		for _, m := range w.marks(p.Session) {
			if m.Before(from) || m.After(to) {
				continue
			}
			prompts++
			a, ok := first[key{p.Session, m}]
			if !ok {
				missed++
				continue
			}
			lat = append(lat, a.at.Sub(m))
			if !a.raised.IsZero() {
				raised = append(raised, a.raised.Sub(m))
			}
		}
	}
	return lat, raised, prompts, missed
}

func countRoles(w *Workload, s *Size) {
	s.Streaming, s.Prompting, s.Idle = 0, 0, 0
	for _, p := range w.Panes {
		switch p.Role {
		case RoleStream:
			s.Streaming++
		case RolePrompt:
			s.Streaming++
			s.Prompting++
		case RoleIdle:
			s.Idle++
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// readyTimeout is how long the supervisor may take to classify n panes.
func readyTimeout(n int) time.Duration { return 30*time.Second + time.Duration(n)*200*time.Millisecond }

// measureSystem3 measures system3 at one size: while the workload runs
// (CPU, memory, detection, a new session, and with load the MCP load),
// then idle.
func measureSystem3(ctx context.Context, cfg Config, s *Size, r *Report, load bool, logf logFunc) error {
	if err := measureBusy(ctx, cfg, s, r, load, logf); err != nil {
		return err
	}
	logf("system3, %d panes: idle CPU", s.Panes)
	return measureIdle(ctx, cfg, s)
}

// measureBusy measures a serve watching the workload while its panes
// stream and prompt.
func measureBusy(ctx context.Context, cfg Config, s *Size, r *Report, load bool, logf logFunc) error {
	n := s.Panes
	logf("system3, %d panes: starting the workload", n)
	w, err := startWorkload(ctx, cfg.Exe, n, cfg.busyAt(n), cfg.PromptEvery)
	if err != nil {
		return err
	}
	defer w.Close()
	countRoles(w, s)
	srv, err := startServe(ctx, cfg.Exe, w)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := srv.waitSessions(ctx, w, readyTimeout(n)); err != nil {
		return err
	}
	if err := srv.waitWatching(ctx, w, readyTimeout(n)); err != nil {
		return err
	}
	svc, err := srv.dial(ctx)
	if err != nil {
		return err
	}
	defer svc.Close()

	t := newTracker()
	wctx, stopWaiters := context.WithCancel(ctx)
	defer stopWaiters()
	errs := make(chan error, n+1)
	var wg sync.WaitGroup
	for _, p := range w.byRole(RolePrompt) {
		wg.Add(1)
		go func() { defer wg.Done(); srv.cliWaiter(wctx, p.Session, t, svc, errs) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); srv.mcpWaiter(wctx, t, errs) }()
	stop := func() { stopWaiters(); wg.Wait() }
	defer stop()

	cpu, tcpu, err := settleAndMeter(ctx, w, srv.pid())
	if err != nil {
		return err
	}
	from := time.Now()
	logf("system3, %d panes: measuring for %v", n, cfg.Window)
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(cfg.Window):
	}
	to := time.Now()
	if s.CPU.System3, s.CPUServe, err = cpu.split(); err != nil {
		return err
	}
	if s.TmuxCPU.System3, s.TmuxOwn.System3, err = tcpu.split(); err != nil {
		return err
	}
	rss, err := peakRSS(srv.pid())
	if err != nil {
		return err
	}
	s.RSS.System3 = mib(rss)
	// Let the last prompts of the window reach both callers.
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	stop()
	select {
	case err := <-errs:
		return err
	default:
	}
	t.mu.Lock()
	cli, mcpA := t.cli, t.mcp
	t.mu.Unlock()
	lat, _, prompts, missed := detectionsOf(w, from, to, cli)
	s.DetectWait, s.MissedWait, s.Prompts.System3 = summarize(lat), missed, prompts
	lat, raised, _, missed := detectionsOf(w, from, to, mcpA)
	s.DetectMCP, s.DetectRaised, s.MissedMCP = summarize(lat), summarize(raised), missed

	logf("system3, %d panes: what it adds to the tmux server, serve running and stopped in turns", n)
	if s.TmuxPaired.System3, err = pairTmux(ctx, cfg, w, srv.pid()); err != nil {
		return err
	}

	logf("system3, %d panes: a new session", n)
	if s.NewSessionMS, err = newSessionSeen(ctx, w, svc); err != nil {
		return err
	}

	if load {
		if err := system3Load(ctx, cfg, srv, w, svc, s, r, logf); err != nil {
			return err
		}
	}
	if err := srv.stop(); err != nil {
		return err
	}
	w.Close()
	return nil
}

// measureIdle measures a serve watching the workload's panes at rest.
func measureIdle(ctx context.Context, cfg Config, s *Size) error {
	n := s.Panes
	idle, err := startWorkload(ctx, cfg.Exe, n, 0, 0)
	if err != nil {
		return err
	}
	defer idle.Close()
	srv2, err := startServe(ctx, cfg.Exe, idle)
	if err != nil {
		return err
	}
	defer srv2.stop()
	if err := srv2.waitSessions(ctx, idle, readyTimeout(n)); err != nil {
		return err
	}
	if err := srv2.waitWatching(ctx, idle, readyTimeout(n)); err != nil {
		return err
	}
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return err
	}
	cpu, err := startCPU(srv2.pid())
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, cfg.Window/2); err != nil {
		return err
	}
	s.CPUIdle.System3, err = cpu.percent()
	return err
}

// system3Load measures MCP status under concurrent clients and guidance
// delivery on a running serve.
func system3Load(ctx context.Context, cfg Config, srv *serveProc, w *Workload, svc *ipc.Client, s *Size, r *Report, logf logFunc) error {
	logf("system3, %d panes: serve without calls, for %v", s.Panes, cfg.StatusFor)
	bg, err := startCPU(srv.pid())
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, cfg.StatusFor); err != nil {
		return err
	}
	without, err := bg.percent()
	if err != nil {
		return err
	}
	for _, n := range cfg.Clients {
		logf("system3, %d panes: MCP status, %d clients", s.Panes, n)
		clients := make([]*mcpClient, 0, n)
		for i := range n {
			c, err := dialMCP(ctx, srv.url, fmt.Sprintf("bench-status-%d", i))
			if err != nil {
				for _, c := range clients {
					c.Close()
				}
				return err
			}
			clients = append(clients, c)
		}
		status := func(ctx context.Context, i int) error {
			var out map[string]any
			return clients[i].call(ctx, "status", nil, &out)
		}
		cpu, err := startCPU(srv.pid())
		if err != nil {
			return err
		}
		lat, rate, bad := statusLoad(ctx, n, cfg.StatusFor, 0, status)
		pct, err := cpu.percent()
		if err != nil {
			return err
		}
		paced, _, bad2 := statusLoad(ctx, n, cfg.StatusFor, cfg.StatusEvery, status)
		for _, c := range clients {
			c.Close()
		}
		sr := statusEntry(r, n)
		sr.ServeCPUWithoutCalls = without
		if rate > 0 {
			sr.ServeCPUPerCall = 10 * pct / rate // (pct/100 s of CPU per s) / (calls per s), in ms
			sr.ServeCPUPerCallNet = 10 * max(0, pct-without) / rate
		}
		sr.Latency.System3, sr.PerSec.System3, sr.Errors.System3 = lat, rate, bad+bad2
		sr.Paced.System3 = paced
	}
	rss, err := peakRSS(srv.pid())
	if err != nil {
		return err
	}
	s.RSSAfterLoad = mib(rss)

	logf("system3, %d panes: guidance", s.Panes)
	c, err := dialMCP(ctx, srv.url, "bench-guidance")
	if err != nil {
		return err
	}
	defer c.Close()
	msg := guidanceMessage()
	idle := w.byRole(RoleIdle)
	var lat []time.Duration
	g := Guidance{Bytes: len(msg)}
	for i := range cfg.Guidance {
		p := idle[i%len(idle)]
		if i >= len(idle) {
			// The pane answered the last message: wait for its prompt.
			if err := waitState(ctx, svc, p.ID, api.Idle, 30*time.Second); err != nil {
				return err
			}
		}
		var out struct {
			Delivered bool `json:"delivered"`
			Verified  bool `json:"verified"`
		}
		start := time.Now()
		err := c.call(ctx, "inject_guidance", map[string]any{"session": p.Session, "message": msg}, &out)
		d := time.Since(start)
		g.Sent++
		if err != nil {
			logf("guidance to %s: %v", p.Session, err)
			continue
		}
		lat = append(lat, d)
		if out.Delivered && out.Verified {
			g.Verified++
		}
	}
	g.Latency = summarize(lat)
	r.Guidance.System3 = g
	return nil
}

// statusEntry is the report's entry for n status clients.
func statusEntry(r *Report, n int) *StatusResult {
	for i := range r.Status {
		if r.Status[i].Clients == n {
			return &r.Status[i]
		}
	}
	r.Status = append(r.Status, StatusResult{Clients: n})
	return &r.Status[len(r.Status)-1]
}

// waitState waits until system3 sees pane in state.
func waitState(ctx context.Context, svc *ipc.Client, pane string, state api.State, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		snap, err := svc.Snapshot(ctx)
		if err != nil {
			return err
		}
		for _, x := range snap.Sessions {
			if x.Pane == pane && x.State == state {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pane %s not %s within %v", pane, state, timeout)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func measureBaseline(ctx context.Context, cfg Config, s *Size, r *Report, load bool, logf logFunc) error {
	n := s.Panes
	logf("baseline, %d panes: starting the workload", n)
	w, err := startWorkload(ctx, cfg.Exe, n, cfg.busyAt(n), cfg.PromptEvery)
	if err != nil {
		return err
	}
	defer w.Close()
	p, err := startPoller(cfg.Exe, w)
	if err != nil {
		return err
	}
	defer p.stop()
	if err := p.waitClassified(ctx, n, readyTimeout(n)); err != nil {
		return err
	}
	cpu, tcpu, err := settleAndMeter(ctx, w, p.pid())
	if err != nil {
		return err
	}
	from := time.Now()
	logf("baseline, %d panes: measuring for %v", n, cfg.Window)
	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return err
	}
	to := time.Now()
	if s.CPU.Baseline, err = cpu.percent(); err != nil {
		return err
	}
	if s.TmuxCPU.Baseline, s.TmuxOwn.Baseline, err = tcpu.split(); err != nil {
		return err
	}
	rss, err := peakRSS(p.pid())
	if err != nil {
		return err
	}
	s.RSS.Baseline = mib(rss)
	// Let the poll after the window see the last prompts.
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return err
	}
	var arr []arrival
	for _, d := range p.detections(from) {
		arr = append(arr, arrival{session: d.Session, at: d.Time})
	}
	lat, _, prompts, missed := detectionsOf(w, from, to, arr)
	s.DetectBaseline, s.MissedBaseline, s.Prompts.Baseline = summarize(lat), missed, prompts
	logf("baseline, %d panes: what it adds to the tmux server, running and stopped in turns", n)
	if s.TmuxPaired.Baseline, err = pairTmux(ctx, cfg, w, p.pid()); err != nil {
		return err
	}
	p.stop()

	if load {
		if err := baselineLoad(ctx, cfg, w, r, logf); err != nil {
			return err
		}
	}
	w.Close()

	logf("baseline, %d panes: idle CPU", n)
	idle, err := startWorkload(ctx, cfg.Exe, n, 0, 0)
	if err != nil {
		return err
	}
	defer idle.Close()
	p2, err := startPoller(cfg.Exe, idle)
	if err != nil {
		return err
	}
	defer p2.stop()
	if err := p2.waitClassified(ctx, n, readyTimeout(n)); err != nil {
		return err
	}
	if err := sleepCtx(ctx, 3*time.Second); err != nil {
		return err
	}
	cpu, err = startCPU(p2.pid())
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, cfg.Window/2); err != nil {
		return err
	}
	s.CPUIdle.Baseline, err = cpu.percent()
	return err
}

// baselineLoad measures the naive status (capture every pane on request)
// and naive guidance on the baseline's workload.
func baselineLoad(ctx context.Context, cfg Config, w *Workload, r *Report, logf logFunc) error {
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		return err
	}
	c := naiveClient(w.Server)
	for _, n := range cfg.Clients {
		logf("baseline, %d panes: status, %d clients", len(w.Panes), n)
		status := func(ctx context.Context, _ int) error { return naiveStatus(ctx, c, eng) }
		lat, rate, bad := statusLoad(ctx, n, cfg.StatusFor, 0, status)
		paced, _, bad2 := statusLoad(ctx, n, cfg.StatusFor, cfg.StatusEvery, status)
		sr := statusEntry(r, n)
		sr.Latency.Baseline, sr.PerSec.Baseline, sr.Errors.Baseline = lat, rate, bad+bad2
		sr.Paced.Baseline = paced
	}
	logf("baseline, %d panes: guidance", len(w.Panes))
	msg := guidanceMessage()
	idle := w.byRole(RoleIdle)
	var lat []time.Duration
	g := Guidance{Bytes: len(msg)}
	for i := range cfg.Guidance {
		p := idle[i%len(idle)]
		if i >= len(idle) {
			if err := naiveWaitIdle(ctx, c, eng, p.ID, 30*time.Second); err != nil {
				return err
			}
		}
		start := time.Now()
		ok, err := naiveGuidance(ctx, c, eng, p.ID, msg)
		g.Sent++
		if err != nil {
			logf("baseline guidance to %s: %v", p.Session, err)
			continue
		}
		lat = append(lat, time.Since(start))
		if ok {
			g.Verified++
		}
	}
	g.Latency = summarize(lat)
	r.Guidance.Baseline = g
	return nil
}

// naiveWaitIdle polls a pane until it is idle again.
func naiveWaitIdle(ctx context.Context, c *tmux.Client, eng *rules.Engine, pane string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		text, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
		if err != nil {
			return err
		}
		if eng.Classify(rules.Input{Screen: text}).State == api.Idle {
			return nil
		}
		if err := sleepCtx(ctx, PollEvery); err != nil {
			return err
		}
	}
	return fmt.Errorf("pane %s not idle within %v", pane, timeout)
}

// settleAndMeter lets a supervisor settle for two seconds after it has
// seen every pane, then starts measuring its CPU and the tmux server's.
func settleAndMeter(ctx context.Context, w *Workload, pid int) (supervisor, tmuxServer *cpuMeter, err error) {
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return nil, nil, err
	}
	tmuxPID, err := w.serverPID(ctx)
	if err != nil {
		return nil, nil, err
	}
	if supervisor, err = startCPU(pid); err != nil {
		return nil, nil, err
	}
	if tmuxServer, err = startCPU(tmuxPID); err != nil {
		return nil, nil, err
	}
	return supervisor, tmuxServer, nil
}

// newSessionSeen creates a session on the workload's server and returns
// how long, in milliseconds, serve's snapshot takes to list it.
func newSessionSeen(ctx context.Context, w *Workload, svc *ipc.Client) (float64, error) {
	const name = "bench-new-session"
	c := tmux.NewClient(w.Server)
	if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: name, Width: 100, Height: 30, Command: []string{"sleep", "3600"}}); err != nil {
		return 0, fmt.Errorf("new session: %w", err)
	}
	start := time.Now()
	defer c.KillSession(context.WithoutCancel(ctx), name)
	deadline := start.Add(30 * time.Second)
	for {
		snap, err := svc.Snapshot(ctx)
		if err != nil {
			return 0, err
		}
		for _, ss := range snap.Sessions {
			if ss.Session == name {
				return float64(time.Since(start).Microseconds()) / 1000, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("serve did not list a new session within 30s")
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
}
