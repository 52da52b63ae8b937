package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tui"
)

const dashboardLong = `Open the dashboard: every agent pane on the tmux server with its state,
how long it has been in it, task progress and the question it asks; the
wakes that need attention; and a live preview of the selected pane. From
the keyboard you can answer a prompt (1-9, y, n), type guidance into a pane
(i), interrupt an agent (x), acknowledge wakes (a, A), jump into a pane
(o) and see what system3 has learnt (L). Press ? for every key (also in
docs/keys.md).

If a system3 daemon (` + "`system3 serve`" + `, or another dashboard) already monitors
this state dir, the dashboard attaches to it and quitting leaves it running;
if that daemon stops, the rows are marked stale and, after
dashboard.takeover_after (2s), the dashboard runs the monitors itself (or
attaches to another daemon that started meanwhile). Otherwise the dashboard
runs the monitors itself and stops them when it quits. When system3 detects a loop (a behaviour pattern), r sends the agent
its reminder. New wakes ring the terminal bell (notify.bell in the config),
can show a tmux message (notify.tmux_message), run a command
(notify.command), show desktop notifications (notify.desktop) and push to
ntfy or a webhook (notify.ntfy, notify.webhook; see docs/notifications.md).
The MCP server's address also serves the web page (system3 web).

Try it without any agent of your own: system3 demo`

func newTUICmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "Open the dashboard (the same as system3 with no command)",
		Long:  dashboardLong,
		Example: `  system3
  system3 --tmux-socket work tui`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDashboard(cmd.Context()) },
	}
}

// runDashboard runs the TUI on the monitors of this state dir (a running
// daemon's, or its own) until the operator quits.
func (a *app) runDashboard(ctx context.Context) error {
	if f, ok := a.term.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		return errors.New("the dashboard needs a terminal; for scripts use `system3 status`, `system3 watch` or `system3 wait`")
	}
	a.Dashboard = true
	defer func() { a.Dashboard = false }()
	// A dashboard attached to a daemon outlives it: when the daemon goes,
	// its client takes the state dir over (or attaches to the daemon that
	// won it), so monitoring and the journal go on.
	fo, err := a.Client(ctx, core.RunMonitors)
	if err != nil {
		return err
	}
	defer a.Release(fo.Close)
	var svc facade.Service = fo
	_, attached := fo.Current().(*ipc.Client)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)

	opts := a.tuiOptions(gctx)
	if attached {
		g.Go(func() error { return fo.Run(gctx) })
		opts.Notice = fo.Notice
	} else if err := a.SocketErr(); err != nil {
		opts.Notice = func() string { return core.SocketWarning(err) }
	}
	var display func(context.Context, string) error
	if op, ok := tmux.OperatorFromEnv(a.Getenv); ok && a.Settings.File.Notify.TmuxMessage {
		display = op.DisplayMessage
	}
	// The command, desktop notifications and pushes come from the process
	// that runs the monitors: while attached to a daemon the dashboard
	// leaves them to it (only the tmux message is its own), and once it
	// has taken the state dir over they are the dashboard's.
	own, err := a.Notifier(svc, a.Settings.File.Notify.Command, display, a.term)
	if err != nil {
		return err
	}
	guest := own.DisplayOnly()
	notifierNow := func() *core.Notifier {
		if _, still := fo.Current().(*ipc.Client); !still {
			return own
		}
		return guest
	}
	status, err := a.dashboardMCP(gctx, g, svc)
	if err != nil {
		return err
	}
	opts.MCP = status
	g.Go(func() error {
		// Notifications are extra: their failure must not close the dashboard.
		backoff := api.Backoff{First: time.Second, Max: time.Second}
		// from: when the last stream ended. The wakes raised since, while
		// this dashboard had no stream (its daemon gone, the takeover on
		// its way), were announced by no one: the next stream does.
		var from time.Time
		for {
			// The service in use, not the client: when the daemon goes,
			// the stream ends and the loop picks the notifier anew.
			n := notifierNow()
			if err := n.Run(gctx, fo.Current(), from); err != nil {
				a.Log.Warn("notifications stopped", "err", err)
			} else {
				from = time.Now()
			}
			if !attached || !own.Active() {
				return nil
			}
			// Attached: the daemon's stream ended; subscribe again to
			// whatever the failover serves now.
			if !backoff.Wait(gctx) {
				return nil
			}
		}
	})
	g.Go(func() error {
		defer cancel() // quitting the dashboard stops the rest
		return tui.Run(gctx, a.FleetOf(svc), opts, a.stdin, a.term)
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// dashboardMCP starts the embedded MCP server (mcp.listen, default
// 127.0.0.1:8889) for the dashboard's lifetime and returns what the header
// shows about it. A taken port is shown, not fatal: the dashboard is useful
// without it (another system3, often `+"`system3 serve`"+`, may hold the port).
func (a *app) dashboardMCP(ctx context.Context, g *errgroup.Group, svc facade.Service) (func() tui.MCPStatus, error) {
	set, err := a.mcpSettings(&mcpFlags{})
	if err != nil {
		return nil, fmt.Errorf("MCP server: %w (or set mcp.listen: off)", err)
	}
	if set.listen == "" {
		return func() tui.MCPStatus { return tui.MCPStatus{} }, nil
	}
	if set.opts.Web, err = a.webHandler(svc, set.opts.Token); err != nil {
		return nil, err
	}
	closeHosts := a.WithHosts(&set.opts)
	srv, err := mcpserver.New(a.FleetOf(svc), set.opts)
	if err != nil {
		closeHosts()
		return nil, err
	}
	if err := srv.Listen(set.listen); err != nil {
		a.Log.Warn("MCP server not started", "err", err)
	}
	g.Go(func() error {
		defer closeHosts()
		defer srv.Close()
		return srv.Serve(ctx)
	})
	return func() tui.MCPStatus {
		st := srv.Status()
		ms := tui.MCPStatus{Addr: st.Addr, Clients: st.Sessions}
		if st.Err != nil {
			// The header has room for what, not for what to do (that is
			// in the log): "MCP port 127.0.0.1:8889 is in use".
			ms.Err, _, _ = strings.Cut(st.Err.Error(), " (")
		}
		return ms
	}, nil
}

// tuiOptions are the dashboard's settings: server, templates, bell, and how
// `o` reaches a pane.
func (a *app) tuiOptions(ctx context.Context) tui.Options {
	srv := a.TmuxServer()
	opts := tui.Options{
		Server: srv.String(),
		Bell:   a.Settings.File.Notify.BellOn(),
		AttachHint: func(s api.Session) string {
			if s.Host != "" {
				// Another host's pane: its own tmux, through ssh.
				dest := s.Host
				if h, err := a.RemoteHost(s.Host); err == nil {
					dest = h.SSH
				}
				_, target, _ := api.SplitHost(s.Target, func(h string) bool { return h == s.Host })
				return "ssh -t " + dest + " " + tmux.Server{}.AttachCommand(target)
			}
			return srv.AttachCommand(s.Target)
		},
	}
	for _, t := range a.Settings.File.Dashboard.Templates {
		opts.Templates = append(opts.Templates, tui.Template{Name: t.Name, Text: t.Text})
	}
	if op, ok := tmux.OperatorFromEnv(a.Getenv); ok && op.SameServer(srv, os.Getuid(), a.Getenv) {
		opts.Jump = func(s api.Session) error { return op.SwitchTo(ctx, s.Pane) }
	}
	opts.Hosts = a.WatchHosts(ctx)
	return opts
}
