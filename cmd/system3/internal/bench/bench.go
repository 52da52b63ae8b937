// Package bench is system3's performance harness: it starts a private
// tmux server with fake agents (streaming, idle, prompting at random
// times), runs `system3 serve` on it as its own process and measures
// detection latency through `system3 wait` and MCP wait_for_wake, CPU and
// peak memory, MCP status latency under concurrent clients, verified
// guidance delivery and classifier throughput; then it runs the same
// workload under a naive baseline that forks `tmux capture-pane` for
// every pane every 500 ms, and reports each figure with its ratio to the
// baseline, and under a naive bash loop doing the same captures, whose
// cost is what system3's whole cost is measured against (the acceptance
// figure). See docs/performance.md.
package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// Config says what to measure.
type Config struct {
	// Exe is the system3 binary to run (serve, wait, fake-agent, bench poll).
	Exe string
	// Panes are the workload sizes to measure (default 10, 50, 200).
	Panes []int
	// Window is how long CPU is measured and prompts are collected at each
	// size (default 30s); the idle CPU window is half as long.
	Window time.Duration
	// Busy is the share of panes printing output (default 0.5); every
	// other busy pane also stops on permission prompts.
	Busy float64
	// BusyPanes, when set, is how many panes print output at every size
	// (all of them at a smaller size), in place of the share Busy: the
	// same streaming load beside more and more idle agents.
	BusyPanes int
	// PromptEvery is how often, on average, a prompting agent shows a
	// permission prompt (default 4s).
	PromptEvery time.Duration
	// LoadPanes is the size at which MCP status and guidance are measured
	// (default: 50 when measured, else the first size).
	LoadPanes int
	// Clients are the numbers of concurrent MCP status clients (default 1,
	// 10, 100), each calling status for StatusFor (default 5s).
	Clients   []int
	StatusFor time.Duration
	// StatusEvery paces each client in a second round of the status load:
	// one call per StatusEvery (default 1s).
	StatusEvery time.Duration
	// Guidance is how many 4 KB messages are delivered (default 10).
	Guidance int
	// NoBaseline skips the naive baselines: the polling process and the
	// bash loop.
	NoBaseline bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// busyAt is the share of n panes that print output.
func (c Config) busyAt(n int) float64 {
	if c.BusyPanes > 0 && n > 0 {
		return float64(min(c.BusyPanes, n)) / float64(n)
	}
	return c.Busy
}

func (c *Config) defaults() {
	if len(c.Panes) == 0 {
		c.Panes = []int{10, 50, 200}
	}
	if c.Window <= 0 {
		c.Window = 30 * time.Second
	}
	if c.Busy <= 0 {
		c.Busy = 0.5
	}
	if c.PromptEvery <= 0 {
		c.PromptEvery = 4 * time.Second
	}
	if c.LoadPanes <= 0 {
		c.LoadPanes = c.Panes[0]
		for _, n := range c.Panes {
			if n == 50 {
				c.LoadPanes = 50
			}
		}
	}
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 10, 100}
	}
	if c.StatusFor <= 0 {
		c.StatusFor = 5 * time.Second
	}
	if c.StatusEvery <= 0 {
		c.StatusEvery = time.Second
	}
	if c.Guidance <= 0 {
		c.Guidance = 10
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Report is everything one run measured.
type Report struct {
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	// StatusEvery is the paced status clients' interval.
	StatusEvery string `json:"status_every"`
	Duration    string `json:"duration"`
	Window      string `json:"window"`
	// Busy is the share of panes printing output; BusyPanes, when set,
	// their number at every size instead.
	Busy      float64 `json:"busy"`
	BusyPanes int     `json:"busy_panes,omitempty"`
	// PromptEvery is the prompting agents' mean interval between prompts.
	PromptEvery string `json:"prompt_every"`
	Sizes       []Size `json:"sizes"`
	// Status and Guidance were measured at LoadPanes panes.
	LoadPanes int            `json:"load_panes"`
	Status    []StatusResult `json:"status"`
	Guidance  Pair[Guidance] `json:"guidance"`
	Classify  Classify       `json:"classify"`
}

// Machine describes where the figures were taken.
type Machine struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Memory string `json:"memory"`
	Go     string `json:"go"`
	Tmux   string `json:"tmux"`
	Load   string `json:"load_before"` // /proc/loadavg when the run started
}

