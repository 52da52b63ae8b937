package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
)

// readCoach opens a coach of this process for `directives`, which shows
// the CLAUDE.md files of the directory it runs in (the daemon's coach
// quotes those of its own). The other coach commands use the one service.
func (a *app) readCoach(ctx context.Context) (*coach.Coach, func(), error) {
	co, closeFn, err := a.OpenCoach(ctx, nil, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("open the learning database: %w", err)
	}
	return co, closeFn, nil
}

func writeCoachJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newPatternsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "patterns [ID]",
		Short: "List the behaviour patterns (loops) system3 detects and how their reminders do",
		Long: `List the behaviour patterns in force: the built-in ones (an error loop on the
same test, a formatter loop, a push-and-fail CI loop, repeated permission
denials) and those of your rules.yaml (see docs/rules.md). For each: its
threshold and window, whether it reminds early (preventive, at threshold-1)
and sends by itself (auto), the CLAUDE.md directive its reminders quote and
how it was linked (explicit, or a text match with its score, so you can
set directive: in rules.yaml when the match is wrong), the intervention
chosen now with its effectiveness, and open alerts.

With ID, also every intervention's counts and the pattern's recent alerts.`,
		Example: `  system3 patterns
  system3 patterns formatter_loop
  system3 patterns --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			co, err := a.Client(ctx, core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(co.Close)
			if len(args) == 1 {
				p, err := co.PatternInfo(ctx, args[0])
				if errors.Is(err, api.ErrCoachNotFound) {
					return fmt.Errorf("no pattern %q; run `system3 patterns` for the ids", args[0])
				}
				if err != nil {
					return err
				}
				recent, err := co.History(ctx, api.CoachHistoryQuery{Pattern: p.ID, Limit: 10})
				if err != nil {
					return err
				}
				if asJSON {
					return writeCoachJSON(a.stdout, map[string]any{"pattern": p, "recent_alerts": recent})
				}
				writePattern(a.stdout, p, recent)
				return nil
			}
			ps, err := co.PatternInfos(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if ps == nil {
					ps = []api.PatternInfo{}
				}
				return writeCoachJSON(a.stdout, map[string]any{"patterns": ps})
			}
			if len(ps) == 0 {
				fmt.Fprintf(a.stdout, "no behaviour patterns: rules.yaml disables them all (%s)\n", a.RulesPath())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTHRESHOLD\tWINDOW\tMODE\tDIRECTIVE\tINTERVENTION\tEFFECT\tOPEN")
			for _, p := range ps {
				chosen := ""
				eff := ""
				for _, s := range p.Interventions {
					if s.Chosen {
						chosen = s.Intervention
						eff = fmt.Sprintf("%.2f (%d/%d)", s.Effectiveness, s.Worked+s.ReportedWorked, s.Shown+s.Reported)
					}
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\n", p.ID, p.Threshold, p.Window, patternMode(p.Preventive, p.AutoSend), linkText(p.Link), chosen, eff, p.Open)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func patternMode(preventive, auto bool) string {
	var m []string
	if preventive {
		m = append(m, "preventive")
	}
	if auto {
		m = append(m, "auto")
	}
	if len(m) == 0 {
		return "-"
	}
	return strings.Join(m, ",")
}

func linkText(l api.DirectiveLink) string {
	switch l.By {
	case "explicit":
		return l.Directive
	case "text match":
		return fmt.Sprintf("%s (match %.2f)", l.Directive, l.Score)
	case "missing":
		return l.Directive + " (not found)"
	}
	return "-"
}

func writePattern(w io.Writer, p api.PatternInfo, recent []api.CoachAlert) {
	fmt.Fprintf(w, "%s: %s\n", p.ID, p.Name)
	if p.Description != "" {
		fmt.Fprintf(w, "  %s\n", p.Description)
	}
	fmt.Fprintf(w, "  threshold %d within %s, %s; defined in %s line %d\n", p.Threshold, p.Window, patternMode(p.Preventive, p.AutoSend), p.Source, p.Line)
	fmt.Fprintf(w, "  directive: %s\n", linkText(p.Link))
	if p.Link.Text != "" {
		fmt.Fprintf(w, "    %q\n", p.Link.Text)
	}
	fmt.Fprintln(w, "  interventions:")
	for _, s := range p.Interventions {
		mark := " "
		if s.Chosen {
			mark = "*"
		}
		fmt.Fprintf(w, "  %s %s: effectiveness %.2f, shown %d, worked %d, reported %d (%d worked)\n", mark, s.Intervention, s.Effectiveness, s.Shown, s.Worked, s.Reported, s.ReportedWorked)
	}
	if len(recent) == 0 {
		fmt.Fprintln(w, "  no alerts yet")
		return
	}
	fmt.Fprintln(w, "  recent alerts:")
	for _, a := range recent {
		fmt.Fprintf(w, "    #%d %s %s %s %q x%d %s", a.ID, a.Detected.Local().Format(time.DateTime), a.Target, a.Status, a.Subject, a.Count, a.Intervention)
		if a.Outcome != "" {
			fmt.Fprintf(w, ": %s", a.Outcome)
		}
		fmt.Fprintln(w)
	}
}

func newDirectivesCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "directives",
		Short: "List the CLAUDE.md directives reminders quote, and which pattern each is linked to",
		Long: `Read ~/.claude/CLAUDE.md (or $CLAUDE_CONFIG_DIR/CLAUDE.md) and the CLAUDE.md and
