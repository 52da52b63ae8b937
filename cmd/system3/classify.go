package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/monitor/rules"
)

// maxCaptureSize bounds what classify reads: a capture is a screen plus
// some history, never hundreds of megabytes.
const maxCaptureSize = 16 << 20

// classifyDoc is the JSON printed by `classify --json`.
type classifyDoc struct {
	Agent    string   `json:"agent"`
	AgentBy  string   `json:"agent_by"`
	State    string   `json:"state"`
	Kind     string   `json:"kind"`
	Rule     string   `json:"rule"`
	Evidence []string `json:"evidence"`
	Question string   `json:"question"`
	Detail   string   `json:"detail"`
	Options  []string `json:"options"`
}

func newClassifyCmd(a *app) *cobra.Command {
	var asJSON bool
	var agent, process string
	cmd := &cobra.Command{
		Use:   "classify [--agent NAME] [--json] FILE|-",
		Short: "Classify one saved pane capture with the active rules",
		Long: `Classify a saved capture (tmux capture-pane -p output, with or without
escape sequences) with the same engine and rules the monitors use, and print
the state, kind, deciding rule, evidence, question and options.

This is the offline way to test and debug rules: save a screen with
  tmux capture-pane -p -J -t PANE > screen.txt
(or system3 rules capture PANE -o screen.txt) then run system3 classify
screen.txt. The agent is recognised from the screen unless --agent names
it; --process gives the pane's command as the monitor would see it.

A file written by system3 rules capture is read as system3 rules test reads
it: its header is not screen, and its "process", "shell", "job" and "dead"
lines say what the pane ran, so a shell's foreground job classifies as the
monitor saw it. --process, when given, wins over the header's process.`,
		Example: `  system3 classify screen.txt
  tmux capture-pane -p -J -t %3 | system3 classify --json -
  system3 classify --agent claude --process claude screen.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := a.LoadRules()
			if err != nil {
				return err
			}
			if agent != "" && !e.HasAgent(agent) {
				return fmt.Errorf("unknown agent %q; `system3 rules` lists the agents", agent)
			}
			data, err := readCapture(args[0], a.stdin)
			if err != nil {
				return err
			}
			// A rules capture's header says what the pane ran, read as
			// rules test reads it; the flags given win.
			c, err := rules.ParseCapture(args[0], data)
			if err != nil {
				return err
			}
			in := c.Input()
			if agent != "" {
				in.Agent = agent
			}
			if process != "" {
				in.Processes = []string{process}
			}
			r := e.Classify(in)
			doc := classifyDoc{
				Agent: r.Agent, AgentBy: r.AgentBy, State: string(r.State), Kind: r.Kind, Rule: r.Rule,
				Evidence: r.Evidence, Question: r.Question, Detail: r.Detail, Options: r.Options,
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			return writeClassifyText(a.stdout, doc)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON with keys agent, state, kind, rule, evidence, question, options")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent on screen (default: recognise it)")
	cmd.Flags().StringVar(&process, "process", "", "the pane's foreground command, as the monitor would see it")
	return cmd
}

func readCapture(name string, stdin io.Reader) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open capture: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxCaptureSize+1))
	if err != nil {
		return nil, fmt.Errorf("read capture %s: %w", name, err)
	}
	if len(data) > maxCaptureSize {
		return nil, fmt.Errorf("capture %s is larger than %d MiB; save only the screen and some history (capture-pane -S -2000)", name, maxCaptureSize>>20)
	}
	return data, nil
}

func writeClassifyText(w io.Writer, d classifyDoc) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	agent := d.Agent
	if agent == "" {
		agent = "(not recognised)"
	} else if d.AgentBy != "" {
		agent += " (by " + d.AgentBy + ")"
	}
	state := d.State
	if d.Kind != "" {
		state += " / " + d.Kind
	}
	fmt.Fprintf(tw, "agent:\t%s\n", agent)
	fmt.Fprintf(tw, "state:\t%s\n", state)
	fmt.Fprintf(tw, "rule:\t%s\n", d.Rule)
	for i, l := range d.Evidence {
		label := ""
		if i == 0 {
			label = "evidence:"
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, sanitize(l))
	}
	if d.Question != "" {
		fmt.Fprintf(tw, "question:\t%s\n", sanitize(d.Question))
	}
	if d.Detail != "" {
		fmt.Fprintf(tw, "about:\t%s\n", sanitize(d.Detail))
	}
	for i, o := range d.Options {
		label := ""
		if i == 0 {
			label = "options:"
		}
		fmt.Fprintf(tw, "%s\t%d. %s\n", label, i+1, sanitize(o))
	}
	return tw.Flush()
}

func newRulesCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the active detection rules and agents, and where each came from",
		Long: `List the agents system3 recognises and the active detection rules, highest
priority first, with the file each came from: "builtin" for the embedded
defaults, or the path of your rules.yaml (in the config directory, beside
config.yaml), which can add rules, replace a rule by reusing its id, or
switch rules off with "disable: [id, ...]". See docs/rules.md.

system3 rules capture PANE saves a pane's screen, secrets redacted, as a
labelled capture; system3 rules test DIR checks a folder of them against
the active rules.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := a.LoadRules()
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"schema":     "system3.rules/v1",
					"user_rules": a.RulesPath(),
					"agents":     e.Agents(),
					"rules":      e.Rules(),
					"disabled":   disabledOrEmpty(e.Disabled()),
				})
			}
			fmt.Fprintf(a.stdout, "user rules file: %s\n\nAGENTS\n", a.RulesPath())
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPROCESSES\tSOURCE")
			for _, ag := range e.Agents() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", ag.Name, strings.Join(ag.Processes, " "), ag.Source)
			}
			tw.Flush()
			fmt.Fprintf(a.stdout, "\nRULES (highest priority first)\n")
			tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENTS\tSTATE\tKIND\tPRIORITY\tSOURCE")
			for _, r := range e.Rules() {
				agents := strings.Join(r.Agents, ",")
				if agents == "" {
					agents = "any"
				}
				kind := r.Kind
				if kind == "" {
					kind = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", r.ID, agents, r.State, kind, r.Priority, r.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if d := e.Disabled(); len(d) > 0 {
				fmt.Fprintf(a.stdout, "\nDISABLED (not applied)\n")
				tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tKIND\tSOURCE\tDISABLED BY")
				for _, x := range d {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.ID, x.Kind, x.Source, x.By)
				}
				return tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newRulesCaptureCmd(a), newRulesTestCmd(a))
	return cmd
}

func disabledOrEmpty(d []rules.Disabled) []rules.Disabled {
	if d == nil {
		return []rules.Disabled{}
	}
	return d
}
