package bench

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// TestBashLoop: the naive bash loop goes over a private server's panes
// every 500 ms without an error, and stopping it ends every process it
// started; once the server is gone, its failing commands are reported.
func TestBashLoop(t *testing.T) {
	testkit.LookPath(t, "bash")
	srv := tmuxtest.NewServer(t, "sleep 600")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := startBashLoop(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	if err := l.waitRunning(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testkit.WaitFor(t, 10*time.Second, "two more passes", func() bool { return l.passes() >= 3 })
	// Two sleeps of 0.5 s lie between the first pass and the third.
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("three passes within %v: the loop does not sleep between passes", el)
	}
	if err := l.check(); err != nil {
		t.Fatal(err)
	}

	if err := tmux.NewClient(srv).KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the loop to report its failing listing", func() bool { return l.check() != nil })
	if err := l.check(); !strings.Contains(err.Error(), "commands failed") {
		t.Errorf("check with the server gone: %v", err)
	}

	pgid := l.pid()
	l.stop()
	if livingInGroup(pgid) {
		t.Errorf("after stop, the loop's process group %d still has a process running", pgid)
	}
	if !livingInGroup(syscall.Getpgrp()) {
		t.Errorf("livingInGroup(%d) = false for this process's own group", syscall.Getpgrp())
	}
}
