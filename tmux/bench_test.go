package tmux_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// BenchmarkCommand compares one tmux command forked as a new tmux client
// with the same command over a control-mode connection.
func BenchmarkCommand(b *testing.B) {
	srv := tmuxtest.NewServer(b, "seq 1 200; exec sleep 1000")
	ctx := context.Background()
	conn, err := tmux.Attach(ctx, srv, "main", tmux.ConnOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	forked := tmux.NewClient(srv)
	fast := tmux.NewClient(srv)
	fast.Control = conn
	panes, err := forked.ListPanes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pane := panes[0].ID

	for _, c := range []struct {
		name   string
		client *tmux.Client
	}{{"fork", forked}, {"control", fast}} {
		b.Run("pane-info/"+c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := c.client.PaneInfo(ctx, pane); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("capture/"+c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := c.client.Capture(ctx, pane, tmux.CaptureOptions{History: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("list-panes/"+c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := c.client.ListPanes(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("display-message/control", func(b *testing.B) {
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := conn.Command(ctx, "display-message", "-p", "#{pane_id}"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuPerOp reports the CPU time this process and its reaped children (the
// forked tmux clients) spent per operation. The tmux server's own CPU is
// not included.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

// BenchmarkListPanes50 lists 50 panes by forking tmux and over the native
// client, and captures one pane each way, reporting the CPU this process
// and its forked clients spent (cpu-ns/op) and the tmux server's
// (server-cpu-ns/op, from /proc in clock ticks, so run enough iterations:
// -benchtime=2000x).
func BenchmarkListPanes50(b *testing.B) {
	srv := tmuxtest.NewServer(b, "seq 1 200; exec sleep 1000")
	ctx := context.Background()
	c := tmux.NewClient(srv)
	for range 49 {
		if _, err := c.NewWindow(ctx, tmux.NewWindowOptions{Session: "main", Command: []string{"sleep 1000"}}); err != nil {
			b.Fatal(err)
		}
	}
	panes, err := c.ListPanes(ctx)
	if err != nil || len(panes) != 50 {
		b.Fatalf("%d panes, %v", len(panes), err)
	}
	pid := serverPIDb(b, c)
	for _, mode := range []string{"fork", "native"} {
		b.Run("list-panes/"+mode, func(b *testing.B) {
			if mode == "fork" {
				b.Setenv(tmux.ForkEnv, "1")
			}
			defer cpuPerOp(b)()
			defer serverCPUPerOp(b, pid)()
			for b.Loop() {
				if _, err := c.ListPanes(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("signals/"+mode, func(b *testing.B) {
			if mode == "fork" {
				b.Setenv(tmux.ForkEnv, "1")
			}
			defer cpuPerOp(b)()
			defer serverCPUPerOp(b, pid)()
			for b.Loop() {
				if _, err := c.ListPaneSignals(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("capture-25/"+mode, func(b *testing.B) {
			if mode == "fork" {
				b.Setenv(tmux.ForkEnv, "1")
			}
			ids := make([]string, 25)
			for i := range ids {
				ids[i] = panes[i].ID
			}
			defer cpuPerOp(b)()
			defer serverCPUPerOp(b, pid)()
			for b.Loop() {
				for _, r := range c.CaptureMany(ctx, ids, tmux.CaptureOptions{}) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
		})
		b.Run("capture/"+mode, func(b *testing.B) {
			if mode == "fork" {
				b.Setenv(tmux.ForkEnv, "1")
			}
			defer cpuPerOp(b)()
			defer serverCPUPerOp(b, pid)()
			for b.Loop() {
				if _, err := c.Capture(ctx, panes[0].ID, tmux.CaptureOptions{History: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func serverPIDb(b *testing.B, c *tmux.Client) int {
	panes, err := c.ListPanes(context.Background())
	if err != nil || len(panes) == 0 {
		b.Fatal(err)
	}
	return panes[0].ServerPID
}

// serverCPUPerOp reports the tmux server's CPU time per operation.
func serverCPUPerOp(b *testing.B, pid int) func() {
	start := procCPU(b, pid)
	return func() {
		b.ReportMetric(float64((procCPU(b, pid)-start).Nanoseconds())/float64(b.N), "server-cpu-ns/op")
	}
}

// procCPU reads utime+stime of a process from /proc/PID/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// Fields after the command: state is f[0], so utime (14) is f[11].
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}