.claude/CLAUDE.md of the current directory (the orchestrator's project),
split them into directives (each bullet, or paragraph, under its heading)
with stable ids, and show which directive each behaviour pattern quotes:
named in rules.yaml (explicit), or the best text match with its score. To
correct a link, set directive: <id> on the pattern in rules.yaml.`,
		Example: `  system3 directives
  system3 directives --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			co, closeFn, err := a.readCoach(cmd.Context())
			if err != nil {
				return err
			}
			defer closeFn()
			v, err := co.Directives()
			if err != nil {
				return err
			}
			if asJSON {
				return writeCoachJSON(a.stdout, v)
			}
			for _, p := range v.Problems {
				fmt.Fprintf(a.Stderr, "system3: warning: %s\n", p)
			}
			if len(v.Directives) == 0 {
				var paths []string
				for _, f := range v.Files {
					paths = append(paths, f.Path)
				}
				fmt.Fprintf(a.stdout, "no directives: none of %s has any\n", strings.Join(paths, ", "))
			}
			for _, d := range v.Directives {
				fmt.Fprintf(a.stdout, "%s  (%s:%d)\n  %s\n", d.ID, d.File, d.Line, d.Text)
			}
			fmt.Fprintln(a.stdout)
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PATTERN\tDIRECTIVE\tBY\tSCORE")
			for _, l := range v.Links {
				d := l.Directive
				if d == "" {
					d = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", l.Pattern, d, l.By, l.Score)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newInterventionsCmd(a *app) *cobra.Command {
	var asJSON bool
	var pattern, status string
	var limit int
	cmd := &cobra.Command{
		Use:   "interventions",
		Short: "Show the reminders system3 raised and sent, and how well each intervention works",
		Long: `Show the alerts of behaviour patterns, newest first (pattern, session, what
repeated and how often, the intervention chosen, whether the reminder was
sent and by whom, and its measured outcome: worked, failed, resolved
without a reminder, or still open), then every intervention's shown and
worked counts and its smoothed effectiveness, (worked+1)/(shown+2), which
decides the intervention sent next time.

system3 measures outcomes itself; ` + "`system3 interventions report`" + ` adds your word.`,
		Example: `  system3 interventions
  system3 interventions --pattern test_error_loop --status failed
  system3 interventions report test_error_loop isolate-root-cause --worked`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if status != "" && !validStatus(status) {
				return fmt.Errorf("--status %q is not one of open, active, sent, worked, failed, resolved", status)
			}
			co, err := a.Client(ctx, core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(co.Close)
			alerts, err := co.History(ctx, api.CoachHistoryQuery{Pattern: pattern, Status: status, Limit: limit})
			if err != nil {
				return err
			}
			stats, err := co.Stats(ctx, pattern, "")
			if err != nil {
				return err
			}
			if asJSON {
				return writeCoachJSON(a.stdout, map[string]any{"alerts": alerts, "interventions": stats})
			}
			if len(alerts) == 0 {
				fmt.Fprintln(a.stdout, "no alerts")
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tDETECTED\tPATTERN\tTARGET\tSUBJECT\tCOUNT\tINTERVENTION\tSTATUS\tSENT BY\tOUTCOME")
				for _, al := range alerts {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", al.ID, al.Detected.Local().Format(time.DateTime), al.Pattern, dash(al.Target),
						dash(clipText(al.Subject, 40)), al.Count, al.Threshold, al.Intervention, al.Status, dash(al.SentBy), dash(al.Outcome))
				}
				tw.Flush()
			}
			fmt.Fprintln(a.stdout)
			if len(stats) == 0 {
				fmt.Fprintln(a.stdout, "no intervention has been shown or reported yet")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "PATTERN\tINTERVENTION\tSHOWN\tWORKED\tREPORTED\tREPORTED WORKED\tEFFECTIVENESS")
			for _, s := range stats {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.2f\n", s.Pattern, s.Intervention, s.Shown, s.Worked, s.Reported, s.ReportedWorked, s.Effectiveness)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&pattern, "pattern", "", "only this pattern")
	cmd.Flags().StringVar(&status, "status", "", "only alerts in this status: open, active, sent, worked, failed or resolved")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many alerts")
	cmd.AddCommand(newReportInterventionCmd(a))
	return cmd
}

func validStatus(s string) bool {
	switch s {
	case "open", api.CoachStatusActive, api.CoachStatusSent, api.CoachStatusWorked, api.CoachStatusFailed, api.CoachStatusResolved:
		return true
	}
	return false
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func newReportInterventionCmd(a *app) *cobra.Command {
	var worked, failed bool
	var notes string
	var alert int64
	cmd := &cobra.Command{
		Use:   "report PATTERN INTERVENTION (--worked | --failed)",
		Short: "Say whether an intervention worked",
		Long: `Record whether an intervention (a reminder for a behaviour pattern) worked.
With --alert naming a reminder still being measured, the report settles it;
otherwise it counts as extra evidence toward the intervention's
effectiveness. The ids are in system3 patterns ID.`,
		Example: `  system3 interventions report formatter_loop run-the-formatter --worked
  system3 interventions report test_error_loop isolate-root-cause --failed --alert 12 --notes "it re-ran the test anyway"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if worked == failed {
				return errors.New("say how it went: pass --worked or --failed")
			}
			ctx := cmd.Context()
			co, err := a.Client(ctx, core.PartsOnly)
			if err != nil {
				return err
			}
			defer a.Release(co.Close)
			st, err := co.ReportIntervention(ctx, api.CoachReport{Pattern: args[0], Intervention: args[1], Worked: worked, Notes: notes, Alert: alert, By: "cli"})
			if err != nil {
				if errors.Is(err, api.ErrCoachNotFound) {
					return fmt.Errorf("%v; run `system3 patterns` for the ids", err)
				}
				return err
			}
			chosen := ""
			if st.Chosen {
				chosen = "; it is the one chosen now"
			}
			fmt.Fprintf(a.stdout, "recorded: %s/%s effectiveness %.2f (shown %d, worked %d, reported %d, %d worked)%s\n",
				st.Pattern, st.Intervention, st.Effectiveness, st.Shown, st.Worked, st.Reported, st.ReportedWorked, chosen)
			return nil
		},
	}
	cmd.Flags().BoolVar(&worked, "worked", false, "the agent left the loop after it")
	cmd.Flags().BoolVar(&failed, "failed", false, "it did not help")
	cmd.Flags().StringVar(&notes, "notes", "", "what happened")
	cmd.Flags().Int64Var(&alert, "alert", 0, "the alert the reminder belonged to (see system3 interventions)")
	return cmd
}
