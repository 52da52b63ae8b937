package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/wake"
)

func newServeCmd(a *app) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the monitors and the MCP server without the dashboard",
		Long: `Run system3 headless: the monitors of every tmux pane and task list, the
local socket other system3 commands (wait, watch, ack, status) use, and the
MCP server for agents, on Streamable HTTP at http://127.0.0.1:8889/mcp by
default, until interrupted.

Only one system3 monitors a state dir: serve refuses to start while another
one (a dashboard, another serve, a running wait) does.

The server listens on loopback. Listening on another address needs a bearer
token (--token-file, made by system3 token); with a token, every request must
send Authorization: Bearer TOKEN. --read-only offers only the read tools.
--listen off runs the monitors and the socket without the MCP server.
Register it with Claude Code:

  claude mcp add --transport http system3 http://127.0.0.1:8889/mcp

The same address serves the web page for a phone at /web/ (system3 web
prints a sign-in link). New wakes go to the notification channels of the
config (desktop, ntfy, webhook: docs/notifications.md).

See docs/mcp.md for the tools, the resources and the security model.`,
		Example: `  system3 serve
  system3 serve --listen 127.0.0.1:9000 --read-only
  system3 token && system3 serve --listen 0.0.0.0:8889 --token-file ~/.local/state/system3/mcp-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := a.mcpSettings(&f)
			if err != nil {
				return err
			}
			return a.serve(cmd.Context(), set)
		},
	}
	f.register(cmd, true)
	return cmd
}

// serve runs the monitors (which serve the socket) and the MCP server
// until ctx ends.
func (a *app) serve(ctx context.Context, set mcpSettings) error {
	if c, err := ipc.Dial(ctx, a.SocketPath()); err == nil {
		pid := c.PID()
		c.Close()
		return fmt.Errorf("another system3 (pid %d) already monitors state dir %s (a dashboard, serve or wait): use it, stop it, or pass another --state-dir", pid, a.Settings.StateDir)
	} else if !errors.Is(err, ipc.ErrNoDaemon) {
		return err
	}
	svc, stop, err := a.StartMonitors(ctx)
	if errors.Is(err, wake.ErrLocked) {
		return fmt.Errorf("another system3 already monitors state dir %s: %w", a.Settings.StateDir, err)
	}
	if err != nil {
		return err
	}
	defer a.Release(stop)

	// A headless daemon has no terminal to ring or tmux client to show a
	// message on; the notification command, desktop notifications and
	// pushes are how it tells someone.
	n, err := a.Notifier(svc, a.Settings.File.Notify.Command, nil, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		if err := n.Run(ctx, svc, time.Time{}); err != nil {
			a.Log.Warn("notifications stopped", "err", err)
		}
	}()
	defer func() { cancel(); <-notified }()

	if set.listen == "" {
		if a.SocketErr() != nil {
			fmt.Fprintf(a.stdout, "system3: monitors running, MCP server off; no socket (other system3 commands cannot share these monitors)\n")
		} else {
			fmt.Fprintf(a.stdout, "system3: monitors running, MCP server off; socket %s\n", a.SocketPath())
		}
		a.Log.Info("serve without MCP server")
		<-ctx.Done()
		return nil
	}
	if set.opts.Web, err = a.webHandler(svc, set.opts.Token); err != nil {
		return err
	}
	defer a.WithHosts(&set.opts)()
	srv, err := mcpserver.New(a.FleetOf(svc), set.opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.Listen(set.listen); err != nil {
		return err
	}
	st := srv.Status()
	var notes []string
	if set.opts.Token != "" {
		notes = append(notes, "bearer token required")
	}
	if set.opts.ReadOnly {
		notes = append(notes, "read-only")
	}
	extra := ""
	if len(notes) > 0 {
		extra = " (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintf(a.stdout, "system3: MCP server on %s%s; health http://%s%s\n", st.URL, extra, st.Addr, mcpserver.HealthPath)
	return srv.Serve(ctx)
}
