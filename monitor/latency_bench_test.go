package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// BenchmarkDetectionLatency measures how long a permission prompt written
// into one pane takes to become an awaiting_input wake, with 50 watched
// panes, half of them printing 20 lines a second. Each iteration is one
// prompt; run with -benchtime=30x and read p50-ms and p95-ms.
//
//	go test -run XXX -bench DetectionLatency -benchtime 30x ./monitor/
func BenchmarkDetectionLatency(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startLoad(ctx, b, 50, true)
	defer f.stop()
	sup, store, c, target, prompt, idle := f.sup, f.store, f.client, f.target, f.prompt, f.idle
	sub, err := store.Subscribe(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	stateOf := func() api.State {
		snap, _ := sup.Snapshot(ctx)
		for _, s := range snap.Sessions {
			if s.Pane == target {
				return s.State
			}
		}
		return ""
	}
	send := func(line string) {
		if _, err := c.SendText(ctx, target, line, tmux.SendOptions{NoVerify: true, EnterDelay: time.Millisecond}); err != nil {
			b.Fatal(err)
		}
	}

	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(idle)
		testkit.WaitFor(b, 5*time.Second, "the prompt to go away", func() bool { return stateOf() != api.AwaitingInput })
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		send(prompt)
		timeout := time.After(5 * time.Second)
	wait:
		for {
			select {
			case m := <-sub.C:
				// Clearing the last prompt's condition also reports here.
				if m.Kind == api.WakeRaised {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				b.Fatal("no wake within 5s")
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(0, "ns/op")
}

// loadFixture is a private tmux server with n watched panes (a fake Claude
// Code in "main", the others sleeping or, with streaming, every other one
// printing 20 lines a second) and running monitors.
type loadFixture struct {
	sup          *Supervisor
	store        *wake.Store
	client       *tmux.Client
	target       string // the fake agent's pane
	prompt, idle string // screens it can be told to draw
	stop         func()
}

func startLoad(ctx context.Context, b *testing.B, panes int, streaming bool) *loadFixture {
	prompt, err := filepath.Abs(filepath.Join("testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		b.Fatal(err)
	}
	idle := filepath.Join(filepath.Dir(prompt), "idle.txt")
	// The agent under test: a shell whose process is named claude, drawing
	// the screen it is told to.
	fake := filepath.Join(b.TempDir(), "claude")
	if err := os.Symlink("/bin/sh", fake); err != nil {
		b.Fatal(err)
	}
	srv := tmuxtest.NewServer(b, fake, "-c", `stty -echo; while read f; do clear; cat "$f"; done`)
	c := tmux.NewClient(srv)
	for i := 1; i < panes; i++ {
		cmd := []string{"sleep", "100000"}
		if streaming && i%2 == 0 {
			cmd = []string{"sh", "-c", "while :; do echo \"build step $RANDOM ok\"; sleep 0.05; done"}
		}
		if _, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: fmt.Sprintf("load%d", i), Command: cmd}); err != nil {
			b.Fatal(err)
		}
	}
	all, err := c.ListPanes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var target string
	for _, p := range all {
		if p.SessionName == "main" {
			target = p.ID
		}
	}

	eng, err := rules.New(agents.Builtin())
	if err != nil {
		b.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	client := tmux.NewClient(srv)
	sup, err := New(Config{Server: srv.String(), Tmux: client, Events: watcher.Events(), Rules: eng, Wakes: store,
		Processes: ProcessTree, HeartbeatEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	return &loadFixture{sup: sup, store: store, client: c, target: target, prompt: prompt, idle: idle,
		stop: func() { cancel(); g.Wait(); store.Close() }}
}

// BenchmarkMonitorCPU measures the CPU the monitors use (this process:
// supervisor, control-mode readers, classification) while 50 panes are
// watched for 5 seconds, all idle or half printing 20 lines a second.
//
//	go test -run XXX -bench MonitorCPU -benchtime 1x ./monitor/
func BenchmarkMonitorCPU(b *testing.B) {
	for _, streaming := range []bool{false, true} {
		name := "idle"
		if streaming {
			name = "streaming"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := startLoad(ctx, b, 50, streaming)
			defer f.stop()
			time.Sleep(time.Second) // let the first captures settle
			var total time.Duration
			for i := 0; i < b.N; i++ {
				before := cpuTime()
				time.Sleep(5 * time.Second)
				total += cpuTime() - before
			}
			b.ReportMetric(100*total.Seconds()/(5*float64(b.N)), "cpu-%")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
