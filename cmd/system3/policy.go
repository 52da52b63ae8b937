package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	yaml "go.yaml.in/yaml/v3"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/wake"
)

const policyLong = `The approval policy is rules that decide an agent's permission requests
before its own dialog shows: allow, deny (with a message the agent is
given) or ask (hold the request while a wake goes out, and return the
answer). Rules live in policy.yaml beside the config file, or under
policy: in it; system3 reloads them when either changes, and keeps the
rules in force when a changed file does not load. No rule matching means
system3 decides nothing: the agent shows its own dialog. Only agents with a
permission hook are decided (Claude Code's and Codex's PermissionRequest,
the Gemini CLI's BeforeTool, whose allow takes effect in its yolo mode);
system3 never types an answer to a dialog by policy. See docs/policy.md.`

func newPolicyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test the approval policy against recorded permission requests, and suggest rules",
		Long:  policyLong,
		Example: `  system3 policy test
  system3 policy test --file ./policy.yaml --since 168h
  system3 policy suggest --min 10`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newPolicyTestCmd(a), newPolicySuggestCmd(a))
	return cmd
}

func newPolicyTestCmd(a *app) *cobra.Command {
	var file string
	var since time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "test",
		Short: "Show what the policy would have decided about recorded permission requests",
		Long: `Replay the permission requests recorded in the state dir through the
policy, and print what each would have been decided, beside what was
decided then. The requests come from the audit log (audit.jsonl: every
request Claude Code's permission hook delivered, its input exact) and the
wake journal (wakes.jsonl: every permission prompt a wake was raised for,
its command as the screen showed it, which may be wrapped). Lines marked !
are where the policy would have gone against a person: denied what they
approved, or allowed what they declined.

Without --file it reads the policy in force (policy.yaml beside the config,
and policy: in it); with --file, that rules file alone, so a new policy is
tried before it is put in place. A file that does not load is an error
naming the file and the rule.`,
		Example: `  system3 policy test
  system3 policy test --file ~/policy-draft.yaml --since 168h
  system3 policy test --json | jq 'select(.would.decision == "allow")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, from, err := a.loadPolicy(file)
			if err != nil {
				return err
			}
			recs, srcs, err := a.permissionHistory(since)
			if err != nil {
				return err
			}
			return printPolicyTest(a, p, from, recs, srcs, asJSON)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "a rules file to test instead of the policy in force")
	cmd.Flags().DurationVar(&since, "since", 0, "only requests this recent (e.g. 168h; 0: all recorded)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per request")
	return cmd
}

func newPolicySuggestCmd(a *app) *cobra.Command {
	var file string
	var min int
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "suggest",
		Short: "Propose allow rules from what people approved again and again",
		Long: `Propose allow rules from the recorded permission requests (as policy test
reads them): a command prefix ("go test", "npm run lint"), an MCP tool or a
fetched host that people approved at least --min times and never declined.
A declined command counts against every prefix in it. Rules the policy
already covers are left out. The proposals are printed as a policy.yaml
to read, trim and test with policy test --file before putting it in place;
nothing is changed.`,
		Example: `  system3 policy suggest
  system3 policy suggest --min 20 > /tmp/suggested.yaml
  system3 policy test --file /tmp/suggested.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if min < 1 {
				return errors.New("--min must be 1 or more")
			}
			p, _, err := a.loadPolicy(file)
			if err != nil {
				return err
			}
			recs, srcs, err := a.permissionHistory(since)
			if err != nil {
				return err
			}
			return printSuggestions(a, approval.Suggest(recs, p), min, len(recs), srcs)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "leave out what this rules file allows, instead of the policy in force")
	cmd.Flags().IntVar(&min, "min", 5, "approvals needed for a proposal")
	cmd.Flags().DurationVar(&since, "since", 0, "only requests this recent (e.g. 168h; 0: all recorded)")
	return cmd
}

// loadPolicy reads file, or the policy in force; from names where.
func (a *app) loadPolicy(file string) (*approval.Policy, string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("read the rules file: %w", err)
		}
		p, err := approval.Parse(file, data)
		return p, file, err
	}
	p, err := approval.Load(a.Settings.ConfigPath)
	if err != nil {
		return nil, "", err
	}
	from := strings.Join(p.Sources, " and ")
	if from == "" {
		from = "no rules (neither " + approval.PathBeside(a.Settings.ConfigPath) + " nor policy: in " + a.Settings.ConfigPath + " exists)"
	}
	return p, from, nil
}

// permissionHistory reads the recorded permission requests of the state
// dir, and says how many came from where.
func (a *app) permissionHistory(since time.Duration) ([]approval.Record, string, error) {
	dir := a.Settings.StateDir
	var entries []api.AuditEntry
	for _, name := range []string{audit.File + ".1", audit.File} {
		es, err := audit.Read(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("read the audit log: %w", err)
		}
		entries = append(entries, es...)
	}
	ws, _, err := wake.ReadJournal(filepath.Join(dir, wake.JournalFile))
	if err != nil {
		return nil, "", err
	}
	fromAudit, fromWakes := approval.FromAudit(entries), approval.FromWakes(ws)
	recs := approval.History(entries, ws)
	if since > 0 {
		cut := time.Now().Add(-since)
		i := sort.Search(len(recs), func(i int) bool { return !recs[i].Time.Before(cut) })
		recs = recs[i:]
	}
	srcs := fmt.Sprintf("%s: %d, %s: %d", audit.File, len(fromAudit), wake.JournalFile, len(fromWakes))
	return recs, srcs, nil
}

