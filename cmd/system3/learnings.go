package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
)

func newLearningsCmd(a *app) *cobra.Command {
	var asJSON bool
	var domain string
	var limit int
	cmd := &cobra.Command{
		Use:   "learnings",
		Short: "List the learnings in the learning store, with who reported them",
		Long: `List the learnings (patterns and anti-patterns) the learning store keeps,
newest first: the id, when it was first reported and by whom, the domain, the
kind and the text. The reporter is who system3 saw report it, never what the
reporter called itself: "cli", "mcp:<client>", or a process on the state
dir's socket followed by what it claims; "unknown" for a learning stored
before system3 kept reporters. Stale learnings (not seen for 180 days, which
reflect and spawns leave out until reported again) are listed too, marked.

These are the notes typed, quoted with their reporter, into a spawned agent's
first prompt; delete one you do not want offered with
system3 learnings delete ID. ` + learnLong,
		Example: `  system3 learnings
  system3 learnings --domain auth --json
  system3 learnings delete 12 15`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			items, err := ls.ListLearnings(cmd.Context(), api.LearningFilter{Domain: domain, Limit: limit})
			if err != nil {
				return learnErr(err)
			}
			if asJSON {
				return writeJSON(a.stdout, "system3.learnings/v1", map[string]any{"learnings": items})
			}
			if len(items) == 0 {
				fmt.Fprintln(a.stdout, "no learnings yet: they come with outcomes (the MCP tool report_outcome, or `system3 outcome report --learning`)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tWHEN\tREPORTED BY\tDOMAIN\tKIND\tTEXT")
			for _, it := range items {
				kind := it.Kind
				if it.Stale {
					kind += " (stale)"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Created.Local().Format("2006-01-02 15:04"),
					sanitize(reporterOf(it)), sanitize(it.Domain), kind, sanitize(oneLine(it.Text, 90)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	cmd.Flags().StringVar(&domain, "domain", "", "only this domain")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many learnings")
	cmd.AddCommand(newLearningsDeleteCmd(a))
	return cmd
}

// reporterOf is who reported a learning, "unknown" for one stored before
// reporters were kept.
func reporterOf(it api.LearnItem) string {
	if it.ReportedBy == "" {
		return "unknown"
	}
	return it.ReportedBy
}

func newLearningsDeleteCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete learnings from the learning store",
		Long: `Delete learnings by id (system3 learnings lists them), all or none: an id
that names no learning deletes nothing. A deleted learning is no longer
offered by reflect or typed into a spawned agent's first prompt; the outcome
it was reported with keeps its record (system3 outcomes). Each deletion is
written to the audit log with the text deleted and its reporter (system3
audit). Deleting is a write, judged by system3's policy like reporting: a
daemon whose MCP access is read-only refuses it to MCP clients. ` + learnLong,
		Example: `  system3 learnings delete 12
  system3 learnings delete 12 15 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, s := range args {
				id, err := strconv.ParseInt(s, 10, 64)
				if err != nil || id <= 0 {
					return fmt.Errorf("%q is not a learning id: pass the numbers `system3 learnings` lists", s)
				}
				ids[i] = id
			}
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			gone, err := ls.DeleteLearnings(cmd.Context(), api.LearnDeleteRequest{IDs: ids, By: actionOrigin})
			if err != nil && len(gone) == 0 {
				return learnErr(err)
			}
			if asJSON {
				if werr := writeJSON(a.stdout, "system3.learnings_deleted/v1", map[string]any{"deleted": gone}); werr != nil {
					return werr
				}
				return err
			}
			for _, it := range gone {
				fmt.Fprintf(a.stdout, "deleted learning %d (%s, reported by %s): %s\n", it.ID, it.Kind, sanitize(reporterOf(it)), sanitize(oneLine(it.Text, 90)))
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	return cmd
}