// Pair is a figure for system3 and for the baseline.
type Pair[T any] struct {
	System3  T `json:"system3"`
	Baseline T `json:"baseline"`
}

// Size is what was measured with one number of panes.
type Size struct {
	Panes     int `json:"panes"`
	Streaming int `json:"streaming"` // panes printing 20 lines a second (prompting ones included)
	Prompting int `json:"prompting"`
	Idle      int `json:"idle"`
	// Detection: prompt drawn → wake printed by `system3 wait`, and →
	// returned by MCP wait_for_wake; the baseline's is prompt drawn →
	// seen by its poll.
	DetectWait     Latencies `json:"detect_wait"`
	DetectMCP      Latencies `json:"detect_mcp"`
	DetectRaised   Latencies `json:"detect_raised"` // prompt drawn → wake journaled (the store's time)
	DetectBaseline Latencies `json:"detect_baseline"`
	// Prompts drawn during the window, and those no caller got a wake for.
	Prompts        Pair[int] `json:"prompts"`
	MissedWait     int       `json:"missed_wait"`
	MissedMCP      int       `json:"missed_mcp"`
	MissedBaseline int       `json:"missed_baseline"`
	// CPU in percent of one core over the window (supervisor process tree),
	// with the workload streaming and with every pane idle.
	CPU Pair[float64] `json:"cpu_pct"`
	// CPUServe is the part of system3's streaming CPU used by the serve
	// process itself, with the tmux commands it forked and reaped; the
	// rest is tmux clients still running when measured.
	CPUServe float64       `json:"cpu_serve_process_pct"`
	CPUIdle  Pair[float64] `json:"cpu_idle_pct"`
	// TmuxCPU is the CPU of the tmux server and every process under it
	// (the workload's agents) over the streaming window.
	TmuxCPU Pair[float64] `json:"tmux_server_cpu_pct"`
	// TmuxOwn is the tmux server process's own CPU over the streaming
	// window (its agents not included), and TmuxPaired what each
	// supervisor adds to it (listings, captures, clients coming and
	// going), measured after the window with the supervisor running and
	// stopped in turns on the same workload (see Paired).
	TmuxOwn    Pair[float64] `json:"tmux_server_own_cpu_pct"`
	TmuxPaired Pair[Paired]  `json:"tmux_server_paired"`
	// RSS is the supervisor's peak resident memory (VmHWM) in MiB after
	// the window; RSSAfterLoad after the MCP status load too (LoadPanes only).
	RSS          Pair[float64] `json:"peak_rss_mib"`
	RSSAfterLoad float64       `json:"peak_rss_after_mcp_load_mib,omitempty"`
	// BashLoop is the naive bash capture loop on the same streaming
	// workload (not measured with NoBaseline).
	BashLoop BashLoop `json:"bash_loop,omitzero"`
	// AllItCosts is Extra(): each supervisor's CPU plus what it adds to the
	// tmux server's own. VsBashLoop is system3's as a ratio to the bash
	// loop's: the acceptance figure (0 when the loop was not measured).
	AllItCosts Pair[float64] `json:"all_it_costs_pct"`
	VsBashLoop float64       `json:"all_it_costs_vs_bash_loop,omitempty"`
	// NewSessionMS is how long a session created while the workload runs
	// takes to show in serve's snapshot: tmux's new-session returning →
	// the session listed by the service.
	NewSessionMS float64 `json:"new_session_seen_ms,omitempty"`
	// Error says why this size could not be measured in full.
	Error string `json:"error,omitempty"`
}

