package tmux_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
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
