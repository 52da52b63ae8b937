package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/hooks"
)

// Time budget of `system3 hook`: Claude Code waits for it (PreToolUse
// holds the tool back), so it gives up on the daemon quickly, spools, and
// returns within hookBudget whatever happens. A PermissionRequest is the
// exception: the daemon may hold it while the approval policy asks a
// person or a supervising agent, up to hooks.PermissionBudget.
const (
	hookDeliver = 500 * time.Millisecond
	hookBudget  = 900 * time.Millisecond
)

func newHookCmd(a *app) *cobra.Command {
	var event string
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Deliver one agent hook event to system3 (Claude Code, Codex, Gemini, Copilot, Qwen Code or Cline runs this)",
		Long: `Read one Claude Code hook payload (JSON) on stdin, add the tmux pane it ran in
($TMUX_PANE), and deliver it to the running system3 over its socket in the
state dir. Claude Code runs this command from the hooks that system3 hooks
print shows and system3 hooks install adds; you do not run it yourself.

It never slows down or breaks the agent: it exits 0 within a second
whatever happens (a PermissionRequest the policy asks about: within the
policy's ask_timeout), and when no system3 runs (or it does not answer within
half a second) it appends the event to the spool (hooks.spool in the state
dir), which system3 reads when it starts. A payload that is not a hook
event is logged to system3.log and dropped.

It prints nothing, with three exceptions. A PermissionRequest the approval
policy decides (docs/policy.md) is answered with Claude Code's
{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision":
{"behavior": "allow"}}} (or "deny" with a "message"): the tool call is
allowed or refused without its dialog. A request the policy asks about is
held while its wake goes out, up to the policy's ask_timeout (45s by
default, within the minute Claude Code gives this hook), and answered with
the answer given on that wake; without one, it prints nothing and the
dialog shows. Qwen Code's hooks are Claude Code's: its PermissionRequest is
answered the same way. GitHub Copilot CLI's permissionRequest is decided the same
way and answered in its words, {"behavior": "allow"} or {"behavior":
"deny", "message": "..."}. The Gemini CLI's BeforeTool is decided the same way and
always answered, in Gemini's words: {"decision": "allow"}, {"decision":
"deny", "reason": "..."}, or {"decision": "ask"} when nothing decides it
(no rule, no answer in time, no system3 running), which makes Gemini show
its own dialog. The Cline CLI's PreToolUse (tool_call) can only be
refused: a deny is answered with {"cancel": true, "errorMessage": "..."},
which stops Cline's turn, and anything else with nothing, which leaves the
call to Cline's dialog. And when the pane is the supervisor pane of the config
(supervisor.session) and a wake waits for it, its Stop event is answered
with {"decision": "block", "reason": "<the wake's brief>"}, so Claude Code
goes on with the wake instead of going idle (see docs/supervising.md).

system3 takes the event only from a process that runs in the pane it names
(its parent processes lead to the pane's process), or signed with the
token system3 gave the agents it started ($SYSTEM3_HOOK_TOKEN); spooled
events need the token. Others are refused, logged and audited. A hook run
below Cline's hub daemon, which runs the sessions of any pane with the
environment of the Cline that started it, is dropped: it cannot be tied
to a pane.

--event names the event when the payload names none: GitHub Copilot CLI's
hooks say which event they are only by the entry that runs them, so
system3 hooks install --agent copilot gives each entry its event. See
docs/hooks.md.`,
		Args:        cobra.ArbitraryArgs, // a newer settings snippet may pass more
		Annotations: map[string]string{skipSetup: "1"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.runHook(cmd.Context(), event)
			return nil
		},
	}
	cmd.Flags().StringVar(&event, "event", "", "the event's name when the agent's payload names none (GitHub Copilot CLI's agentStop)")
	return cmd
}

