package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/tmux"
)

// statusDoc is the stable JSON document printed by `status --json`.
type statusDoc struct {
	Schema        string       `json:"schema"`
	Server        string       `json:"server"`
	ServerRunning bool         `json:"server_running"`
	GeneratedAt   time.Time    `json:"generated_at"`
	Panes         []statusPane `json:"panes"`
}

type statusPane struct {
	Session     string    `json:"session"`
	SessionID   string    `json:"session_id"`
	Window      string    `json:"window"`
	WindowIndex int       `json:"window_index"`
	WindowID    string    `json:"window_id"`
	Pane        string    `json:"pane"`
	PaneIndex   int       `json:"pane_index"`
	Target      string    `json:"target"`
	PID         int       `json:"pid"`
	Command     string    `json:"command"`
	Title       string    `json:"title"`
	Path        string    `json:"path"`
	Dead        bool      `json:"dead"`
	ExitStatus  *int      `json:"exit_status"`
	Width       int       `json:"width"`
	Height      int       `json:"height"`
	InMode      bool      `json:"in_mode"`
	Activity    time.Time `json:"activity"`
}

func newStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List every pane on the tmux server with its session and command",
		Long: `List every pane on the selected tmux server: session, window, pane id,
the command running in it, and whether it is alive.

With --json, print a stable document ({"schema": "system3.status/v1", ...})
for scripts and agents. When no tmux server is running, status says so and
exits 0 with an empty list.`,
		Example: `  system3 status
  system3 --tmux-socket work status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv := a.tmuxServer()
			panes, err := tmux.NewClient(srv).ListPanes(cmd.Context())
			running := true
			if errors.Is(err, tmux.ErrNoServer) {
				running, err = false, nil
			}
			if err != nil {
				return fmt.Errorf("%w (is tmux installed, and is the right server selected with --tmux-socket?)", err)
			}
			doc := statusDoc{
				Schema:        "system3.status/v1",
				Server:        srv.String(),
				ServerRunning: running,
				GeneratedAt:   time.Now().UTC(),
				Panes:         make([]statusPane, 0, len(panes)),
			}
			for _, p := range panes {
				doc.Panes = append(doc.Panes, toStatusPane(p))
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			return writeStatusText(a.stdout, doc)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	return cmd
}

func toStatusPane(p tmux.Pane) statusPane {
	sp := statusPane{
		Session:     p.SessionName,
		SessionID:   p.SessionID,
		Window:      p.WindowName,
		WindowIndex: p.WindowIndex,
		WindowID:    p.WindowID,
		Pane:        p.ID,
		PaneIndex:   p.Index,
		Target:      fmt.Sprintf("%s:%d.%d", p.SessionName, p.WindowIndex, p.Index),
		PID:         p.PID,
		Command:     p.Command,
		Title:       p.Title,
		Path:        p.Path,
		Dead:        p.Dead,
		Width:       p.Width,
		Height:      p.Height,
		InMode:      p.InMode,
		Activity:    p.Activity.UTC(),
	}
	if p.Dead {
		st := p.DeadStatus
		sp.ExitStatus = &st
	}
	return sp
}

func writeStatusText(w io.Writer, doc statusDoc) error {
	if !doc.ServerRunning {
		_, err := fmt.Fprintf(w, "no tmux server is running (%s); start one with `tmux new -s NAME`, or select another with --tmux-socket\n", doc.Server)
		return err
	}
	sessions := map[string]bool{}
	for _, p := range doc.Panes {
		sessions[p.Session] = true
	}
	fmt.Fprintf(w, "%s: %d sessions, %d panes\n\n", doc.Server, len(sessions), len(doc.Panes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tWINDOW\tPANE\tCOMMAND\tPID\tSIZE\tPROCESS")
	for _, p := range doc.Panes {
		proc := "running"
		if p.Dead {
			proc = "exited " + strconv.Itoa(*p.ExitStatus)
		}
		if p.InMode {
			proc += " (copy mode)"
		}
		fmt.Fprintf(tw, "%s\t%d:%s\t%s\t%s\t%d\t%dx%d\t%s\n",
			sanitize(p.Session), p.WindowIndex, sanitize(p.Window), p.Pane, sanitize(p.Command), p.PID, p.Width, p.Height, proc)
	}
	return tw.Flush()
}

// sanitize keeps names from other programs from moving the cursor or
// changing colours on the user's terminal.
func sanitize(s string) string {
	out := []rune(s)
	for i, r := range out {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			out[i] = '?'
		}
	}
	return string(out)
}
