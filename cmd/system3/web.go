package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"rsc.io/qr"

	"github.com/system3-dev/system3/mcpserver/web"
	"github.com/system3-dev/system3/wake/notify"
)

// webHandler is the web page on svc, mounted by the MCP server.
func (a *app) webHandler(svc web.Service, token string) (http.Handler, error) {
	// Push action links are served only when pushes carry them.
	var s *notify.Signer
	if a.Settings.File.Notify.Ntfy.ActionsURL != "" {
		var err error
		if s, err = notify.LoadSigner(a.Settings.StateDir); err != nil {
			return nil, err
		}
	}
	return web.New(svc, web.Options{StateDir: a.Settings.StateDir, Signer: s, Token: token, Log: a.Log})
}

func newWebCmd(a *app) *cobra.Command {
	var f mcpFlags
	var base string
	var revoke, noQR bool
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Print a one-time link (and QR code) that signs a browser in to the web page",
		Long: `system3's web page, made for a phone, is served by the process that runs
the MCP server (system3 serve, or the dashboard) at /web/: the sessions that
need a person first with their question and options as buttons, guidance and
interrupt, the wakes with ack, updated live.

Nothing on it is reachable without signing in. This command writes a
one-time sign-in code to the state dir and prints the link (valid for 10
minutes, usable once) and a QR code of it; opening it sets a session cookie
(HttpOnly, SameSite=Strict) that lasts 30 days. --revoke signs every browser
out.

The server listens on loopback by default: reach it from a phone through an
SSH tunnel or Tailscale (docs/notifications.md), and pass the address the
phone uses with --url.`,
		Example: `  system3 web
  system3 web --url https://box.tailnet.ts.net:8889
  system3 web --revoke`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if revoke {
				n, err := web.RevokeAll(a.Settings.StateDir)
				if err != nil {
					return fmt.Errorf("revoke the web sessions: %w", err)
				}
				fmt.Fprintf(a.stdout, "Signed out %d browser session(s).\n", n)
				return nil
			}
			if base == "" {
				base = a.Settings.File.Notify.Ntfy.ActionsURL
			}
			if base == "" {
				set, err := a.mcpSettings(&f)
				if err != nil {
					return err
				}
				if set.listen == "" {
					return fmt.Errorf("the MCP server is off (mcp.listen: off), and the web page is served by it: turn it on, or pass --url")
				}
				base = "http://" + browsable(set.listen)
			}
			code, err := web.NewSignInCode(a.Settings.StateDir, time.Now())
			if err != nil {
				return err
			}
			link := web.SignInURL(base, code)
			fmt.Fprintf(a.stdout, "Open this link once, within %s, to sign a browser in to system3:\n\n  %s\n\n", web.CodeTTL, link)
			if !noQR {
				if err := printQR(a.stdout, link); err != nil {
					a.Log.Warn("web: QR code", "err", err)
				}
			}
			fmt.Fprintln(a.stdout, "The page is served by `system3 serve` (or the dashboard) for this state dir; `system3 web --revoke` signs every browser out.")
			return nil
		},
	}
	cmd.Flags().StringVar(&base, "url", "", "the address the browser reaches system3 at (default notify.ntfy.actions_url, else the MCP listen address)")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "sign every browser out")
	cmd.Flags().BoolVar(&noQR, "no-qr", false, "print the link only")
	return cmd
}

// browsable turns a listen address into one a browser can open.
func browsable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// printQR draws s as a QR code with half blocks, two modules per line,
// dark on light with a quiet zone, so phones read it off a dark terminal.
func printQR(w io.Writer, s string) error {
	c, err := qr.Encode(s, qr.L)
	if err != nil {
		return err
	}
	const quiet = 2
	black := func(x, y int) bool {
		if x < 0 || y < 0 || x >= c.Size || y >= c.Size {
			return false
		}
		return c.Black(x, y)
	}
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		b.WriteString("  ")
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bottom := black(x, y), black(x, y+1)
			switch {
			case top && bottom:
				b.WriteRune(' ')
			case top:
				b.WriteRune('▄')
			case bottom:
				b.WriteRune('▀')
			default:
				b.WriteRune('█')
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	_, err = io.WriteString(w, b.String())
	return err
}
