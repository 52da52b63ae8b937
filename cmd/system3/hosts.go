package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/remote"
)

// selectHosts resolves --host and --all-hosts: the hosts to ask, local
// included as api.LocalHost.
func (a *app) selectHosts(only string, all bool) ([]string, error) {
	if only != "" && all {
		return nil, errors.New("--host and --all-hosts select hosts in two ways; give one")
	}
	if only != "" {
		if only == api.LocalHost {
			return []string{api.LocalHost}, nil
		}
		if _, err := a.RemoteHost(only); err != nil {
			return nil, err
		}
		return []string{only}, nil
	}
	names := []string{api.LocalHost}
	for _, h := range a.RemoteHosts() {
		names = append(names, h.Name)
	}
	return names, nil
}

// hostLine is one host of `system3 hosts --json`.
type hostLine struct {
	Name string `json:"name"`
	// SSH is the destination; empty for local.
	SSH string `json:"ssh,omitempty"`
	// State is connected, no_daemon (local only) or disconnected.
	State    string    `json:"state"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	Error    string    `json:"error,omitempty"`
}

func newHostsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List the hosts of the config with their connection state",
		Long: `List this machine (the host named local) and every host of the config's
hosts: section, connecting to each one's system3 daemon now through ssh
(ssh DEST system3 attach --stdio, run with your ssh config and
-o BatchMode=yes): connected, or why not (down or unreachable, ssh host key
changed or unknown, login refused, no system3 there, no daemon running
there), and when it last answered.

With --json, print one JSON array of {name, ssh, state, last_seen, error}.
Exit status is 0 even when hosts are disconnected.

See docs/remote.md for the setup.`,
		Example: `  system3 hosts
  system3 hosts --json
  system3 hosts install web1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lines := a.probeHosts(cmd.Context())
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(lines)
			}
			return writeHosts(a, lines, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.AddCommand(newHostsInstallCmd(a))
	return cmd
}

// probeHosts pings every host at once.
func (a *app) probeHosts(ctx context.Context) []hostLine {
	hosts := a.RemoteHosts()
	lines := make([]hostLine, len(hosts)+1)
	links := make([]*remote.Link, len(hosts))
	seen := a.LoadSeen()
	var wg sync.WaitGroup
	wg.Go(func() {
		l := hostLine{Name: api.LocalHost, State: "connected"}
		c, err := ipc.Dial(ctx, a.SocketPath())
		switch {
		case err == nil:
			c.Close()
			l.LastSeen = time.Now().UTC()
		case errors.Is(err, ipc.ErrNoDaemon):
			l.State, l.Error = "no_daemon", "no system3 daemon on this machine: run system3 serve (or the dashboard)"
		default:
			l.State, l.Error = "disconnected", err.Error()
		}
		lines[0] = l
	})
	for i, h := range hosts {
		links[i] = remote.NewLink(h)
		wg.Go(func() {
			link := links[i]
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err := link.Ping(pctx)
			st := link.State()
			l := hostLine{Name: h.Name, SSH: h.SSH, State: "connected", LastSeen: st.LastSeen.UTC()}
			if err != nil {
				l.State, l.Error, l.LastSeen = "disconnected", err.Error(), seen[h.Name].LastSeen
			}
			lines[i+1] = l
		})
	}
	wg.Wait()
	for _, l := range links {
		l.Close()
	}
	a.RecordSeen(links)
	return lines
}

func writeHosts(a *app, lines []hostLine, now time.Time) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSSH\tSTATE\tLAST SEEN")
	var problems []string
	for _, l := range lines {
		dest := l.SSH
		if l.Name == api.LocalHost {
			dest = "(this machine)"
		}
		last := "never"
		if !l.LastSeen.IsZero() {
			last = age(now.Sub(l.LastSeen))
			if now.Sub(l.LastSeen) < time.Second {
				last = "now"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize(l.Name), sanitize(dest), strings.ReplaceAll(l.State, "_", " "), last)
		if l.Error != "" {
			problems = append(problems, sanitize(l.Name)+": "+sanitize(l.Error))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(problems) > 0 {
		fmt.Fprintln(a.stdout)
		for _, p := range problems {
			fmt.Fprintln(a.stdout, p)
		}
	}
	return nil
}

func newHostsInstallCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "install NAME",
		Short: "Copy this system3 binary to a host that has none",
		Long: `Copy the running system3 binary to host NAME over ssh (ssh DEST 'cat >
PATH'), when the host's operating system and architecture (uname -sm) are
this binary's; another platform is refused, since no binary for it is at
hand.

PATH is hosts.NAME.system3 when it is a path (like ~/bin/system3), else
~/.local/bin/system3 (then set hosts.NAME.system3 to it unless that
directory is on the remote PATH for ssh commands). An existing file is kept
unless --force. The copy is checked by running its version command there.`,
		Example: `  system3 hosts install web1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.RemoteHost(args[0])
			if err != nil {
				return err
			}
			return a.installHost(cmd.Context(), h, force)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace a file already at the path")
	return cmd
}

// installHost copies this system3 binary to host h (remote.Host.Install)
// and says where it went.
func (a *app) installHost(ctx context.Context, h remote.Host, force bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this system3 binary to copy: %w", err)
	}
	in, err := h.Install(ctx, self, force)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "installed %s on host %s (%s): %s\n", in.Path, h.Name, in.Uname, in.Version)
	if h.System3 != in.Path {
		fmt.Fprintf(a.stdout, "if %s is not on its PATH for ssh commands, set hosts.%s.system3: %s in %s\n", filepath.Dir(in.Path), h.Name, in.Path, a.Settings.ConfigPath)
	}
	return nil
}
