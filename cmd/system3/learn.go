package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
)

// learnLong is what every learning command's help says about the store.
const learnLong = `The learning store is learn.db in the state dir; see docs/learning.md.`

// writeJSON prints v as an indented JSON document tagged with its schema.
func writeJSON(w io.Writer, schema string, v map[string]any) error {
	v["schema"] = schema
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// learnErr turns input the store refuses into one sentence.
func learnErr(err error) error {
	if errors.Is(err, api.ErrLearnInvalid) {
		return errors.New(strings.TrimPrefix(err.Error(), api.ErrLearnInvalid.Error()+": "))
	}
	return err
}

func newOutcomesCmd(a *app) *cobra.Command {
	var asJSON bool
	var domain string
	var limit int
	cmd := &cobra.Command{
		Use:   "outcomes",
		Short: "List the outcomes reported to the learning store, newest first",
		Long: `List the outcomes of initiatives reported to system3 (by agents with the MCP tool
report_outcome, or with system3 outcome report): when, how it ended, the domain,
whether the reasoning path was validated (how many of the five criteria it
evidenced) and the learnings kept. ` + learnLong,
		Example: `  system3 outcomes
  system3 outcomes --domain auth --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			outs, err := ls.Outcomes(cmd.Context(), api.OutcomeFilter{Domain: domain, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, "system3.outcomes/v1", map[string]any{"outcomes": outs})
			}
			if len(outs) == 0 {
				fmt.Fprintln(a.stdout, "no outcomes yet: agents report them with the MCP tool report_outcome, people with `system3 outcome report`")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WHEN\tOUTCOME\tDOMAIN\tREASONING\tINITIATIVE")
			for _, o := range outs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.At.Local().Format("2006-01-02 15:04"), o.Outcome, o.Domain, reasoningWord(o), oneLine(o.Initiative, 70))
				for _, l := range o.Learnings {
					fmt.Fprintf(tw, "\t\t\t\t  · %s\n", oneLine(l, 90))
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	cmd.Flags().StringVar(&domain, "domain", "", "only this domain")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many outcomes")
	return cmd
}

func reasoningWord(o api.OutcomeRecord) string {
	n := 0
	for _, c := range o.Criteria {
		if c.Evidenced {
			n++
		}
	}
	if o.Validated {
		return fmt.Sprintf("validated %d/5", n)
	}
	return fmt.Sprintf("weak %d/5", n)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newOutcomeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outcome",
		Short: "Report an outcome to the learning store",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newOutcomeReportCmd(a))
	return cmd
}

func newOutcomeReportCmd(a *app) *cobra.Command {
	var o api.Outcome
	var reasoningFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report INITIATIVE --outcome success|partial|failure",
		Short: "Record how an initiative ended and what it taught",
		Long: `Record how an initiative ended, the way an agent does with the MCP tool
report_outcome. The reasoning path (--reasoning, or --reasoning-file, "-" for
standard input) is checked for five criteria: goal clearly defined, steps
sequenced, decisions justified, risks considered, outcome verified; it is
validated when at least 4 are evidenced. The learnings (--learning, repeat it)
are kept as patterns when the outcome is a success and the reasoning
validated, otherwise as anti-patterns, and the domain's capability is
updated. ` + learnLong,
		Example: `  system3 outcome report "add OAuth login" --outcome success --domain auth \
    --reasoning-file notes.md --learning "Keep tokens in the session store"
  system3 outcome report "nightly deploy" --outcome failure --blocker "staging was down" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Initiative = args[0]
			if reasoningFile != "" {
				if o.ReasoningPath != "" {
					return errors.New("pass the reasoning path with --reasoning or --reasoning-file, not both")
				}
				var b []byte
				var err error
				if reasoningFile == "-" {
					b, err = io.ReadAll(io.LimitReader(a.stdin, api.MaxReasoning+1))
				} else {
					b, err = os.ReadFile(reasoningFile)
				}
				if err != nil {
					return fmt.Errorf("read the reasoning path: %w", err)
				}
				o.ReasoningPath = string(b)
			}
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			o.ReportedBy = actionOrigin
			r, err := ls.ReportOutcome(cmd.Context(), o)
			if err != nil {
				return learnErr(err)
			}
			if asJSON {
				return writeJSON(a.stdout, "system3.outcome_report/v1", map[string]any{"report": r})
			}
			verdict := "not validated"
			if r.Validated {
				verdict = "validated"
			}
			fmt.Fprintf(a.stdout, "outcome %d recorded; reasoning %s:\n", r.OutcomeID, verdict)
			for _, c := range r.Criteria {
				if c.Evidenced {
					fmt.Fprintf(a.stdout, "  ✓ %s: %q\n", c.Label, c.Evidence)
				} else {
					fmt.Fprintf(a.stdout, "  ✗ %s\n", c.Label)
				}
			}
			for _, l := range r.Learnings {
				how := "stored"
				if l.Merged {
					how = "seen again"
				}
				fmt.Fprintf(a.stdout, "%s %d %s: %s\n", r.Kind, l.ID, how, l.Text)
			}
			fmt.Fprintf(a.stdout, "capability %s: confidence %.2f (%s)\n", r.Domain, r.Confidence, r.Evidence)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Outcome, "outcome", "", "how it ended: success, partial or failure (required)")
	f.StringVar(&o.ReasoningPath, "reasoning", "", "the reasoning path followed")
	f.StringVar(&reasoningFile, "reasoning-file", "", `read the reasoning path from this file ("-": standard input)`)
	f.StringArrayVar(&o.Learnings, "learning", nil, "a lesson to keep, one sentence (repeatable)")
	f.StringArrayVar(&o.Blockers, "blocker", nil, "what stood in the way (repeatable)")
	f.StringVar(&o.Domain, "domain", "", `the area it counts towards, like "auth" (default "general")`)
	f.BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	_ = cmd.MarkFlagRequired("outcome")
	return cmd
}

func newReflectCmd(a *app) *cobra.Command {
	var about, budget string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reflect QUERY",
		Short: "Recall the patterns, anti-patterns and capabilities that bear on a task",
		Long: `Recall what system3 has learnt that bears on QUERY: the best-matching patterns
(what worked) and anti-patterns (what failed or was poorly reasoned), ranked by
full-text relevance, recency and how often each was seen; the capabilities of
their domains; and a confidence. --budget bounds how much: low, mid (default)
or high. With --budget high and learn.reflect_command set in the config (for
example "claude -p"), that command also writes a reflection from the material;
otherwise reflection is retrieval only, and says so. ` + learnLong,
		Example: `  system3 reflect "add OAuth login to the admin app"
  system3 reflect "database migration" --context "large tables" --budget high --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			r, err := ls.Reflect(cmd.Context(), strings.Join(args, " "), about, api.Budget(budget))
			if err != nil {
				return learnErr(err)
			}
			if asJSON {
				return writeJSON(a.stdout, "system3.reflection/v1", map[string]any{"reflection": r})
			}
			printItems := func(title string, items []api.LearnItem) {
				fmt.Fprintf(a.stdout, "%s:\n", title)
				if len(items) == 0 {
					fmt.Fprintln(a.stdout, "  (none)")
				}
				for _, it := range items {
					fmt.Fprintf(a.stdout, "  %d. [%s, seen %d×] %s\n", it.ID, it.Domain, it.Seen, it.Text)
				}
			}
			printItems("Patterns", r.Patterns)
			printItems("Anti-patterns", r.AntiPatterns)
			if len(r.Capabilities) > 0 {
				fmt.Fprintln(a.stdout, "Capabilities:")
				for _, c := range r.Capabilities {
					fmt.Fprintf(a.stdout, "  %s\n", c.Note)
				}
			}
			if r.Reflection != "" {
				fmt.Fprintf(a.stdout, "Reflection:\n%s\n", r.Reflection)
			}
			fmt.Fprintf(a.stdout, "confidence %.2f; %s\n", r.Confidence, r.Note)
			return nil
		},
	}
	cmd.Flags().StringVar(&about, "context", "", "more words that narrow the search (the repository, the stack)")
	cmd.Flags().StringVar(&budget, "budget", string(api.BudgetMid), "how much to return: low, mid or high (high runs learn.reflect_command)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	return cmd
}

func newCapabilitiesCmd(a *app) *cobra.Command {
	var domain string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "capabilities [CAPABILITY]",
		Short: "Show how reliably initiatives succeed, per domain",
		Long: `Show, per domain, how many initiatives were reported and how they ended, with
the confidence (successes+1)/(attempts+2): 0.5 with no evidence, nearing the
success rate as outcomes add up. With CAPABILITY (words like "database
migrations"), count only the outcomes whose initiative has all those words.
` + learnLong,
		Example: `  system3 capabilities
  system3 capabilities migrations --domain db --json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ls, err := a.Client(cmd.Context(), core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(ls.Close)
			caps, err := ls.Capabilities(cmd.Context(), strings.Join(args, " "), domain)
			if err != nil {
				return learnErr(err)
			}
			if asJSON {
				return writeJSON(a.stdout, "system3.capabilities/v1", map[string]any{"capabilities": caps})
			}
			if len(caps) == 0 {
				fmt.Fprintln(a.stdout, "no outcomes match yet (confidence would be 0.50: no evidence)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CAPABILITY\tDOMAIN\tCONFIDENCE\tEVIDENCE\tUPDATED")
			for _, c := range caps {
				fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\n", c.Name, c.Domain, c.Confidence, c.Evidence, c.Updated.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&domain, "domain", "", "only this domain")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	return cmd
}
