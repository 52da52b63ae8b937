package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
)

// serveProc is `system3 serve` on a workload, with a private state dir
// and an MCP port of its own.
type serveProc struct {
	cmd      *exec.Cmd
	exited   chan error
	stderr   *bytes.Buffer
	url      string
	stateDir string
	env      []string
	args     []string // global flags for other system3 commands
	exe      string
}

func startServe(ctx context.Context, exe string, w *Workload) (*serveProc, error) {
	state := filepath.Join(w.Dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	s := &serveProc{exe: exe, stateDir: state, exited: make(chan error, 1), stderr: &bytes.Buffer{},
		args: []string{"--tmux-socket-path", w.Server.Path, "--tasks-dir", w.Tasks, "--state-dir", state}}
	s.env = append(os.Environ(),
		"HOME="+filepath.Join(w.Dir, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(w.Dir, "config"), // no config.yaml: defaults
		"XDG_STATE_HOME="+filepath.Join(w.Dir, "xdgstate"))
	s.cmd = exec.Command(exe, append(append([]string(nil), s.args...), "serve", "--listen", "127.0.0.1:0")...)
	s.cmd.Env = s.env
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start system3 serve: %w", err)
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		s.exited <- s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case l := <-lines:
		_, rest, ok := strings.Cut(l, "MCP server on ")
		url, _, _ := strings.Cut(rest, ";")
		url, _, _ = strings.Cut(url, " ")
		if !ok || !strings.HasPrefix(url, "http://") {
			s.stop()
			return nil, fmt.Errorf("system3 serve printed %q", l)
		}
		s.url = url
	case err := <-s.exited:
		return nil, fmt.Errorf("system3 serve exited (%v): %s", err, s.stderr.String())
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("system3 serve did not start within 30s: %s", s.stderr.String())
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	return s, nil
}

func (s *serveProc) pid() int { return s.cmd.Process.Pid }

func (s *serveProc) dial(ctx context.Context) (*ipc.Client, error) {
	return ipc.Dial(ctx, filepath.Join(s.stateDir, ipc.SocketFile))
}

// stop interrupts serve as Ctrl-C would and waits for it.
func (s *serveProc) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("system3 serve did not stop within 15s of SIGINT")
	}
}

// waitWatching waits until serve watches every session of the workload
// (its watcher logs "tmux: watching" with the sessions it found), so the
// measurement does not time serve's start-up. It reads serve's log.
func (s *serveProc) waitWatching(ctx context.Context, w *Workload, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	re := regexp.MustCompile(`msg="tmux: watching".* sessions=(\d+)`)
	for {
		b, _ := os.ReadFile(filepath.Join(s.stateDir, "system3.log"))
		for _, m := range re.FindAllSubmatch(b, -1) {
			if n, _ := strconv.Atoi(string(m[1])); n >= len(w.Panes) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("system3 did not report watching all %d sessions within %v", len(w.Panes), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitSessions waits until serve watches every pane of w, classified.
func (s *serveProc) waitSessions(ctx context.Context, w *Workload, timeout time.Duration) error {
	c, err := s.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(timeout)
	seen := 0
	for {
		snap, err := c.Snapshot(ctx)
		if err != nil {
			return err
		}
		seen = 0
		for _, x := range snap.Sessions {
			if strings.HasPrefix(x.Session, "bench-") && x.State != "" && x.State != api.Unknown {
				seen++
			}
		}
		if seen >= len(w.Panes) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("system3 classified %d of %d panes within %v", seen, len(w.Panes), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// arrival is a wake reaching a caller.
type arrival struct {
	id, session string
	raised, at  time.Time
}

// wakeTracker collects the arrivals of each wake at the two callers and
// acknowledges a wake once both have it (or after a grace period), so
// that neither misses one and a `system3 wait` can move to the next.
type wakeTracker struct {
	mu      sync.Mutex
	cli     []arrival
	mcp     []arrival
	mcpSeen map[string]chan struct{}
}

func newTracker() *wakeTracker { return &wakeTracker{mcpSeen: map[string]chan struct{}{}} }

func (t *wakeTracker) seenChan(id string) chan struct{} {
	ch, ok := t.mcpSeen[id]
	if !ok {
		ch = make(chan struct{})
		t.mcpSeen[id] = ch
	}
	return ch
}

func (t *wakeTracker) addMCP(a arrival) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mcp = append(t.mcp, a)
	ch := t.seenChan(a.id)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// addCLI records a `system3 wait` arrival and returns a channel closed
// once the MCP caller has the same wake.
func (t *wakeTracker) addCLI(a arrival) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cli = append(t.cli, a)
	return t.seenChan(a.id)
}

// cliWaiter runs `system3 wait` for one session again and again: each
// wake it prints is recorded, then acknowledged once the MCP caller has
// it too, and the next wait starts.
func (s *serveProc) cliWaiter(ctx context.Context, session string, t *wakeTracker, svc *ipc.Client, errs chan<- error) {
	for ctx.Err() == nil {
		cmd := exec.CommandContext(ctx, s.exe, append(append([]string(nil), s.args...),
			"wait", "--json", "--reason", string(api.ReasonAwaitingInput), "--session", session)...)
		cmd.Env = s.env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		at := time.Now()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			errs <- fmt.Errorf("system3 wait --session %s: %v: %s", session, err, stderr.String())
			return
		}
		var ev api.Wake
		if err := json.Unmarshal(out, &ev); err != nil {
			errs <- fmt.Errorf("system3 wait printed %q: %v", out, err)
			return
		}
		seen := t.addCLI(arrival{id: ev.ID, session: ev.Session, raised: ev.Time, at: at})
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return
		}
		if _, err := svc.Ack(ctx, ev.ID, "bench"); err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("ack %s: %w", ev.ID, err)
			return
		}
	}
}

// mcpWaiter calls wait_for_wake in a loop as a supervising agent does,
// passing the cursor of the last wake so that it sees each wake once.
func (s *serveProc) mcpWaiter(ctx context.Context, t *wakeTracker, errs chan<- error) {
	c, err := dialMCP(ctx, s.url, "bench-waiter")
	if err != nil {
		errs <- err
		return
	}
	defer c.Close()
	var cursor uint64
	for ctx.Err() == nil {
		var out struct {
			Status string   `json:"status"`
			Wake   api.Wake `json:"wake"`
			Cursor uint64   `json:"cursor"`
		}
		err := c.call(ctx, "wait_for_wake", map[string]any{
			"reasons": []string{string(api.ReasonAwaitingInput)}, "session": "bench-*",
			"since": cursor, "max_wait_seconds": 10}, &out)
		at := time.Now()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			errs <- err
			return
		}
		if out.Status == "wake" {
			t.addMCP(arrival{id: out.Wake.ID, session: out.Wake.Session, raised: out.Wake.Time, at: at})
		}
		if out.Cursor > cursor {
			cursor = out.Cursor
		}
	}
}
