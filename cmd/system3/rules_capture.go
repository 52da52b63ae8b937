package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/rules"
)

func newRulesCaptureCmd(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "capture PANE [-o FILE]",
		Short: "Save a pane's screen, secrets redacted, as a labelled capture for a bug report or a rule test",
		Long: `Save what system3's classifier sees of a pane (its visible screen, without
colours) as a capture file: a header of "# key: value" lines saying the agent
and its version, the state, kind and deciding rule the active rules give this
screen, what the monitor showed, the pane's processes, the tmux version and
the pane's size, then the screen.

Secrets are replaced by [REDACTED] before anything is written: API keys
(sk-..., sk-ant-..., AIza..., ghp_..., github_pat_..., xox?-..., AKIA...),
bearer and basic credentials, JWTs, passwords in URLs, values of password=,
token=, key= and the like, and private key blocks. Read the file before you
share it: redaction catches the common forms, not every secret.

PANE is a pane id (%3), a target (session:window.pane) or a session name.
Without -o the file is capture-<pane>-<time>.txt in the current directory;
-o - writes to standard output.

Attach the file to a bug report, or correct its "state" and "kind" lines to
what the screen really shows, add a rule to your rules.yaml, and keep the
file in a folder that system3 rules test checks (see docs/rules.md).`,
		Example: `  system3 rules capture %3
  system3 rules capture orch-auth -o ~/system3-rules/awaiting_input_new_dialog.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.rulesCapture(cmd.Context(), args[0], out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (- for standard output; default capture-<pane>-<time>.txt)")
	return cmd
}

func (a *app) rulesCapture(ctx context.Context, name, out string) error {
	eng, err := a.LoadRules()
	if err != nil {
		return err
	}
	svc, err := a.Client(ctx, core.RunMonitors)
	if err != nil {
		return err
	}
	defer a.Release(svc.Close)
	snap, err := svc.Snapshot(ctx)
	if err != nil {
		return err
	}
	sess, err := api.ResolveTarget(api.Target{Session: name}, snap.Sessions, snap.Server)
	if err != nil {
		return err
	}
	pv, err := svc.Preview(ctx, api.PreviewRequest{Target: api.Target{Pane: sess.Pane}})
	if err != nil {
		return err
	}
	screen, redacted := rules.Redact(strings.Join(pv.Lines, "\n"))

	in := rules.Input{Screen: screen, Processes: []string{sess.Command}}
	if comm, job, ok := monitor.PaneForeground(sess.PID); ok && eng.ShellFor(comm) != "" {
		in.Shell, in.Job = comm, job
	}
	if r := sess.Evidence.Rule; r == api.RuleUnknownProgram || r == api.RuleGuessChoice {
		// The monitor read the terminal taking keys one at a time.
		in.Raw = true
	}
	dead := sess.Evidence.Rule == api.RulePaneDead
	if dead {
		in.Dead, in.DeadStatus = true, -1
	}
	res := eng.Classify(in)
	agent := res.Agent
	if agent == "" {
		agent = sess.Agent
	}
	tmuxVersion, err := a.TmuxServer().Version(ctx)
	if err != nil {
		tmuxVersion = "unknown"
	}
	header := []rules.Field{
		{Key: "agent", Value: agent},
		{Key: "version", Value: sess.AgentVersion},
		{Key: "state", Value: string(res.State)},
		{Key: "kind", Value: res.Kind},
		{Key: "rule", Value: res.Rule},
		{Key: "evidence", Value: strings.Join(res.Evidence, " | ")},
		{Key: "monitor", Value: fmt.Sprintf("%s %s by %s (%s)", sess.State, orDash(sess.Kind), sess.Evidence.Rule, sess.Evidence.Source)},
		{Key: "process", Value: sess.Command},
	}
	if dead {
		header = append(header, rules.Field{Key: "dead", Value: "yes"})
	}
	if in.Shell != "" {
		header = append(header, rules.Field{Key: "shell", Value: in.Shell}, rules.Field{Key: "job", Value: in.Job})
	}
	if in.Raw {
		header = append(header, rules.Field{Key: "raw", Value: "yes"})
	}
	header = append(header,
		rules.Field{Key: "tmux", Value: strings.TrimPrefix(tmuxVersion, "tmux ")},
		rules.Field{Key: "size", Value: fmt.Sprintf("%dx%d", sess.Width, sess.Height)},
		rules.Field{Key: "taken", Value: pv.Taken.UTC().Format(time.RFC3339)},
		rules.Field{Key: "system3", Value: buildVersion()},
		rules.Field{Key: "redacted", Value: strconv.Itoa(redacted)},
	)
	// The header's free text is redacted too (evidence repeats screen lines).
	for i := range header {
		header[i].Value, _ = rules.Redact(header[i].Value)
	}
	data := rules.FormatCapture(header, screen)
	if out == "-" {
		_, err := io.WriteString(a.stdout, data)
		return err
	}
	if out == "" {
		out = fmt.Sprintf("capture-%s-%s.txt", strings.TrimPrefix(sess.Pane, "%"), pv.Taken.Format("20060102-150405"))
	}
	if err := os.WriteFile(out, []byte(data), 0o600); err != nil {
		return fmt.Errorf("write the capture: %w", err)
	}
	fmt.Fprintf(a.stdout, "saved %s: %s %s by %s (%d secrets redacted)\n", out, res.State, orDash(res.Kind), res.Rule, redacted)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newRulesTestCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "test DIR|FILE...",
		Short: "Check a folder of labelled captures against the active rules",
		Long: `Classify every capture (*.txt, in the folders given and below them) with the
active rules (the built-in ones and your rules.yaml) and compare the result
with the capture's label. Prints PASS or FAIL per file with the deciding rule,
and on a mismatch what was recognised and why; exits non-zero when any
capture fails or has no label.

The label is the "state" and "kind" lines of a header written by system3
rules capture (also "agent", which must match when given; "process",
"shell" and "job" say what the pane ran). A file without such a header is
all screen, labelled by its name: the longest run of its first words
(split at "_", up to the first ".") that names a state or a kind, e.g.
idle_80x24.txt (idle, any kind), permission_bash.txt
(awaiting_input/permission), api_error_500.txt (error/api_error).`,
		Example: `  system3 rules test ~/system3-rules/captures
  system3 rules test awaiting_input_new_dialog.txt`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.rulesTest(args)
		},
	}
	return cmd
}

func (a *app) rulesTest(paths []string) error {
	eng, err := a.LoadRules()
	if err != nil {
		return err
	}
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", p, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".txt") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("no captures (*.txt) in %s; save some with system3 rules capture PANE", strings.Join(paths, ", "))
	}
	slices.Sort(files)
	failed := 0
	for _, f := range files {
		ok, line := testCapture(eng, f)
		if !ok {
			failed++
		}
		fmt.Fprintln(a.stdout, line)
	}
	fmt.Fprintf(a.stdout, "\n%d passed, %d failed\n", len(files)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d captures failed; fix the rules (docs/rules.md) or the captures' labels", failed, len(files))
	}
	return nil
}

// testCapture classifies one capture and says whether it matches its
// label, in one report line (more for a failure).
func testCapture(eng *rules.Engine, path string) (bool, string) {
	data, err := readCapture(path, nil)
	if err != nil {
		return false, fmt.Sprintf("FAIL  %s: %v", path, err)
	}
	c, err := rules.ParseCapture(path, data)
	if err != nil {
		return false, fmt.Sprintf("FAIL  %v", err)
	}
	if !c.Labelled() {
		return false, fmt.Sprintf("FAIL  %s: no label: start its name with a state or kind (idle_..., permission_...) or give it a header (system3 rules capture)", path)
	}
	r := eng.Classify(c.Input())
	want := string(c.State)
	if c.HasKind {
		want += "/" + orDash(c.Kind)
	}
	got := string(r.State) + "/" + orDash(r.Kind)
	ok := r.State == c.State && (!c.HasKind || r.Kind == c.Kind) && (c.Agent == "" || r.Agent == c.Agent)
	if ok {
		return true, fmt.Sprintf("PASS  %s: %s by %s", path, got, r.Rule)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "FAIL  %s: want %s", path, want)
	if c.Agent != "" {
		fmt.Fprintf(&b, " (%s)", c.Agent)
	}
	agent := r.Agent
	if agent == "" {
		agent = "no agent"
	} else if r.AgentBy != "" {
		agent += " by " + r.AgentBy
	}
	fmt.Fprintf(&b, ", got %s (%s) by %s", got, agent, r.Rule)
	if r.Rule == api.RuleNoMatch {
		fmt.Fprintf(&b, ": no rule matched")
	}
	for _, l := range r.Evidence {
		fmt.Fprintf(&b, "\n        %s", sanitize(l))
	}
	return false, b.String()
}
