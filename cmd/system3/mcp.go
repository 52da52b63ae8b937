package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/mcpserver"
)

// mcpFlags are the MCP settings a command line may override.
type mcpFlags struct {
	listen    string
	tokenFile string
	readOnly  bool
	cmd       *cobra.Command
}

func (f *mcpFlags) register(cmd *cobra.Command, http bool) {
	f.cmd = cmd
	fl := cmd.Flags()
	if http {
		fl.StringVar(&f.listen, "listen", "", `address of the MCP server, host:port (default mcp.listen, else `+mcpserver.DefaultListen+`; "off": none)`)
		fl.StringVar(&f.tokenFile, "token-file", "", "`FILE` holding the bearer token clients must send (default mcp.token_file; system3 token makes one); required beyond loopback")
	}
	fl.BoolVar(&f.readOnly, "read-only", false, "offer only the read tools: no injecting, answering, interrupting or acknowledging; monitors this process runs refuse MCP actions from any process (default mcp.read_only)")
}

// mcpSettings are the resolved MCP settings of a command.
type mcpSettings struct {
	listen string // "" when off
	opts   mcpserver.Options
}

// mcpSettings resolves flags over config.yaml over defaults, and reads the
// token file.
func (a *app) mcpSettings(f *mcpFlags) (mcpSettings, error) {
	c := a.Settings.File.MCP
	var s mcpSettings
	s.listen = c.Listen
	if f.listen != "" {
		s.listen = f.listen
	}
	if s.listen == "" {
		s.listen = mcpserver.DefaultListen
	}
	if strings.EqualFold(s.listen, "off") {
		s.listen = ""
	}
	tokenFile := c.TokenFile
	if f.tokenFile != "" {
		tokenFile = f.tokenFile
	}
	s.opts = mcpserver.Options{
		Version:      buildVersion(),
		Started:      time.Now(),
		ReadOnly:     c.ReadOnly,
		MaxSessions:  c.MaxSessions,
		AllowedHosts: c.AllowedHosts,
		Logger:       a.Log,
	}
	if f.cmd != nil && f.cmd.Flags().Changed("read-only") {
		s.opts.ReadOnly = f.readOnly
		// Monitors this process runs refuse MCP writes from any process.
		a.ReadOnly = &f.readOnly
	}
	if tokenFile != "" {
		tok, err := readToken(config.ExpandHome(tokenFile, a.Settings.Home))
		if err != nil {
			return s, err
		}
		s.opts.Token = tok
	}
	return s, nil
}

// minTokenLen is the shortest bearer token accepted from a file.
const minTokenLen = 16

// readToken reads a bearer token file, refusing one others can read.
func readToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w (create one with `system3 token`)", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token file %s can be read by other users (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("token file %s must hold one token of at least %d characters and no spaces; make one with `system3 token`", path, minTokenLen)
	}
	return tok, nil
}

func newMCPCmd(a *app) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Speak MCP on stdin/stdout, for clients that launch their servers",
		Long: `Run system3's MCP server on standard input and output, for MCP clients that
start their servers themselves, like Claude Desktop:

  {"mcpServers": {"system3": {"command": "system3", "args": ["mcp"]}}}

When a system3 already monitors this state dir (the dashboard or system3
serve), mcp uses its monitors; otherwise it runs its own for as long as the
client keeps it. If that system3 stops, mcp follows another that answers on
the state dir's socket within dashboard.takeover_after (2s), or else runs
the monitors itself. Standard output carries only MCP messages: logs go to
system3.log in the state dir. The tools, resources and security settings are
those of the HTTP server (see docs/mcp.md); --read-only offers only the read
tools.`,
		Example: `  system3 mcp
  claude mcp add system3 -- system3 mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			set, err := a.mcpSettings(&f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			// When the daemon it uses goes away (the dashboard is
			// closed), the client follows another or opens the service
			// again.
			svc, err := a.Client(ctx, core.RunMonitors)
			if err != nil {
				return err
			}
			defer svc.Close()
			defer a.WithHosts(&set.opts)()
			srv, err := mcpserver.New(a.FleetOf(svc), set.opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			return srv.ServeStdio(ctx, a.stdin, a.term)
		},
	}
	f.register(cmd, false)
	return cmd
}
