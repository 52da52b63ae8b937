package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

func newWatchCmd(a *app) *cobra.Command {
	var asJSON, allHosts bool
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Stream session state changes and wakes as they happen",
		Long: `Print every session once, then one line per change as it happens: a session
appearing, changing state (working, idle, awaiting input, error...) or going
away, and a wake being raised, resolved or acknowledged (docs/wakes.md). Runs until
interrupted (Ctrl-C), then exits 0.

Text lines start with the time, then "session" or "wake". A session line
shows the pane's target and id, the agent, the previous and new state/kind
and the rule that decided it. A wake line shows what happened to it, its id,
reason, session and pane; a wake open when watch started shows as "open"
(or "resolved", not yet acknowledged), a resolved one says how.

With --json, each line is one JSON object with a "type" of "session" or
"wake" and a "kind": snapshot, added, changed or removed for sessions;
raised, resolved or acked for wakes (raised with "replayed": true for
wakes already open when watch started).

watch uses the monitors of the system3 already running for this state dir
(the dashboard or ` + "`system3 serve`" + `); without one, it runs its own.

With --all-hosts, the sessions and wakes of every host of the config's
hosts: are followed too (two ssh streams per host), named HOST:SESSION and
HOST:ID, with "host" set in JSON; a host that connects or drops is printed
as a resync of what it shows. See docs/remote.md.`,
		Example: `  system3 watch
  system3 watch --json | jq -c 'select(.type == "wake")'
  system3 watch --all-hosts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			fo, err := a.Client(ctx, core.RunMonitors)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			defer a.Release(fo.Close)
			var svc facade.Service = fo
			if allHosts {
				if len(a.RemoteHosts()) == 0 {
					return fmt.Errorf("--all-hosts: the config (%s) has no hosts: section; see docs/remote.md", a.Settings.ConfigPath)
				}
				svc = a.FleetOf(fo)
			}
			return runWatch(ctx, svc, &watchPrinter{w: a.stdout, json: asJSON, now: time.Now})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	cmd.Flags().BoolVar(&allHosts, "all-hosts", false, "also follow every host of the config's hosts: (HOST:SESSION)")
	return cmd
}

// runWatch prints the registry, then its changes and the wakes, until ctx
// ends (nil) or the service ends the streams (an error: the monitors went away).
func runWatch(ctx context.Context, svc api.Service, p *watchPrinter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribe before taking the snapshot, so no change falls between the
	// two; the printer skips what the snapshot already showed.
	updates, err := svc.Watch(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	wakes, err := svc.SubscribeWakes(ctx, api.WakeFilter{})
	if err != nil {
		return quiet(ctx, err)
	}
	snap, err := svc.Snapshot(ctx)
	if err != nil {
		return quiet(ctx, err)
	}
	p.snapshot(snap)

	for p.err == nil {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				return quiet(ctx, errMonitorsGone)
			}
			if u.Kind.OfSession() {
				p.update(u)
				continue
			}
			if u.Kind != api.Resync {
				continue // the server's state and the problem: the snapshot's
			}
			snap, err := svc.Snapshot(ctx)
			if err != nil {
				return quiet(ctx, err)
			}
			p.resync(snap)
		case m, ok := <-wakes:
			if !ok {
				return quiet(ctx, errMonitorsGone)
			}
			if m.Kind != api.WakeResync {
				p.wake(m)
				continue
			}
			evs, err := svc.Wakes(ctx, api.WakeFilter{})
			if err != nil {
				return quiet(ctx, err)
			}
			p.pendingWakes(evs)
		}
	}
	return p.err
}

var errMonitorsGone = errors.New("the monitors stopped, so watch ended; is the system3 dashboard or serve still running?")

// quiet drops errors caused by the interrupt that ends watch.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watchLine is one line of `watch --json`.
type watchLine struct {
	Type     string       `json:"type"` // "session" or "wake"
	Kind     string       `json:"kind"` // session: snapshot, added, changed, removed; wake: raised, acked, cleared
	Time     time.Time    `json:"time"`
	Previous api.State    `json:"previous,omitempty"`
	Session  *api.Session `json:"session,omitempty"`
	Wake     *api.Wake    `json:"wake,omitempty"`
	Replayed bool         `json:"replayed,omitempty"`
}

// watchPrinter prints changes once each: it remembers what it showed, so the
// overlap between the subscription and the snapshot, and updates that
// change nothing a person sees, print nothing.
type watchPrinter struct {
	w    io.Writer
	json bool
	now  func() time.Time
	err  error // the first write error; watch stops on it

	sessions map[string]api.Session // by pane
	wakes    map[string]bool        // ids of wakes shown as raised
}

func (p *watchPrinter) snapshot(s api.Snapshot) {
	p.sessions = map[string]api.Session{}
	p.wakes = map[string]bool{}
	if !p.json {
		switch {
		case !s.Running:
			p.printf("no tmux server is running (%s); watching for one (Ctrl-C to stop)\n", s.Server)
		default:
			names := make([]string, len(s.Sessions))
			for i, sess := range s.Sessions {
				names[i] = sess.Session
			}
			p.printf("%s: %s; watching (Ctrl-C to stop)\n", s.Server, sessionsAndPanes(names))
		}
		if s.Problem != "" {
			p.printf("problem: %s\n", sanitize(s.Problem))
		}
	}
	for _, sess := range s.Sessions {
		p.sessions[sess.Pane] = sess
		p.session("snapshot", sess, "", "")
	}
}

func (p *watchPrinter) update(u api.Update) {
	s := u.Session
	prev, seen := p.sessions[s.Pane]
	switch u.Kind {
	case api.SessionRemoved:
		if seen {
			delete(p.sessions, s.Pane)
			p.session("removed", prev, "", "")
		}
	default:
		p.sessions[s.Pane] = s
		if seen && prev.State == s.State && prev.Kind == s.Kind && prev.Agent == s.Agent {
			return
		}
		previous, from := u.Previous, string(u.Previous)
		if seen {
			previous, from = prev.State, stateKind(string(prev.State), prev.Kind)
		}
		kind := "changed"
		if !seen {
			kind = "added"
		}
		p.session(kind, s, previous, from)
	}
}

// resync prints what changed while updates were being dropped.
func (p *watchPrinter) resync(s api.Snapshot) {
	now := map[string]bool{}
	for _, sess := range s.Sessions {
		now[sess.Pane] = true
		p.update(api.Update{Kind: api.SessionChanged, Session: sess})
	}
	for pane, sess := range p.sessions {
		if !now[pane] {
			p.update(api.Update{Kind: api.SessionRemoved, Session: sess})
		}
	}
}

func (p *watchPrinter) wake(m api.WakeMessage) {
	ev := m.Event
	switch m.Kind {
	case api.WakeRaised:
		if p.wakes[ev.ID] {
			return
		}
		p.wakes[ev.ID] = true
		p.wakeLine("raised", ev, ev.Time, m.Replayed)
	case api.WakeAcked:
		delete(p.wakes, ev.ID)
		p.wakeLine("acked", ev, ev.AckedAt, false)
	case api.WakeResolved:
		p.wakeLine("resolved", ev, ev.ResolvedAt, false)
	}
}

// pendingWakes prints the pending wakes not shown yet, after messages were
// dropped.
func (p *watchPrinter) pendingWakes(evs []api.Wake) {
	for _, ev := range evs {
		p.wake(api.WakeMessage{Kind: api.WakeRaised, Event: ev, Replayed: true})
	}
}

// session prints one session line; from is the state/kind shown before.
func (p *watchPrinter) session(kind string, s api.Session, previous api.State, from string) {
	at := s.Since
	if kind == "removed" || at.IsZero() {
		at = p.now()
	}
	if p.json {
		p.encode(watchLine{Type: "session", Kind: kind, Time: at, Previous: previous, Session: &s})
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s session  %s", clock(at), sanitize(sessionPlace(s)))
	if s.Agent != "" {
		fmt.Fprintf(&b, "  %s", sanitize(s.Agent))
	}
	state := stateKind(string(s.State), s.Kind)
	switch {
	case kind == "removed":
		b.WriteString("  removed")
	case from != "" && from != state:
		fmt.Fprintf(&b, "  %s → %s", sanitize(from), state)
	case kind == "added":
		fmt.Fprintf(&b, "  new, %s", state)
	default:
		fmt.Fprintf(&b, "  %s", state)
	}
	if kind != "removed" && s.Evidence.Rule != "" {
		fmt.Fprintf(&b, "  (rule %s)", sanitize(s.Evidence.Rule))
	}
	p.printf("%s\n", b.String())
}

func (p *watchPrinter) wakeLine(kind string, ev api.Wake, at time.Time, replayed bool) {
	if at.IsZero() {
		at = p.now()
	}
	if p.json {
		p.encode(watchLine{Type: "wake", Kind: kind, Time: at, Wake: &ev, Replayed: replayed})
		return
	}
	label := kind
	if replayed {
		label = "open"
		if ev.Resolved {
			label = "resolved"
		}
	}
	line := fmt.Sprintf("%s wake     %-8s %s  %s  %s", clock(at), label, sanitize(ev.ID), sanitize(string(ev.Reason)), sanitize(ev.Place()))
	switch {
	case kind == "acked":
		line += "  by " + sanitize(api.ShortOrigin(ev.AckedBy))
	case kind == "resolved":
		line += "  " + sanitize(ev.Resolution)
	case kind == "raised" && ev.Question != "":
		line += fmt.Sprintf("  %q", sanitize(ev.Question))
	}
	p.printf("%s\n", line)
}

// sessionPlace is "target %pane", falling back to the session name.
func sessionPlace(s api.Session) string {
	target := s.Target
	if target == "" {
		target = s.Session
	}
	return strings.TrimSpace(target + " " + s.Pane)
}

func clock(t time.Time) string { return t.Local().Format("15:04:05") }

func (p *watchPrinter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *watchPrinter) encode(v watchLine) {
	if p.err != nil {
		return
	}
	enc := json.NewEncoder(p.w)
	enc.SetEscapeHTML(false)
	p.err = enc.Encode(v)
}
