package lifecycle

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
)

// waitSession waits until the spawned pane is watched and ok(session)
// holds, and returns that session. It checks on every registry update and
// at least every 250ms.
func (sp *spawn) waitSession(ctx context.Context, ok func(api.Session) bool) (api.Session, error) {
	svc := sp.m.cfg.Service
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := svc.Watch(wctx)
	if err != nil {
		updates = nil // polling alone will do
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last api.Session
	seen := false
	for {
		snap, err := svc.Snapshot(ctx)
		if err == nil {
			found := false
			for _, s := range snap.Sessions {
				if s.Pane == sp.res.Pane {
					found, seen, last = true, true, s
					if ok(s) {
						return s, nil
					}
				}
			}
			if !found && seen {
				return last, fmt.Errorf("the pane closed: %s exited (last seen %s: %s)", sp.res.Agent, last.State, describe(last))
			}
		}
		select {
		case <-ctx.Done():
			if !seen {
				return last, fmt.Errorf("system3 never saw pane %s of session %s within %s; is the monitor watching this tmux server?", sp.res.Pane, sp.res.Session, sp.m.cfg.ReadyTimeout)
			}
			return last, fmt.Errorf("%s was not ready for input within %s (it was %s: %s)", sp.res.Agent, sp.m.cfg.ReadyTimeout, last.State, describe(last))
		case _, open := <-updates:
			if !open {
				updates = nil
			}
		case <-tick.C:
		}
	}
}

func describe(s api.Session) string {
	switch {
	case s.Question != "":
		return s.Question
	case s.LastLine != "":
		return s.LastLine
	case len(s.Evidence.Lines) > 0:
		return s.Evidence.Lines[0]
	}
	return "no screen text"
}

// waitReady waits until the agent is idle at its input, answering the
// folder-trust dialog on the way unless the request says not to.
func (sp *spawn) waitReady(ctx context.Context) (string, error) {
	trustTried := false
	var trustErr error
	s, err := sp.waitSession(ctx, func(s api.Session) bool {
		switch {
		case s.State == api.Idle:
			return true
		case s.State == api.Exited:
			return true // reported below
		case s.State == api.AwaitingInput && s.Kind == "trust" && !sp.req.NoAutoTrust && !trustTried:
			trustTried = true
			trustErr = sp.trust(ctx, s)
			return trustErr != nil
		}
		return false
	})
	switch {
	case trustErr != nil:
		return api.StepTrust, trustErr
	case err != nil:
		return api.StepReady, err
	}
	if _, ok := known(s.Agent); ok {
		sp.identified = s.Agent
	}
	if s.State == api.Exited {
		how := describe(s)
		if s.Evidence.Source == "process" && len(s.Evidence.Lines) > 0 {
			how = s.Evidence.Lines[0] // "the pane's process exited with status 1"
		}
		return api.StepReady, sp.exitedBeforeReady(ctx, how)
	}
	return "", nil
}

// exitedBeforeReady is the error of an agent that exited before it took
// its first prompt: how it exited (its status, once tmux shows it) and
// its last output.
func (sp *spawn) exitedBeforeReady(ctx context.Context, how string) error {
	status, output := sp.lastOutput(ctx)
	if status != "" {
		how = "the pane's process exited with status " + status
	}
	return fmt.Errorf("%s exited before it was ready (%s); %s", sp.res.Agent, how, output)
}

// lastOutputLines is how many lines of a dead agent's output an error
// quotes.
const lastOutputLines = 5

// deadLineRE is the line tmux writes in a kept dead pane once it has
// reaped the process: "Pane is dead (status 7, Tue Nov 24 14:23:11 2026)".
var deadLineRE = regexp.MustCompile(`^Pane is dead \((?:status (\d+)|signal (\d+))`)

// deadLineWait bounds the wait for that line: tmux marks a pane dead when
// its terminal closes, and learns the exit status a moment later, when it
// reaps the process (until then pane_dead_status reads 0): on a loaded
// machine that moment has taken more than two seconds.
const deadLineWait = 5 * time.Second

// lastOutput quotes the last lines an agent printed before it exited, from
// its pane (kept dead for this), and the exit status tmux wrote there
// ("7", "signal 9"; "" when it did not show in time).
func (sp *spawn) lastOutput(ctx context.Context) (status, output string) {
	deadline := time.Now().Add(deadLineWait)
	for {
		p, err := sp.m.cfg.Service.Preview(context.WithoutCancel(ctx), api.PreviewRequest{Target: api.Target{Pane: sp.res.Pane}, History: 200})
		if err != nil {
			return "", "its output could not be read: " + err.Error()
		}
		var out []string
		for _, l := range p.Lines {
			l = strings.TrimRight(l, " ")
			if m := deadLineRE.FindStringSubmatch(l); m != nil {
				status = m[1]
				if m[2] != "" {
					status = "signal " + m[2]
				}
				continue
			}
			if l != "" {
				out = append(out, l)
			}
		}
		if status == "" && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if len(out) == 0 {
			return status, "it printed nothing; run its command by hand in the worktree to see why"
		}
		out = out[max(0, len(out)-lastOutputLines):]
		return status, "its last output:\n  " + strings.Join(out, "\n  ")
	}
}

// trust accepts the folder-trust dialog: the user asked system3 to work in
// the worktree it has just created. Once the dialog has settled, it moves
// the cursor down while it is on an option above Yes, and presses Enter
// only when the screen shows Yes selected (Enter on the default "No, exit"
// would quit the agent). A key pressed while the dialog is still drawing
// can be lost, so it looks again before each press.
func (sp *spawn) trust(ctx context.Context, s api.Session) error {
	sp.progress(api.StepTrust, fmt.Sprintf("answering the folder-trust dialog for %s (the worktree system3 just created)", sp.res.Worktree))
	yes := -1
	for i, o := range s.Options {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(o)), "yes") {
			yes = i
			break
		}
	}
	if yes < 0 {
		return fmt.Errorf("the trust dialog shows no Yes option (options: %s); answer it in session %s", strings.Join(s.Options, ", "), sp.res.Session)
	}
	svc, t := sp.m.cfg.Service, api.Target{Pane: sp.res.Pane}
	deadline := time.Now().Add(10 * time.Second)
	var last string
	var since, pressed time.Time
	for {
		p, err := svc.Preview(ctx, api.PreviewRequest{Target: t})
		if err != nil {
			return err
		}
		screen := strings.Join(p.Lines, "\n")
		now := time.Now()
		if screen != last {
			last, since = screen, now
		}
		label := agents.Lookup(s.Agent).CursorLabel(p.Lines)
		switch {
		case strings.HasPrefix(strings.ToLower(label), "yes"):
			if _, err := svc.SendKeys(ctx, api.KeysRequest{Target: t, Keys: []string{"Enter"}, Origin: sp.req.Origin}); err != nil {
				return err
			}
			sp.res.AutoTrusted = true
			sp.m.cfg.Logger.Info("answered the folder-trust dialog", "initiative", sp.req.Initiative, "worktree", sp.res.Worktree, "session", sp.res.Session)
			return nil
		case label != "" && now.Sub(since) >= trustSettle && now.Sub(pressed) >= trustRepress:
			if _, err := svc.SendKeys(ctx, api.KeysRequest{Target: t, Keys: []string{"Down"}, Origin: sp.req.Origin}); err != nil {
				return err
			}
			pressed = now
		}
		if now.After(deadline) {
			return fmt.Errorf("the trust dialog's Yes option never showed as selected (cursor on %q); answer it in session %s", label, sp.res.Session)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// How long the trust dialog must be unchanged before a key is pressed, and
// the least time between two presses.
const (
	trustSettle  = 300 * time.Millisecond
	trustRepress = time.Second
)