// runHook is `system3 hook`, for the event the payload names (else the
// one --event names). It prints only a reply the daemon gave for the
// agent; everything else goes to the log.
func (a *app) runHook(ctx context.Context, event string) {
	start := time.Now()
	if err := a.setup(); err != nil {
		// A broken config file must not cost the event: find the state
		// dir without it.
		dirs := config.DirsFrom(a.Getenv)
		a.Settings.StateDir = config.ExpandHome(firstNonEmpty(a.flags.StateDir, a.Getenv(config.EnvStateDir), dirs.DefaultStateDir()), dirs.Home)
		a.Log = slog.New(slog.DiscardHandler)
		a.UseLog(a.Settings.StateDir, slog.LevelInfo)
		a.Log.Warn("hook: config", "err", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hooks.PermissionBudget)
	defer cancel()
	done := make(chan api.HookReply, 1)
	// held gets the reply for no decision once the event is known to be
	// a tool call the policy may decide (a PermissionRequest, a Gemini
	// BeforeTool): it alone may take longer than hookBudget, and is
	// answered with that reply if no decision comes in time.
	held := make(chan api.HookReply, 1)
	go func() { done <- a.deliverHook(ctx, start, event, held) }()
	budget := time.NewTimer(hookBudget)
	defer budget.Stop()
	var fallback api.HookReply
	for {
		select {
		case r := <-done:
			a.writeReply(r)
			return
		case fallback = <-held:
			held = nil
			budget.Stop()
			continue
		case <-budget.C:
		case <-ctx.Done():
		}
		a.Log.Warn("hook: out of time; the event may be lost", "took", time.Since(start))
		a.writeReply(fallback)
		return
	}
}

// writeReply prints a reply for the agent; an empty one prints nothing.
func (a *app) writeReply(r api.HookReply) {
	if out := r.Output(); out != nil {
		if _, err := a.stdout.Write(out); err != nil {
			a.Log.Warn("hook: the reply could not be written", "err", err)
		}
	}
}

// deliverHook reads the event, delivers it (or spools it) and returns the
// daemon's reply for the agent. A Gemini BeforeTool the daemon does not
// answer (none runs, it refused the event) is answered with "ask", so
// Gemini shows its own dialog, and a Copilot permissionRequest with
// nothing, so Copilot shows its: neither is spooled, nothing reads them
// later (PolicyOnly).
func (a *app) deliverHook(ctx context.Context, start time.Time, event string, held chan<- api.HookReply) api.HookReply {
	rctx, rcancel := context.WithTimeout(ctx, hookBudget)
	data, err := readBounded(rctx, a.stdin, hooks.MaxPayload)
	rcancel()
	if err != nil {
		a.Log.Warn("hook: read stdin", "err", err)
		return api.HookReply{}
	}
	ev, err := hooks.ParseAs(data, event)
	if err != nil {
		a.Log.Warn("hook: payload dropped", "err", err, "bytes", len(data))
		return api.HookReply{}
	}
	if hub, agent := monitor.HubAbove(os.Getpid(), 0); hub > 0 {
		// Run by an agent's hub (Cline's), for a session of any pane:
		// the pane and the token it inherited are those of the CLI that
		// started the hub. Nothing is delivered, signed or spooled.
		a.Log.Info("hook: dropped: it runs under a hub, which runs the sessions of any pane", "event", ev.Name, "agent", agent, "hub", hub)
		return hooks.DecisionReply(ev.Name, "", "")
	}
	ev = hooks.Stamp(ev, start)
	ev.Pane = a.Getenv("TMUX_PANE")
	if tok := a.Getenv(hooks.TokenEnv); tok != "" {
		// An agent system3 started: sign the event, so it is taken from
		// the spool too. The token itself is never written down.
		ev = hooks.Sign(ev, tok)
	}
	wait := hookDeliver
	var undecided api.HookReply
	if ev.AsksPermission() {
		// The daemon may hold it while the policy asks.
		undecided = hooks.DecisionReply(ev.Name, "", "")
		held <- undecided
		wait = hooks.PermissionBudget
	}
	reply, err := sendHook(ctx, a.SocketPath(), ev, wait)
	if err == nil {
		a.Log.Debug("hook delivered", "event", ev.Name, "pane", ev.Pane, "took", time.Since(start), "reply", reply.Decision)
		if reply.Empty() {
			// A daemon that decides nothing (one older than this hook)
			// still lets Gemini show its dialog.
			return undecided
		}
		return reply
	}
	if errors.Is(err, api.ErrHookRefused) {
		// The daemon could not tell that this process runs in the pane
		// it names: spooling it would only have it refused again.
		a.Log.Warn("hook refused", "event", ev.Name, "pane", ev.Pane, "err", err)
		return undecided
	}
	if ev.PolicyOnly() {
		a.Log.Log(ctx, logLevelFor(err), "hook: the agent's own dialog shows", "event", ev.Name, "pane", ev.Pane, "why", err, "took", time.Since(start))
		return undecided
	}
	sp := hooks.Spool{Path: filepath.Join(a.Settings.StateDir, hooks.SpoolFile)}
	if mkErr := os.MkdirAll(a.Settings.StateDir, 0o700); mkErr != nil {
		a.Log.Warn("hook: cannot spool", "event", ev.Name, "err", mkErr)
		return api.HookReply{}
	}
	if serr := sp.Append(ev); serr != nil {
		a.Log.Warn("hook: event lost", "event", ev.Name, "deliver_err", err, "spool_err", serr)
		return api.HookReply{}
	}
	a.Log.Log(ctx, logLevelFor(err), "hook spooled", "event", ev.Name, "pane", ev.Pane, "why", err, "took", time.Since(start))
	return api.HookReply{}
}

// logLevelFor is how loudly to log an event the daemon did not take: no
// daemon running is ordinary.
func logLevelFor(err error) slog.Level {
	if errors.Is(err, ipc.ErrNoDaemon) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// sendHook delivers ev and waits at most wait for the reply; reaching the
// daemon takes at most hookDeliver.
func sendHook(ctx context.Context, path string, ev api.HookEvent, wait time.Duration) (api.HookReply, error) {
	dctx, cancel := context.WithTimeout(ctx, hookDeliver)
	c, err := ipc.Dial(dctx, path)
	cancel()
	if err != nil {
		return api.HookReply{}, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return c.Hook(cctx, ev)
}

// readBounded reads r to its end, at most max bytes, or until ctx ends.
func readBounded(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, max+1))
		ch <- result{b, err}
	}()
	select {
	case res := <-ch:
		if res.err == nil && int64(len(res.b)) > max {
			return nil, fmt.Errorf("%w: more than %d bytes on stdin", hooks.ErrTooLarge, max)
		}
		return res.b, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("stdin not closed in time: %w", ctx.Err())
	}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
