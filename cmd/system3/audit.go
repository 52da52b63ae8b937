package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
)

func newAuditCmd(a *app) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show what was typed into panes, by whom, and whether it arrived",
		Long: `Show the audit log: every text or key system3 sent into a pane (from the
dashboard, the CLI or an MCP client), every MCP tool call, every learning
deleted from the learning store, and every permission request the approval
policy was asked about (the tool and its input, the rule, the decision,
who decided: "policy", whoever answered its ask, or "nobody" when the
agent's own dialog showed, and how long the agent was held), with the time,
the origin ("tui", "cli", "mcp:<client>"), the target, what was sent, and
whether it was delivered and verified. The log is audit.jsonl in the state
dir (one JSON object per line; rotated to audit.jsonl.1 at 32 MB).`,
		Example: `  system3 audit
  system3 audit --limit 100
  system3 audit --json | jq 'select(.origin | startswith("mcp:"))'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := filepath.Join(a.Settings.StateDir, audit.File)
			entries, err := audit.Read(path)
			if errors.Is(err, fs.ErrNotExist) {
				if !asJSON {
					fmt.Fprintf(a.stdout, "nothing audited yet (%s does not exist): nothing has been sent to a pane from this state dir\n", path)
					return nil
				}
				entries, err = []api.AuditEntry{}, nil
			}
			if err != nil {
				return fmt.Errorf("read the audit log: %w", err)
			}
			if limit > 0 && len(entries) > limit {
				entries = entries[len(entries)-limit:]
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				for _, e := range entries {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			for _, e := range entries {
				fmt.Fprintln(a.stdout, auditLine(e))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON lines")
	cmd.Flags().IntVarP(&limit, "limit", "n", 50, "show only the last N entries (0: all)")
	return cmd
}

// auditLine is one entry on one line, text quoted so a newline or an escape
// in it cannot garble the terminal.
func auditLine(e api.AuditEntry) string {
	if e.Action == approval.AuditAction {
		return permissionLine(e)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s %-9s", e.Time.Local().Format("2006-01-02 15:04:05"), sanitize(e.Origin), e.Action)
	if e.Tool != "" {
		fmt.Fprintf(&b, " %s", sanitize(e.Tool))
	}
	if e.Target != "" {
		fmt.Fprintf(&b, " %s", sanitize(e.Target))
		if e.Pane != "" && e.Pane != e.Target {
			fmt.Fprintf(&b, " (%s)", e.Pane)
		}
	}
	if len(e.Keys) > 0 {
		fmt.Fprintf(&b, " keys %s", sanitize(strings.Join(e.Keys, " ")))
	}
	if e.Text != "" {
		fmt.Fprintf(&b, " %q", e.Text)
		if e.Cut > 0 {
			fmt.Fprintf(&b, " (+%d bytes cut)", e.Cut)
		}
	}
	if e.Args != "" {
		fmt.Fprintf(&b, " %s", sanitize(e.Args))
	}
	switch {
	case e.Phase == audit.PhaseRefused:
		fmt.Fprintf(&b, " REFUSED: %s", sanitize(e.Error))
	case e.Error != "":
		fmt.Fprintf(&b, " FAILED: %s", sanitize(e.Error))
	case e.Phase == audit.PhaseAttempt:
		b.WriteString(" outcome unknown (no result recorded)")
	case e.Action == "tool_call" || e.Action == "delete_learning":
		if e.Result != "" {
			fmt.Fprintf(&b, " → %s", sanitize(e.Result))
		}
	case e.Checked:
		b.WriteString(" ✓ verified")
	case e.Sent:
		b.WriteString(" delivered")
	}
	return b.String()
}

// permissionLine is a permission request the approval policy was asked
// about: who decided (the policy, whoever answered its ask, or nobody),
// the tool and its input, the rule, the decision and how long the agent's
// hook was held.
func permissionLine(e api.AuditEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-16s %-9s %s", e.Time.Local().Format("2006-01-02 15:04:05"), sanitize(api.ShortOrigin(e.Origin)), e.Action, sanitize(e.Tool))
	if e.Target != "" {
		fmt.Fprintf(&b, " %s", sanitize(e.Target))
	}
	if e.Pane != "" {
		fmt.Fprintf(&b, " (%s)", e.Pane)
	}
	var req approval.Request
	if json.Unmarshal([]byte(e.Args), &req) == nil {
		fmt.Fprintf(&b, " %q", req.Summary())
	}
	if e.Rule != "" {
		fmt.Fprintf(&b, " rule %s", sanitize(e.Rule))
	}
	decision := e.Decision
	if decision == "" {
		decision = "not decided"
	}
	fmt.Fprintf(&b, ": %s", decision)
	if e.Result != "" && e.Result != e.Decision {
		fmt.Fprintf(&b, " (%s)", sanitize(e.Result))
	}
	fmt.Fprintf(&b, ", held %s", (time.Duration(e.WaitedMS) * time.Millisecond).String())
	if e.Error != "" {
		fmt.Fprintf(&b, "; %s", sanitize(e.Error))
	}
	return b.String()
}
