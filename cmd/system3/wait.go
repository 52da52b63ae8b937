package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
)

// errWaitTimeout is the cause of wait's context when --timeout passes.
var errWaitTimeout = errors.New("wait timed out")

func newWaitCmd(a *app) *cobra.Command {
	var (
		reasons  []string
		session  string
		timeout  time.Duration
		asJSON   bool
		host     string
		allHosts bool
		since    string
		resolved bool
		forAgent bool
	)
	cmd := &cobra.Command{
		Use:   "wait",
		Short: "Block until an agent needs attention, then print the wake",
		Long: fmt.Sprintf(`Block until a wake matches (an agent awaiting input, an error loop, a failed
worker, an API error, an idle session...), print it and exit 0. A matching
wake that is already open is printed at once, and keeps being printed by
every wait until it is resolved (its condition ended: the prompt was
answered, the agent moved on) or acknowledged with `+"`system3 ack ID`"+`.
Resolved wakes are skipped unless --include-resolved; every wake printed
says its status (docs/wakes.md). `+"`system3 wakes`"+` lists them.

This is how a supervising Claude Code session gets woken: run wait as a
background command (the Bash tool with run_in_background). Its completion
wakes the main thread, which reads the wake, acts on it (answers the prompt,
restarts the worker...), acks it, and starts the next wait.

wait uses the monitors of the system3 that is already running for this state
dir; without one, it runs its own until it returns and serves them to other
system3 commands meanwhile, so several waits share one set of monitors. If
the process serving a wait stops first, the wait carries on with another.

--reason takes one or more of (comma-separated or repeated; default all):
%s
--session is a glob on the tmux session name, like 'orch-*'. --json prints
the wake as one line of JSON.

--for-agent prints the wake as a brief a supervising agent acts on at once
(docs/supervising.md): what happened and where, the agent's text quoted and
marked as data, the commands and MCP tools that act on it, how many more
wakes wait, and the next wait to run with its cursor. --since N skips every
wake up to seq N (the cursor the last brief gave), so a loop of waits
returns each wake once, oldest first, without acknowledging it; wakes
resolved meanwhile are skipped. Run it as a background task of the
supervisor (Claude Code's Bash tool with run_in_background): it completes,
and wakes the idle supervisor, only when there is something to do.

--all-hosts waits on this machine (the host named local) and every host of
the config's hosts: section at once, over ssh (docs/remote.md); --host NAME
on one. The wake's session is then HOST:SESSION (--session takes HOST:GLOB
too), and the wake carries a cursor (HOST:SEQ,...): --since CURSOR skips
every wake seen up to it, so a loop passing each cursor to the next wait
gets every wake once, without acknowledging it. A host whose link drops is
reconnected with backoff (1 s doubling to 30 s), saying why on stderr, and
its wakes raised meanwhile are delivered then, from its journal.

Exit status: 0 a wake was printed, 2 --timeout passed first, 130 interrupted,
1 any other error.`, wrapIndent(joinReasons(api.Reasons()), "  ", 78)),
		Example: `  system3 wait
  system3 wait --reason awaiting_input,error_loop_detected --session 'orch-*'
  system3 wait --timeout 30m --json
  system3 wait --for-agent --since 41
  id=$(system3 wait --json | jq -r .id) && system3 ack "$id"
  system3 wait --all-hosts --json --since local:12,web1:40`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := waitFilter(reasons, session)
			if err != nil {
				return err
			}
			f.IncludeResolved = resolved
			if timeout < 0 {
				return fmt.Errorf("--timeout %v is negative; use 0 to wait for ever", timeout)
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, timeout, errWaitTimeout)
				defer cancel()
			}
			var ev api.Wake
			var hw api.HostWake
			if host != "" || allHosts {
				var names []string
				var cur api.HostCursor
				names, err = a.selectHosts(host, allHosts)
				if err == nil {
					cur, err = parseSince(since, names)
				}
				if err != nil {
					return err
				}
				hw, err = a.waitHosts(ctx, names, f, cur)
			} else {
				if f.SinceSeq, err = localSince(since); err != nil {
					return err
				}
				if forAgent {
					fmt.Fprintf(a.stdout, "system3: waiting for the next wake after cursor %d (%s)\n", f.SinceSeq, "if this is killed, run the same command again: nothing is lost")
				}
				ev, err = a.waitWake(ctx, f)
			}
			if err != nil {
				switch {
				case errors.Is(context.Cause(ctx), errWaitTimeout):
					if forAgent {
						fmt.Fprintf(a.stdout, "system3: no wake within %v: nothing needs you. Wait again, in the background:\n  %s\n", timeout, nextWait(cmd, since))
					}
					return &exitError{code: 2, msg: fmt.Sprintf("no matching wake within %v", timeout)}
				case cmd.Context().Err() != nil:
					return &exitError{code: 130, msg: "interrupted before a matching wake"}
				}
				return err
			}
			if forAgent {
				return a.printBrief(ctx, cmd, f, ev, hw, host != "" || allHosts)
			}
			if host != "" || allHosts {
				return a.printHostWake(hw, asJSON)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				return enc.Encode(ev)
			}
			return writeWake(a.stdout, ev, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&reasons, "reason", nil, "only wakes with these reasons (comma-separated or repeated)")
	fl.StringVar(&session, "session", "", "only wakes from tmux sessions matching this glob, like 'orch-*'")
	fl.DurationVar(&timeout, "timeout", 0, "give up after this long and exit 2, like 90s or 30m (default: wait for ever)")
	fl.BoolVar(&asJSON, "json", false, "print the wake as one line of JSON")
	fl.StringVar(&host, "host", "", "wait on this host of the config (or local); sessions are HOST:SESSION")
	fl.BoolVar(&allHosts, "all-hosts", false, "wait on this machine and every host of the config; sessions are HOST:SESSION")
	fl.StringVar(&since, "since", "", "skip wakes up to this cursor, as a previous wait printed it: SEQ (this machine), or HOST:SEQ,... with --all-hosts or --host")
	fl.BoolVar(&forAgent, "for-agent", false, "print the wake as a brief for a supervising agent: how to act on it and the next wait to run")
	cmd.MarkFlagsMutuallyExclusive("json", "for-agent")
	fl.BoolVar(&resolved, "include-resolved", false, "also return wakes whose condition ended (an answered prompt, an agent that moved on)")
	return cmd
}