// policyTestRow is one request of policy test --json.
type policyTestRow struct {
	approval.Record
	Would approval.Verdict `json:"would"`
	// Against: the policy would have gone against the person who decided.
	Against bool `json:"against,omitempty"`
}

func printPolicyTest(a *app, p *approval.Policy, from string, recs []approval.Record, srcs string, asJSON bool) error {
	rows := make([]policyTestRow, len(recs))
	counts := map[approval.Decision]int{}
	against := 0
	for i, r := range recs {
		v := p.Decide(r.Request)
		rows[i] = policyTestRow{Record: r, Would: v}
		rows[i].Against = r.By != api.PolicyOrigin &&
			((r.Outcome == approval.Allow && v.Decision == approval.Deny) || (r.Outcome == approval.Deny && v.Decision == approval.Allow))
		counts[v.Decision]++
		if rows[i].Against {
			against++
		}
	}
	if asJSON {
		for _, r := range rows {
			if err := writeJSON(a.stdout, "system3.policy-test/v1", map[string]any{"request": r}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(a.stdout, "policy: %s (%d rules)\n", sanitize(from), len(p.Rules()))
	fmt.Fprintf(a.stdout, "recorded permission requests: %d (%s)\n", len(recs), srcs)
	if len(recs) == 0 {
		fmt.Fprintln(a.stdout, "nothing to replay yet: permission requests are recorded as agents ask (hooks installed: system3 hooks install) and as their prompts raise wakes")
		return nil
	}
	fmt.Fprintln(a.stdout)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tWHEN\tSESSION\tTOOL\tINPUT\tWOULD\tRULE\tTHEN")
	for _, r := range rows {
		mark := ""
		if r.Against {
			mark = "!"
		}
		input := r.Request.Summary()
		if !r.Exact {
			input += " (as shown)"
		}
		would := string(r.Would.Decision)
		if would == "" {
			would = "-"
		}
		rule := r.Would.Rule
		if rule == "" {
			rule = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, r.Time.Local().Format("2006-01-02 15:04"), sanitize(r.Request.Session),
			sanitize(r.Request.Tool), strconv.Quote(oneLine(input, 60)), would, sanitize(rule), sanitize(then(r.Record)))
	}
	tw.Flush()
	fmt.Fprintf(a.stdout, "\nwould allow %d, deny %d, ask %d, and leave %d to the agent's own dialog\n",
		counts[approval.Allow], counts[approval.Deny], counts[approval.Ask], counts[approval.None])
	switch against {
	case 0:
		fmt.Fprintln(a.stdout, "no decision would go against what a person decided")
	case 1:
		fmt.Fprintln(a.stdout, "1 decision would go against what a person decided (marked !)")
	default:
		fmt.Fprintf(a.stdout, "%d decisions would go against what a person decided (marked !)\n", against)
	}
	return nil
}

// then says what became of a recorded request.
func then(r approval.Record) string {
	switch {
	case r.Outcome == approval.None:
		return "no answer recorded"
	case r.By == api.PolicyOrigin:
		return fmt.Sprintf("%sed by rule %s", r.Outcome, r.Rule)
	case r.Outcome == approval.Allow:
		return "approved by " + api.ShortOrigin(r.By)
	default:
		return "declined by " + api.ShortOrigin(r.By)
	}
}

func printSuggestions(a *app, ss []approval.Suggestion, min, n int, srcs string) error {
	var keep []approval.Suggestion
	var notes []string
	for _, s := range ss {
		switch {
		case s.Covered != "":
			notes = append(notes, fmt.Sprintf("%s: allowed already (rule %s)", s.What, s.Covered))
		case s.Declined > 0 && s.Approved >= min:
			notes = append(notes, fmt.Sprintf("%s: not proposed: %s", s.What, s))
		case s.Declined == 0 && s.Approved >= min:
			keep = append(keep, s)
		}
	}
	fmt.Fprintf(a.stdout, "# %d proposals from %d recorded permission requests (%s):\n", len(keep), n, srcs)
	fmt.Fprintf(a.stdout, "# what people approved at least %d times and never declined. Read them, trim\n", min)
	fmt.Fprintln(a.stdout, "# them, and try them with system3 policy test --file before putting them in place.")
	for _, note := range notes {
		fmt.Fprintln(a.stdout, "# "+sanitize(note))
	}
	if len(keep) == 0 {
		return nil
	}
	var doc struct {
		Rules []yaml.Node `yaml:"rules"`
	}
	for _, s := range keep {
		var n yaml.Node
		if err := n.Encode(s.Rule); err != nil {
			return err
		}
		n.HeadComment = sanitize(fmt.Sprintf("%s: %s; last %s", s.What, s, s.Last.Local().Format("2006-01-02 15:04")))
		doc.Rules = append(doc.Rules, n)
	}
	enc := yaml.NewEncoder(a.stdout)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}