// BashLoop is what the naive bash loop costs: a bash script that every
// 500 ms forks `tmux capture-pane -p -J` for every pane (bashLoopScript).
// It classifies nothing, so only its CPU is measured, in percent of one
// core over the streaming window.
type BashLoop struct {
	// CPU is bash's and every process it forks (tmux clients, sleep).
	CPU float64 `json:"cpu_pct"`
	// TmuxOwn is the tmux server process's own CPU under it.
	TmuxOwn float64 `json:"tmux_server_own_cpu_pct"`
	// TmuxPaired is what it adds to the tmux server's own CPU, measured
	// with the loop running and stopped in turns (see Paired).
	TmuxPaired Paired `json:"tmux_server_paired"`
	// AllItCosts is CPU plus what it adds to the tmux server
	// (TmuxPaired.Added).
	AllItCosts float64 `json:"all_it_costs_pct"`
	// PassesPerSec is how often it went over every pane: 2 at most, less
	// once a pass takes longer than its forks allow.
	PassesPerSec float64 `json:"passes_per_second"`
}

// StatusResult is MCP status under concurrent clients: each calling back
// to back (Latency, PerSec: the throughput), then each calling once per
// StatusEvery (Paced: the latency a client sees at a steady rate).
type StatusResult struct {
	Clients int             `json:"clients"`
	Latency Pair[Latencies] `json:"latency"`
	PerSec  Pair[float64]   `json:"per_second"`
	Paced   Pair[Latencies] `json:"paced_latency"`
	// ServeCPUPerCall is system3 serve's CPU per status call, in ms,
	// during the back-to-back load (the monitors' own work included), and
	// ServeCPUPerCallNet the same above what serve spent on the workload
	// without calls (ServeCPUWithoutCalls, in % of one core, measured for
	// as long just before the loads): what a call itself costs.
	ServeCPUPerCall      float64   `json:"serve_cpu_ms_per_call"`
	ServeCPUPerCallNet   float64   `json:"serve_cpu_ms_per_call_net"`
	ServeCPUWithoutCalls float64   `json:"serve_cpu_pct_without_calls"`
	Errors               Pair[int] `json:"errors"`
}

// Guidance is the delivery of a 4 KB multi-line message, verified.
type Guidance struct {
	Bytes    int       `json:"bytes"`
	Latency  Latencies `json:"latency"`
	Verified int       `json:"verified"`
	Sent     int       `json:"sent"`
}

// Classify is the rules engine on a 2,000-line capture.
type Classify struct {
	Lines     int     `json:"lines"`
	PerSecond float64 `json:"captures_per_second"`
	MeanMS    float64 `json:"mean_ms"`
}

// Run measures everything cfg asks for. When a size fails it carries on
// with the next and returns the report with the error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.Exe == "" {
		return nil, errors.New("bench: no system3 executable")
	}
	if runtime.GOOS != "linux" {
		return nil, errors.New("system3 bench reads /proc and runs on Linux only")
	}
	r := &Report{Machine: machine(ctx), Started: time.Now().UTC(), Window: cfg.Window.String(),
		PromptEvery: cfg.PromptEvery.String(), LoadPanes: cfg.LoadPanes, Busy: cfg.Busy, BusyPanes: cfg.BusyPanes,
		StatusEvery: cfg.StatusEvery.String()}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Log, "bench: "+format+"\n", args...) }

	logf("classifier on a 2,000-line capture")
	c, err := classify(2000, 2*time.Second)
	if err != nil {
		return nil, err
	}
	r.Classify = c
	var failed []error
	for _, n := range cfg.Panes {
		s := Size{Panes: n}
		load := n == cfg.LoadPanes
		err := measureSystem3(ctx, cfg, &s, r, load, logf)
		if err != nil {
			err = fmt.Errorf("system3 with %d panes: %w", n, err)
		} else if !cfg.NoBaseline {
			if err = measureBaseline(ctx, cfg, &s, r, load, logf); err != nil {
				err = fmt.Errorf("baseline with %d panes: %w", n, err)
			}
		}
		if err == nil && !cfg.NoBaseline {
			if err = measureBashLoop(ctx, cfg, &s, logf); err != nil {
				err = fmt.Errorf("naive bash loop with %d panes: %w", n, err)
			}
		}
		if err == nil {
			s.fillAllItCosts()
		}
		if err != nil {
			// Keep what the other sizes measured.
			logf("%v", err)
			s.Error = err.Error()
			failed = append(failed, err)
		}
		r.Sizes = append(r.Sizes, s)
		if ctx.Err() != nil {
			break
		}
	}
	r.Duration = time.Since(r.Started).Round(time.Second).String()
	return r, errors.Join(failed...)
}

