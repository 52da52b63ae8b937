package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
)

func newWakesCmd(a *app) *cobra.Command {
	var (
		all, asJSON bool
		reasons     []string
		session     string
	)
	cmd := &cobra.Command{
		Use:   "wakes",
		Short: "List the wakes: id, status, age, reason and session",
		Long: `List the wakes system3 holds, oldest first: each one's id (what ack, answer
--wake and wait name), status, age, reason, session and pane, and what it is
about (the question and its command, or the suggested action). The last line
says how many need a person.

The words are those of docs/wakes.md: a wake is raised, open until its
condition ends (the prompt was answered, the agent moved on), then resolved;
separately, someone may acknowledge it. A wake needs a person while it is
open, unacknowledged and not information (heartbeats and summaries are
information).

Without --all only the open, unacknowledged wakes are listed; --all adds the
resolved and acknowledged ones system3 still keeps. --json prints the list
as a JSON array of whole wakes.`,
		Example: `  system3 wakes
  system3 wakes --all
  system3 wakes --reason awaiting_input --session 'orch-*'
  system3 wakes --json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := waitFilter(reasons, session)
			if err != nil {
				return err
			}
			f.IncludeAcked, f.IncludeResolved = all, all
			ctx := cmd.Context()
			svc, err := a.Client(ctx, core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(svc.Close)
			evs, err := svc.Wakes(ctx, f)
			if err != nil {
				return err
			}
			if evs == nil {
				evs = []api.Wake{}
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				return enc.Encode(evs)
			}
			return writeWakes(a, evs, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "also list resolved and acknowledged wakes")
	fl.BoolVar(&asJSON, "json", false, "print the wakes as a JSON array")
	fl.StringSliceVar(&reasons, "reason", nil, "only wakes with these reasons (comma-separated or repeated)")
	fl.StringVar(&session, "session", "", "only wakes from tmux sessions matching this glob, like 'orch-*'")
	return cmd
}

// writeWakes prints one line per wake and the count that needs a person.
// Every text in it came from a terminal or a client, so it is sanitized.
func writeWakes(a *app, evs []api.Wake, now time.Time) error {
	if len(evs) == 0 {
		_, err := fmt.Fprintln(a.stdout, "no wakes; `system3 wakes --all` lists resolved and acknowledged ones too")
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGE\tREASON\tSESSION\tWHAT")
	for _, ev := range evs {
		what := ev.Question
		if ev.Details != "" && ev.Reason == api.ReasonAwaitingInput {
			what += " — " + ev.Details
		}
		if what == "" {
			what = ev.SuggestedAction
		}
		if ev.Resolved && ev.Resolution != "" {
			what = "(" + ev.Resolution + ") " + what
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sanitize(ev.ID), sanitize(ev.Status()), strings.TrimSuffix(age(now.Sub(ev.Time)), " ago"),
			sanitize(string(ev.Reason)), sanitize(ev.Place()), truncate(sanitize(what), 100))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(a.stdout, api.NeedingPersonText(api.NeedingPerson(evs)))
	return err
}