// waitWake waits through whichever process runs the monitors. When that
// process stops mid-wait (another `system3 wait` that got its wake, say),
// the client asks again: a running system3, or monitors of its own, and
// the wake, journaled and unacked, is still there. It asks again as long
// as each stop found a service to go on with.
func (a *app) waitWake(ctx context.Context, f api.WakeFilter) (api.Wake, error) {
	svc, err := a.Client(ctx, core.RunMonitors)
	if err != nil {
		return api.Wake{}, err
	}
	defer a.Release(svc.Close)
	for {
		before := svc.Current()
		ev, err := svc.WaitWake(ctx, f)
		if ipc.DaemonGone(err) && ctx.Err() == nil && svc.Current() != before {
			a.Log.Info("the system3 serving this wait stopped; asking again")
			continue
		}
		return ev, err
	}
}

// waitFilter checks the flags a person typed, so a typo is an error rather
// than a wait that never returns.
func waitFilter(reasons []string, session string) (api.WakeFilter, error) {
	var f api.WakeFilter
	for _, r := range reasons {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !api.Reason(r).Known() {
			return f, fmt.Errorf("unknown reason %q; valid reasons: %s", r, joinReasons(api.Reasons()))
		}
		f.Reasons = append(f.Reasons, api.Reason(r))
	}
	f.Session = session
	return f, f.Validate()
}

func joinReasons(rs []api.Reason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// wrapIndent wraps s at spaces into lines of at most width, each indented.
func wrapIndent(s, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if line != indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}

// writeWake prints one wake as a block a person or an agent can act on.
// Every text in it came from a terminal, so it is sanitized.
func writeWake(w io.Writer, ev api.Wake, now time.Time) error {
	return writeWakeAck(w, ev, now, "system3 ack "+ev.ID)
}

// writeWakeAck is writeWake with the command that acknowledges it.
func writeWakeAck(w io.Writer, ev api.Wake, now time.Time, ackCmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "wake %s: %s\n", sanitize(ev.ID), sanitize(string(ev.Reason)))
	field := func(label, text string) {
		for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if i > 0 {
				label = ""
			}
			if line != "" || i > 0 {
				fmt.Fprintf(&b, "  %-10s %s\n", label, sanitize(line))
			}
		}
	}
	field("status", wakeStatus(ev))
	field("session", ev.Place())
	field("agent", ev.Agent)
	field("state", stateKind(ev.State, ev.Kind))
	field("age", fmt.Sprintf("%s (raised %s)", age(now.Sub(ev.Time)), ev.Time.Local().Format("2006-01-02 15:04:05")))
	field("question", ev.Question)
	if ev.Reason == api.ReasonAwaitingInput {
		field("about", ev.Details)
	}
	if ev.Reason == api.ReasonUsageLimit {
		field("limit", api.ResetText(ev.ResetsAt.Local(), now))
	}
	for i, o := range ev.Options {
		field("", fmt.Sprintf("%d. %s", i+1, o))
	}
	if t := ev.Tasks; t != nil {
		s := fmt.Sprintf("%s: %d/%d done", t.ListID, t.Completed, t.Total)
		if len(t.InProgress) > 0 {
			s += "; in progress: " + strings.Join(t.InProgress, "; ")
		}
		field("tasks", s)
	}
	field("suggested", ev.SuggestedAction)
	if e := ev.Evidence; e.Rule != "" || e.Source != "" {
		s := strings.TrimSpace(e.Source + " rule " + e.Rule)
		if len(e.Lines) > 0 {
			s += ": " + e.Lines[0]
		}
		field("evidence", s)
	}
	if ev.Reason != api.ReasonAwaitingInput {
		field("details", ev.Details)
	}
	if ev.Reason == api.ReasonAwaitingInput && !ev.Resolved && ev.Prompt != "" {
		field("answer with", "system3 answer --wake "+ev.ID+" N")
	}
	if ev.Acked {
		field("acked", fmt.Sprintf("by %s at %s", api.ShortOrigin(ev.AckedBy), ev.AckedAt.Local().Format("15:04:05")))
	} else {
		field("ack with", ackCmd)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wakeStatus is a wake's status in the lifecycle's words, with how it
// was resolved.
func wakeStatus(ev api.Wake) string {
	s := ev.Status()
	if ev.Resolved && ev.Resolution != "" {
		s = strings.Replace(s, api.StatusResolved, api.StatusResolved+" ("+ev.Resolution+")", 1)
	}
	return s
}

func stateKind(state, kind string) string {
	if kind == "" {
		return state
	}
	return state + "/" + kind
}

func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String() + " ago"
}

// parseSince reads --since: a cursor that wait --all-hosts or --host
// printed, naming only local and the hosts of the config.
func parseSince(s string, known []string) (api.HostCursor, error) {
	c, ok := api.ParseHostCursor(s)
	if !ok {
		return nil, fmt.Errorf("--since %q: each part must be HOST:SEQ, like local:12,web1:40 (the cursor a previous wait --json printed)", s)
	}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("--since names host %q, which is not local or a host of the config", name)
		}
	}
	return c, nil
}
