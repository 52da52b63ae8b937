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

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/termtext"
	"github.com/system3-dev/system3/tmux"
)

// statusDoc is the stable JSON document printed by `status --json`.
type statusDoc struct {
	Schema        string    `json:"schema"`
	Server        string    `json:"server"`
	ServerRunning bool      `json:"server_running"`
	GeneratedAt   time.Time `json:"generated_at"`
	// Source says where the states come from: "daemon" (the monitors of
	// the system3 serving this state dir) or "snapshot" (classified once by
	// this command).
	Source      string       `json:"source"`
	NeedsPerson int          `json:"needs_person"`
	Problem     string       `json:"problem,omitempty"`
	Panes       []statusPane `json:"panes"`
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

	Agent    string            `json:"agent"`
	State    string            `json:"state"`
	Kind     string            `json:"kind"`
	Evidence api.Evidence      `json:"evidence"`
	Question string            `json:"question,omitempty"`
	Detail   string            `json:"detail,omitempty"`
	Options  []string          `json:"options"`
	Since    time.Time         `json:"since"`
	LastLine string            `json:"last_line,omitempty"`
	TaskList string            `json:"task_list,omitempty"`
	Tasks    *api.TaskProgress `json:"tasks,omitempty"`
	// Usage is the tokens and estimated cost of the agent's session, from
	// its transcript (Claude Code), when known.
	Usage *api.Usage `json:"usage,omitempty"`
	// AgentSessionID is the agent's own conversation id (what its resume
	// takes), and Transcript its file, when known.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	Transcript     string `json:"transcript,omitempty"`
}

