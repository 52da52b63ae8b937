package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/system3-dev/system3/tmux"
)

// The naive bash capture loop is the simplest supervisor there is: a shell
// script that every 500 ms captures every pane with a forked tmux and does
// nothing else (it classifies nothing, so it only has a cost). The
// acceptance figure is all system3 costs as a ratio to all this loop costs.

// bashLoopScript is the loop. Its arguments ("$@") are the tmux command
// line that reaches the workload's server (tmux.Server.Argv: the binary
// and -S socket), so the script holds no path to quote. After each pass
// over the panes it prints a line (echo is a builtin: no process), so the
// harness knows when it runs and how often it goes round. `sleep` is the
// program, forked, as in any such script.
const bashLoopScript = `while :; do
	for p in $("$@" list-panes -a -F '#{pane_id}'); do
		"$@" capture-pane -p -J -t "$p" >/dev/null
	done
	echo pass
	sleep 0.5
done`

// bashLoop is the naive bash loop running on a workload's server, as its
// own process group, so that stopping it ends the tmux client or sleep it
// is waiting for too.
type bashLoop struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	ran      chan struct{} // closed after the first pass
	count    atomic.Int64  // passes over every pane
	mu       sync.Mutex
	stderr   bytes.Buffer // what bash and its tmux clients said (an error: nothing is expected)
	stopOnce sync.Once
}

func startBashLoop(server tmux.Server) (*bashLoop, error) {
	l := &bashLoop{exited: make(chan struct{}), ran: make(chan struct{})}
	argv := append([]string{"-c", bashLoopScript, "bash"}, server.Argv()...)
	l.cmd = exec.Command("bash", argv...)
	// BASH_ENV empty: a non-interactive bash reads no startup file of the
	// user's. TMUX unset: nothing points the clients at the user's server
	// (-S names the private one anyway).
	env := []string{"BASH_ENV="}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BASH_ENV=") && !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			env = append(env, kv)
		}
	}
	l.cmd.Env = env
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l.cmd.Stderr = lockedWriter{&l.mu, &l.stderr}
	l.cmd.WaitDelay = 5 * time.Second
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the naive bash loop (install bash, or pass --no-baseline): %w", err)
	}
	go func() {
		defer close(l.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l.count.Add(1) == 1 {
				close(l.ran)
			}
		}
		l.cmd.Wait()
	}()
	return l, nil
}

func (l *bashLoop) pid() int { return l.cmd.Process.Pid }

// passes is how many times the loop has gone over every pane.
func (l *bashLoop) passes() int64 { return l.count.Load() }

// waitRunning waits until the loop has captured every pane once.
func (l *bashLoop) waitRunning(ctx context.Context, timeout time.Duration) error {
	select {
	case <-l.ran:
		return nil
	case <-l.exited:
		return fmt.Errorf("the naive bash loop exited before its first pass: %s", l.errors())
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("the naive bash loop did not go over the panes once within %v", timeout)
	}
}

// check fails if the loop has exited or anything it ran printed an error
// (a capture that failed would make its cost meaningless).
func (l *bashLoop) check() error {
	select {
	case <-l.exited:
		return fmt.Errorf("the naive bash loop exited: %s", l.errors())
	default:
	}
	if e := l.errors(); e != "" {
		return fmt.Errorf("the naive bash loop's commands failed: %s", e)
	}
	return nil
}

func (l *bashLoop) errors() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.stderr.String())
}

// stop ends the loop's process group (bash and whatever it runs) and
// waits for it: a tmux client or sleep bash was waiting for outlives bash
// by a moment. Only the first call signals: once the group is gone its id
// may be another's.
func (l *bashLoop) stop() {
	l.stopOnce.Do(func() {
		pgid := l.pid() // bash leads the group: it and all in it are ours
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-l.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-l.exited
		}
		deadline := time.Now().Add(3 * time.Second)
		for livingInGroup(pgid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(-pgid, syscall.SIGKILL) // still there, so still ours
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// livingInGroup tells whether a process of group pgid is still running:
// not a zombie, which an init that reaps no orphans may keep for ever.
func livingInGroup(pgid int) bool {
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the command name: state, ppid, pgrp.
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// lockedWriter serialises writes to w (exec's copying goroutine writes
// while the harness reads).
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (lw lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.w.Len() > 4096 {
		return len(p), nil // enough to say what went wrong
	}
	return lw.w.Write(p)
}

// measureBashLoop runs the streaming workload under the naive bash loop
// and measures its CPU (bash and every process it forks) and the tmux
// server's own CPU over the window, as for the other supervisors. It
// detects nothing, so only its cost is measured.
func measureBashLoop(ctx context.Context, cfg Config, s *Size, logf logFunc) error {
	n := s.Panes
	logf("naive bash loop, %d panes: starting the workload", n)
	w, err := startWorkload(ctx, cfg.Exe, n, cfg.busyAt(n), cfg.PromptEvery)
	if err != nil {
		return err
	}
	defer w.Close()
	l, err := startBashLoop(w.Server)
	if err != nil {
		return err
	}
	defer l.stop()
	if err := l.waitRunning(ctx, readyTimeout(n)); err != nil {
		return err
	}
	cpu, tcpu, err := settleAndMeter(ctx, w, l.pid())
	if err != nil {
		return err
	}
	start, passes0 := time.Now(), l.passes()
	logf("naive bash loop, %d panes: measuring for %v", n, cfg.Window)
	if err := sleepCtx(ctx, cfg.Window); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	b := BashLoop{PassesPerSec: float64(l.passes()-passes0) / time.Since(start).Seconds()}
	if b.CPU, err = cpu.percent(); err != nil {
		return err
	}
	if _, b.TmuxOwn, err = tcpu.split(); err != nil {
		return err
	}
	if b.CPU <= 0 {
		return errors.New("the naive bash loop used no CPU over the window: the measurement is wrong")
	}
	logf("naive bash loop, %d panes: what it adds to the tmux server, running and stopped in turns", n)
	if b.TmuxPaired, err = pairTmux(ctx, cfg, w, -l.pid()); err != nil {
		return err
	}
	s.BashLoop = b
	return nil
}
