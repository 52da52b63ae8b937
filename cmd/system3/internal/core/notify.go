package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/wake/notify"
)

// notifyTimeout bounds one notification command: a hung notify-send must
// not hold the next wake back for long.
const notifyTimeout = 10 * time.Second

// notifyQueue is how many wakes may wait for the command; beyond that they
// are dropped and counted (a flood of wakes needs the dashboard, not 200
// desktop notifications).
const notifyQueue = 16

// Notifier announces new wakes outside the dashboard: a message on the
// operator's tmux status line, and a configured command with the wake as
// JSON on stdin.
type Notifier struct {
	reasons []api.Reason
	// display shows a line on the operator's tmux client; nil: off.
	display func(ctx context.Context, text string) error
	// command runs through sh -c; empty: off.
	command string
	// dispatch delivers to the desktop, ntfy and webhook channels
	// (wake/notify); nil: none configured.
	dispatch *notify.Dispatcher
	log      *slog.Logger
}

// Notifier builds the notifications of a process from the config: the
// command (empty: none), the message on the operator's tmux client
// (display; nil: none) and the configured channels (desktop, ntfy,
// webhook) with their routes, which report their problems on svc's
// snapshot when it takes them; terminal takes desktop notifications as
// OSC escapes (nil: none). Run it beside the service.
func (a *App) Notifier(svc any, command string, display func(context.Context, string) error, terminal io.Writer) (*Notifier, error) {
	n, err := newNotifier(a.Settings.File.Notify.Reasons, command, display, a.Log)
	if err == nil {
		n.dispatch, err = a.newDispatcher(ChannelFace{Push: true, Desktop: true, Terminal: terminal}, n.reasons, problemReporter(svc, a))
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	return n, nil
}

// DisplayOnly is n with only its message on the operator's tmux client:
// a dashboard attached to a daemon leaves the command and the channels to
// the daemon.
func (n *Notifier) DisplayOnly() *Notifier {
	return &Notifier{reasons: n.reasons, display: n.display, log: n.log}
}

// newNotifier builds the Notifier from the config. The reasons default to
// every reason that needs a person (not heartbeat and summary, which
// are information).
func newNotifier(reasons []string, command string, display func(context.Context, string) error, log *slog.Logger) (*Notifier, error) {
	n := &Notifier{command: command, display: display, log: log}
	if len(reasons) == 0 {
		n.reasons = api.PersonReasons()
	}
	for _, r := range reasons {
		if !api.Reason(r).Known() {
			return nil, fmt.Errorf("notify.reasons: unknown wake reason %q (known: %s)", r, reasonList())
		}
		n.reasons = append(n.reasons, api.Reason(r))
	}
	return n, nil
}

func reasonList() string {
	var s []string
	for _, r := range api.Reasons() {
		s = append(s, string(r))
	}
	return strings.Join(s, ", ")
}

// Active reports whether the Notifier has anything to do.
func (n *Notifier) Active() bool {
	return n != nil && (n.display != nil || n.command != "" || n.dispatch.Active())
}

// Run announces every wake raised from now on until ctx ends. Wakes that
// were pending when it started are not announced again, unless they were
// raised at or after from (zero: none): a dashboard subscribing anew after
// its daemon went announces the wakes raised while it had no stream,
// which no one announced.
func (n *Notifier) Run(ctx context.Context, svc api.Service, from time.Time) error {
	if !n.Active() {
		return nil
	}
	if n.dispatch.Active() {
		dispatched := make(chan struct{})
		go func() {
			defer close(dispatched)
			if err := n.dispatch.Run(ctx, svc); err != nil {
				n.log.Warn("notify: channels stopped", "err", err)
			}
		}()
		defer func() { <-dispatched }()
	}
	if n.display == nil && n.command == "" {
		<-ctx.Done()
		return nil
	}
	msgs, err := svc.SubscribeWakes(ctx, api.WakeFilter{Reasons: n.reasons})
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	queue := make(chan api.Wake, notifyQueue)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range queue {
			n.runCommand(ctx, ev)
		}
	}()
	defer func() { close(queue); <-done }()
	dropped := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			if m.Kind != api.WakeRaised || (m.Replayed && (from.IsZero() || m.Event.Time.Before(from))) || !slices.Contains(n.reasons, m.Event.Reason) {
				continue
			}
			if n.display != nil {
				if err := n.display(ctx, "system3: "+wakeLine(m.Event)); err != nil {
					n.log.Debug("notify: tmux message", "err", err)
				}
			}
			if n.command == "" {
				continue
			}
			select {
			case queue <- m.Event:
			default:
				dropped++
				n.log.Warn("notify: command is slower than the wakes; dropped one", "wake", m.Event.ID, "dropped", dropped)
			}
		}
	}
}

// wakeLine is one short line about a wake, for a status line.
func wakeLine(ev api.Wake) string {
	s := fmt.Sprintf("%s in %s", ev.Reason, ev.Place())
	if ev.Question != "" {
		s += ": " + ev.Question
	}
	if ev.SuggestedAction != "" {
		s += " (" + ev.SuggestedAction + ")"
	}
	return s
}

// runCommand runs the notification command with ev as JSON on stdin, in a
// process group that is killed at the timeout.
func (n *Notifier) runCommand(ctx context.Context, ev api.Wake) {
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	in, err := json.Marshal(ev)
	if err != nil {
		n.log.Warn("notify: encode wake", "err", err)
		return
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", n.command)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	cmd.Env = append(cmd.Environ(), "SYSTEM3_WAKE_ID="+ev.ID, "SYSTEM3_WAKE_REASON="+string(ev.Reason),
		"SYSTEM3_WAKE_SESSION="+ev.Session, "SYSTEM3_WAKE_TEXT="+wakeLine(ev))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		n.log.Warn("notify: command failed", "command", n.command, "wake", ev.ID, "err", err, "output", tail(out.String(), 500))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
