package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/mcpserver"
)

// tokenFile is where `system3 token` keeps the MCP bearer token.
const tokenFile = "mcp-token"

func newTokenCmd(a *app) *cobra.Command {
	var rotate bool
	var listen string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create the bearer token MCP clients must send",
		Long: `Create a random bearer token for system3's MCP server in mcp-token in the
state dir (readable by you only), and print where it is and how to use it.
An existing token is kept; --rotate replaces it (clients must then be given
the new one).

The server asks for the token only when told to: pass --token-file to
system3 serve, or set mcp.token_file in config.yaml (which the dashboard
reads too). It is required to listen on an address other than loopback.
The client command it prints uses the address serve will listen on
(--listen, else mcp.listen, else the default).`,
		Example: `  system3 token
  system3 token --rotate
  system3 token --listen 0.0.0.0:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := filepath.Join(a.Settings.StateDir, tokenFile)
			created, err := writeToken(path, rotate)
			if err != nil {
				return err
			}
			if listen == "" {
				listen = a.Settings.File.MCP.Listen
			}
			verb := "Created"
			switch {
			case !created:
				verb = "Kept the existing (--rotate replaces it)"
			case rotate:
				verb = "Replaced"
			}
			_, err = fmt.Fprintf(a.stdout, `%s bearer token for system3's MCP server in
  %s
(readable by you only). To require it:

  system3 serve --token-file %s
or in config.yaml:
  mcp:
    token_file: %s

Clients send it as a header:
  claude mcp add --transport http system3 %s \
    --header "Authorization: Bearer $(cat %s)"
`, verb, path, path, path, mcpserver.ClientURL(listen), path)
			return err
		},
	}
	cmd.Flags().BoolVar(&rotate, "rotate", false, "replace an existing token")
	cmd.Flags().StringVar(&listen, "listen", "", "the address serve listens on, for the printed client command (default mcp.listen, else "+mcpserver.DefaultListen+")")
	return cmd
}

// writeToken creates a token file (0600) unless one exists and rotate is
// false; it reports whether it wrote one.
func writeToken(path string, rotate bool) (bool, error) {
	if !rotate {
		if _, err := readToken(path); err == nil {
			return false, nil
		} else if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			return false, fmt.Errorf("%w; fix it, or pass --rotate to replace it", err)
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, fmt.Errorf("make a token: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("state dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mcp-token-*")
	if err != nil {
		return false, fmt.Errorf("write token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write token: %w", err)
	}
	if _, err := tmp.WriteString(hex.EncodeToString(b[:]) + "\n"); err != nil {
		tmp.Close()
		return false, fmt.Errorf("write token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("write token: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("write token: %w", err)
	}
	return true, nil
}