//go:embed testdata/permission_bash.txt
var permissionScreen string

// Extra is what a supervisor costs in all, in percent of one core: its own
// CPU and what it adds to the tmux server's.
func (s Size) Extra() Pair[float64] {
	return Pair[float64]{
		System3:  allItCosts(s.CPU.System3, s.TmuxPaired.System3),
		Baseline: allItCosts(s.CPU.Baseline, s.TmuxPaired.Baseline),
	}
}

// allItCosts is a supervisor's own CPU plus what it adds to the tmux
// server (nothing when the paired slices measured less with it running).
func allItCosts(cpu float64, p Paired) float64 {
	return cpu + max(0, p.Added)
}

// fillAllItCosts fills in what each supervisor costs in all, once every
// phase of the size is measured.
func (s *Size) fillAllItCosts() {
	s.AllItCosts = s.Extra()
	if s.BashLoop.CPU > 0 {
		s.BashLoop.AllItCosts = allItCosts(s.BashLoop.CPU, s.BashLoop.TmuxPaired)
		s.VsBashLoop = s.AllItCosts.System3 / s.BashLoop.AllItCosts
	}
}

// bigCapture is n lines of output ending on a permission prompt.
func bigCapture(n int) string {
	var b strings.Builder
	tail := strings.Count(permissionScreen, "\n") + 1
	for i := 0; i < n-tail; i++ {
		fmt.Fprintf(&b, "● line %d of output: the quick brown fox jumps over the lazy dog\n", i)
	}
	b.WriteString(permissionScreen)
	return b.String()
}

// classify runs the rules engine on an n-line capture for about d.
func classify(n int, d time.Duration) (Classify, error) {
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		return Classify{}, err
	}
	in := rules.Input{Screen: bigCapture(n), Processes: []string{"claude"}}
	if st := eng.Classify(in).State; st != api.AwaitingInput {
		return Classify{}, fmt.Errorf("the %d-line capture classified as %s, not awaiting_input", n, st)
	}
	start := time.Now()
	count := 0
	for time.Since(start) < d {
		for range 10 {
			eng.Classify(in)
		}
		count += 10
	}
	el := time.Since(start)
	return Classify{Lines: n, PerSecond: float64(count) / el.Seconds(), MeanMS: ms(el) / float64(count)}, nil
}

// statusLoad runs clients goroutines, each calling one() for d, back to
// back (every 0) or once per every (starting at spread moments), and
// returns the latencies, the calls per second and the errors.
func statusLoad(ctx context.Context, clients int, d, every time.Duration, one func(ctx context.Context, i int) error) (Latencies, float64, int) {
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			next := start
			if every > 0 {
				next = start.Add(every * time.Duration(i) / time.Duration(clients))
			}
			for time.Now().Before(end) && ctx.Err() == nil {
				if every > 0 {
					if sleepCtx(ctx, time.Until(next)) != nil || !time.Now().Before(end) {
						break
					}
					next = next.Add(every)
				}
				t := time.Now()
				if err := one(ctx, i); err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	return summarize(lat), float64(len(lat)) / el.Seconds(), errs
}

// guidanceMessage is a 4 KB multi-line message.
func guidanceMessage() string {
	var b strings.Builder
	b.WriteString("Guidance from the supervisor, please read all of it before you continue:\n")
	for i := 1; b.Len() < 4096-80; i++ {
		fmt.Fprintf(&b, "%2d. Keep the change small, run the tests of the package you touch, and commit.\n", i)
	}
	for b.Len() < 4095 {
		b.WriteByte('.')
	}
	b.WriteString("\n")
	return strings.TrimSuffix(b.String()[:4096], "\n") + "!"
}

func machine(ctx context.Context) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(v), &kb)
				m.Memory = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	m.Tmux = tmuxVersion(ctx)
	return m
}

func tmuxVersion(ctx context.Context) string {
	v, err := tmux.Server{}.Version(ctx)
	if err != nil {
		return "unknown"
	}
	return v
}