func newStatusCmd(a *app) *cobra.Command {
	var (
		asJSON   bool
		host     string
		allHosts bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List every pane on the tmux server with its session and command",
		Long: `List every pane on the selected tmux server: session, window, pane id, the
command running in it, the agent recognised in it and its state (working,
idle, awaiting_input, error, error_loop, rate_limited, exited, unknown) with the question
or last line, and the number of unacknowledged wakes.

When a system3 serves this state dir (a dashboard, or a running wait), the
states are its monitors', which remember what one look cannot (error loops,
an agent that exited); otherwise status classifies every pane once, reading
it as the monitors do (a shell's foreground job, the processes below the
pane, an agent's version), so both give a pane the same state. It also
checks the wake journal as the daemon would: a journal that cannot be read
(which serve and wait refuse to start on) makes status fail, and one that
cannot be written is shown as the problem.

With --json, print a stable document ({"schema": "system3.status/v2", ...})
for scripts and agents: per pane the state, kind, evidence (source, rule,
matched lines), question and options; "source" says where the states came
from. When no tmux server is running, status says so and exits 0 with an
empty list.

--all-hosts asks this machine (the host named local) and every host of the
config's hosts: section at once, over ssh (docs/remote.md); --host NAME asks
one. Each host's connection is listed (connected, or disconnected with why
and when it was last seen) and every session is named HOST:SESSION; --json
then prints {"schema": "system3.status-hosts/v1", "hosts": [...],
"sessions": [...]}.`,
		Example: `  system3 status
  system3 --tmux-socket work status --json
  system3 status --all-hosts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if host != "" || allHosts {
				names, err := a.selectHosts(host, allHosts)
				if err != nil {
					return err
				}
				return a.statusHosts(cmd.Context(), names, asJSON)
			}
			srv := a.TmuxServer()
			panes, err := tmux.NewClient(srv).ListPanes(cmd.Context())
			running := true
			if errors.Is(err, tmux.ErrNoServer) {
				running, err = false, nil
			}
			if err != nil {
				return fmt.Errorf("%w (is tmux installed, and is the right server selected with --tmux-socket?)", err)
			}
			doc := statusDoc{
				Schema:        "system3.status/v2",
				Server:        srv.String(),
				ServerRunning: running,
				Panes:         make([]statusPane, 0, len(panes)),
			}
			states, unacked, source, err := a.SessionStates(cmd.Context())
			if err != nil {
				return err
			}
			// Stamped once the states are in, so no pane's since is later
			// than the document.
			doc.GeneratedAt = time.Now().UTC()
			doc.Source, doc.NeedsPerson = source, unacked
			doc.Problem = states.Problem
			byPane := map[string]api.Session{}
			for _, s := range states.Sessions {
				byPane[s.Pane] = s
			}
			for _, p := range panes {
				sp := toStatusPane(p)
				if s, ok := byPane[p.ID]; ok {
					sp.Agent, sp.State, sp.Kind, sp.Evidence = s.Agent, string(s.State), s.Kind, s.Evidence
					sp.Question, sp.Detail, sp.Options, sp.Since, sp.LastLine = s.Question, s.Detail, s.Options, s.Since.UTC(), s.LastLine
					sp.TaskList, sp.Tasks, sp.Usage = s.TaskList, s.Tasks, s.Usage
					sp.AgentSessionID, sp.Transcript = s.AgentSessionID, s.Transcript
				} else {
					sp.State, sp.Options, sp.Evidence.Lines = "unknown", []string{}, []string{}
				}
				doc.Panes = append(doc.Panes, sp)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			return writeStatusText(a.stdout, doc, srv.Command())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	cmd.Flags().StringVar(&host, "host", "", "only this host of the config (or local), sessions named HOST:SESSION")
	cmd.Flags().BoolVar(&allHosts, "all-hosts", false, "this machine and every host of the config, sessions named HOST:SESSION")
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
	if p.Dead && p.DeadStatus >= 0 {
		st := p.DeadStatus
		sp.ExitStatus = &st
	}
	return sp
}

func writeStatusText(w io.Writer, doc statusDoc, srvCmd string) error {
	if !doc.ServerRunning {
		_, err := fmt.Fprintf(w, "no tmux server is running (%s); start one with `%s new -s NAME`, or select another with --tmux-socket\n", doc.Server, srvCmd)
		return err
	}
	names := make([]string, len(doc.Panes))
	for i, p := range doc.Panes {
		names[i] = p.Session
	}
	fmt.Fprintf(w, "%s: %s, %s\n", doc.Server, sessionsAndPanes(names), api.NeedingPersonText(doc.NeedsPerson))
	if doc.Problem != "" {
		fmt.Fprintf(w, "problem: %s\n", doc.Problem)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tWINDOW\tPANE\tCOMMAND\tAGENT\tSTATE\tTASKS\tDETAIL")
	for _, p := range doc.Panes {
		state := p.State
		if p.Kind != "" {
			state += "/" + p.Kind
		}
		detail := p.Question
		if detail == "" {
			detail = p.LastLine
		}
		if p.Dead {
			detail = "process exited with status " + strconv.Itoa(*p.ExitStatus)
		}
		if p.InMode {
			detail = "(copy mode) " + detail
		}
		agent := p.Agent
		if agent == "" {
			agent = "-"
		}
		progress := "-"
		if p.Tasks != nil {
			progress = fmt.Sprintf("%d/%d", p.Tasks.Completed, p.Tasks.Total)
		}
		fmt.Fprintf(tw, "%s\t%d:%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			sanitize(p.Session), p.WindowIndex, sanitize(p.Window), p.Pane, sanitize(p.Command), agent, state, progress, truncate(sanitize(detail), 60))
	}
	return tw.Flush()
}

// truncate shortens s to n runes with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// sanitize is one line of text from other programs made safe for the
// terminal (internal/termtext): stdout sanitises every byte as its last
// step; this also keeps a newline or tab in a name from breaking a line.
func sanitize(s string) string { return termtext.Line(s) }

// sessionsAndPanes counts the tmux sessions and the panes of a listing,
// given each pane's session: "1 session, 3 panes". A session is a tmux
// session and a pane a pane, in every command that counts them.
func sessionsAndPanes(sessionOfPane []string) string {
	sessions := map[string]bool{}
	for _, s := range sessionOfPane {
		sessions[s] = true
	}
	return count(len(sessions), "session", "sessions") + ", " + count(len(sessionOfPane), "pane", "panes")
}

// count is "1 pane" or "2 panes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
