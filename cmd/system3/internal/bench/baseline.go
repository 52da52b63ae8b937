package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// The naive baseline is how peer tools watch agents: every interval, list
// the panes and fork one `tmux capture-pane` per pane, then classify each
// capture (here with system3's own rules, so only the watching differs).

// PollEvery is the baseline's polling interval.
const PollEvery = 500 * time.Millisecond

// PollChange is one line the poller prints: a pane whose state changed.
type PollChange struct {
	Session string    `json:"session"`
	Pane    string    `json:"pane"`
	State   api.State `json:"state"`
	Time    time.Time `json:"time"`
}

// naiveClient forks a tmux client for every command (no control
// connection, no native client), as peer tools do.
func naiveClient(s tmux.Server) *tmux.Client {
	s.Fork = true
	return tmux.NewClient(s)
}

// naiveScan captures and classifies every pane once.
func naiveScan(ctx context.Context, c *tmux.Client, eng *rules.Engine) (map[string]PollChange, error) {
	panes, err := c.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]PollChange, len(panes))
	for _, p := range panes {
		text, err := c.Capture(ctx, p.ID, tmux.CaptureOptions{})
		if err != nil {
			continue // the pane went away meanwhile
		}
		r := eng.Classify(rules.Input{Screen: text, Processes: []string{p.Command}, Dead: p.Dead, DeadStatus: p.DeadStatus})
		out[p.ID] = PollChange{Session: p.SessionName, Pane: p.ID, State: r.State, Time: time.Now()}
	}
	return out, nil
}

// Poll runs the baseline poller on server until ctx ends, writing a JSON
// line to out for every pane whose state changes.
func Poll(ctx context.Context, server tmux.Server, every time.Duration, out io.Writer) error {
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		return err
	}
	c := naiveClient(server)
	enc := json.NewEncoder(out)
	last := map[string]api.State{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		states, err := naiveScan(ctx, c, eng)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "poll:", err)
		}
		for id, ch := range states {
			if last[id] != ch.State {
				last[id] = ch.State
				if err := enc.Encode(ch); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// pollProc is the baseline poller running as its own process (this
// program's `bench poll`), so its CPU and memory are measured as serve's
// are.
type pollProc struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	mu      sync.Mutex
	changes []PollChange // with Time set to when the harness read them
}

func startPoller(exe string, w *Workload) (*pollProc, error) {
	p := &pollProc{exited: make(chan struct{})}
	p.cmd = exec.Command(exe, "bench", "poll", "--server", w.Server.Path, "--interval", PollEvery.String())
	p.cmd.Stderr = os.Stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the baseline poller: %w", err)
	}
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ch PollChange
			if json.Unmarshal(sc.Bytes(), &ch) == nil {
				ch.Time = time.Now()
				p.mu.Lock()
				p.changes = append(p.changes, ch)
				p.mu.Unlock()
			}
		}
		p.cmd.Wait()
	}()
	return p, nil
}

func (p *pollProc) pid() int { return p.cmd.Process.Pid }

func (p *pollProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitClassified waits until the poller has reported every pane.
func (p *pollProc) waitClassified(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		seen := map[string]bool{}
		for _, ch := range p.changes {
			if strings.HasPrefix(ch.Session, "bench-") {
				seen[ch.Pane] = true
			}
		}
		p.mu.Unlock()
		if len(seen) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the baseline poller classified %d of %d panes within %v", len(seen), n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// detections are the moments the poller saw a prompting pane enter
// awaiting_input, after since.
func (p *pollProc) detections(since time.Time) []PollChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PollChange
	for _, ch := range p.changes {
		if ch.State == api.AwaitingInput && ch.Time.After(since) && strings.HasPrefix(ch.Session, "bench-"+string(RolePrompt)) {
			out = append(out, ch)
		}
	}
	return out
}

// naiveStatus is the baseline's answer to "status": without a live
// registry, capture and classify every pane on request.
func naiveStatus(ctx context.Context, c *tmux.Client, eng *rules.Engine) error {
	_, err := naiveScan(ctx, c, eng)
	return err
}

// naiveGuidance types a message the way peer tools do (forked tmux
// commands: a paste buffer, then Enter) and checks that the agent took it
// by polling its screen every PollEvery until it works on it.
func naiveGuidance(ctx context.Context, c *tmux.Client, eng *rules.Engine, pane, msg string) (bool, error) {
	if _, err := c.SendText(ctx, pane, msg, tmux.SendOptions{NoVerify: true, Paste: true}); err != nil {
		return false, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		text, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
		if err != nil {
			return false, err
		}
		if eng.Classify(rules.Input{Screen: text}).State == api.Working {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(PollEvery):
		}
	}
	return false, nil
}
