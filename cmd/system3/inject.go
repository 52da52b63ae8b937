package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// actionOrigin is how actions from the CLI are recorded in the audit log.
const actionOrigin = "cli"

// maxInjectText bounds text read from stdin for inject. The service
// refuses (and audits) text over tmux.MaxText; this only stops reading
// a file that is far too big.
const maxInjectText = 4 * tmux.MaxText

// targetFlags are the --session/--pane flags every action takes.
type targetFlags struct {
	session, pane string
}

func (f *targetFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.session, "session", "s", "", "tmux session name, session:window.pane target, or $id (a session with several agent panes needs --pane)")
	cmd.Flags().StringVarP(&f.pane, "pane", "p", "", "tmux pane `ID`, such as %3 (system3 status lists them)")
}

// addRouted adds the flags of an action that can be routed to a host.
func (f *targetFlags) addRouted(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.session, "session", "s", "", "tmux session name, session:window.pane target, or $id (a session with several agent panes needs --pane); HOST:SESSION acts on a host of the config")
	cmd.Flags().StringVarP(&f.pane, "pane", "p", "", "tmux pane `ID`, such as %3 (system3 status lists them); HOST:%3 acts on a host of the config")
}

// given reports whether a target flag was given.
func (f *targetFlags) given() bool { return f.session != "" || f.pane != "" }

// target is the target the flags name, and the host it is on: "" or local
// for this machine, else a host of the config (HOST:SESSION, HOST:%3).
func (f *targetFlags) target(a *app) (string, api.Target, error) {
	switch {
	case f.session != "" && f.pane != "":
		return "", api.Target{}, errors.New("give --session or --pane, not both")
	case f.session == "" && f.pane == "":
		return "", api.Target{}, errors.New("name the target with --session NAME or --pane ID (`system3 status` lists them)")
	}
	if f.session != "" {
		host, rest, _ := api.SplitHost(f.session, a.IsHost)
		return host, api.Target{Session: rest}, nil
	}
	host, rest, _ := api.SplitHost(f.pane, a.IsHost)
	return host, api.Target{Pane: rest}, nil
}

func newInjectCmd(a *app) *cobra.Command {
	var tf targetFlags
	var noEnter, urgent, visible, asJSON bool
	cmd := &cobra.Command{
		Use:   "inject (--session NAME | --pane ID) [--no-enter] [--urgent] [--visible-controls] TEXT|-",
		Short: "Type guidance into an agent's pane and submit it, checked",
		Long: `Type TEXT into the agent's pane exactly as given (it is data, never tmux
syntax), press Enter, and check that the agent took it. With "-" the text is
read from stdin (multi-line text is fine). --no-enter types without
submitting; --urgent interrupts the agent first (Escape) so it reads the
guidance now rather than after its current step.

TEXT is text: printable characters, newlines and tabs, up to 256 KB. A text
holding any other control character (Ctrl-C, carriage return, NUL...), ESC
(and so any escape sequence), a C1 control or invalid UTF-8 is refused, with
the byte and its offset, and nothing is typed; --visible-controls types
those bytes as visible text instead (ESC as ^[, Ctrl-C as ^C, byte 0xff as
\xff). Nothing in TEXT ever reaches the pane as a key.

Exit status 0 means delivered and verified; 0 with a warning on stderr means
delivered but not verified (the pane did not visibly take the text: look at
it); non-zero means not delivered. Every injection, refused ones too, is
recorded in the audit log (audit.jsonl in the state dir) before anything is
typed; when the log cannot be written, nothing is typed.`,
		Example: `  system3 inject --session orch-auth "Run the tests before you commit."
  system3 inject --pane %3 --urgent "Stop: you are editing the wrong file."
  git diff | system3 inject --session orch-auth -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New(`give the text as one argument (quote it), or "-" to read it from stdin`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			host, t, err := tf.target(a)
			if err != nil {
				return err
			}
			text := args[0]
			if text == "-" {
				b, err := io.ReadAll(io.LimitReader(a.stdin, maxInjectText+1))
				if err != nil {
					return fmt.Errorf("read the text from stdin: %w", err)
				}
				if len(b) > maxInjectText {
					return fmt.Errorf("the text on stdin is over %d KB, and one send types at most %d KB; send guidance, not files (point the agent at a file instead)", maxInjectText>>10, tmux.MaxText>>10)
				}
				text = strings.TrimRight(string(b), "\n")
			}
			if strings.TrimSpace(text) == "" {
				return errors.New("the text is empty; nothing to send")
			}
			var flags []string
			for _, f := range []struct {
				on   bool
				name string
			}{{noEnter, "--no-enter"}, {urgent, "--urgent"}, {visible, "--visible-controls"}} {
				if f.on {
					flags = append(flags, f.name)
				}
			}
			r := routed{action: "inject", target: t.String(), text: text, args: strings.Join(flags, " ")}
			return a.runAction(cmd, asJSON, host, r, func(svc api.Service, origin string) (api.ActionResult, error) {
				return svc.Inject(cmd.Context(), api.InjectRequest{Target: t, Text: text, NoEnter: noEnter, Urgent: urgent, VisibleControls: visible, Origin: origin})
			})
		},
	}
	tf.addRouted(cmd)
	cmd.Flags().BoolVar(&noEnter, "no-enter", false, "type the text without pressing Enter")
	cmd.Flags().BoolVar(&urgent, "urgent", false, "interrupt the agent (Escape) before typing")
	cmd.Flags().BoolVar(&visible, "visible-controls", false, "type control characters, ESC and invalid UTF-8 as visible text (^C, ^[, \\xff) instead of refusing the text")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newAnswerCmd(a *app) *cobra.Command {
	var tf targetFlags
	var asJSON bool
	var wakeID, prompt string
	cmd := &cobra.Command{
		Use:   "answer (--session NAME | --pane ID) OPTION",
		Short: "Answer the prompt an agent is waiting at",
		Long: `Answer the permission prompt or question a session is waiting at
(state awaiting_input). OPTION is an option's number as the screen shows it,
an option's label (or a unique part of it), "yes" (the first option that
starts with Yes) or "no" (declines the way the agent expects: Escape for
Claude Code, or the agent's No option). system3 presses the keys the agent
needs (a digit, or a letter and Enter for aider) and prints what it chose.

An answer is about one prompt: right before typing, system3 reads the pane
again and types only if it still shows that prompt and nobody answered it
yet; otherwise it types nothing and says what the pane shows now. --wake ID
names the prompt by the wake ` + "`system3 wait`" + ` printed (no --session needed),
--prompt by its identity (` + "`status --json`" + `'s prompt); without either it is the
prompt system3 last saw. The answer resolves the prompt's wake.

It refuses when the session is not awaiting input, or when OPTION matches no
option, and lists the options. Every answer is recorded in the audit log.`,
		Example: `  system3 answer --session orch-auth yes
  system3 answer --session orch-db 2
  system3 answer --session orch-db sqlite
  system3 answer --pane %3 no
  system3 answer --wake w0000000012-mh8x3k2 1`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New(`give one OPTION: a number, an option's label, "yes" or "no"`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var host string
			var t api.Target
			if wakeID == "" || tf.given() {
				var err error
				if host, t, err = tf.target(a); err != nil {
					return err
				}
			} else {
				// HOST:ID, as wait --all-hosts names a wake of a host.
				host, wakeID, _ = api.SplitHost(wakeID, a.IsHost)
			}
			r := routed{action: "answer", target: cmp.Or(t.String(), wakeID), args: args[0]}
			return a.runAction(cmd, asJSON, host, r, func(svc api.Service, origin string) (api.ActionResult, error) {
				return svc.Answer(cmd.Context(), api.AnswerRequest{Target: t, Wake: wakeID, Prompt: prompt, Answer: args[0], Origin: origin})
			})
		},
	}
	tf.addRouted(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&wakeID, "wake", "", "answer the prompt of this awaiting_input wake (its id, as wait printed it), and only while it is on screen")
	cmd.Flags().StringVar(&prompt, "prompt", "", "answer only while this prompt (its identity, as status --json prints it) is on screen")
	return cmd
}

func newInterruptCmd(a *app) *cobra.Command {
	var tf targetFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "interrupt (--session NAME | --pane ID)",
		Short: "Interrupt what an agent is doing (Escape, or Ctrl-C for aider and shells)",
		Long: `Interrupt the agent in a pane: Escape for Claude Code, Codex and Gemini CLI
(which stop the current step and wait for input), Ctrl-C for aider and plain
shells. Recorded in the audit log.`,
		Example: `  system3 interrupt --session orch-auth`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, t, err := tf.target(a)
			if err != nil {
				return err
			}
			r := routed{action: "interrupt", target: t.String()}
			return a.runAction(cmd, asJSON, host, r, func(svc api.Service, origin string) (api.ActionResult, error) {
				return svc.Interrupt(cmd.Context(), api.InterruptRequest{Target: t, Origin: origin})
			})
		},
	}
	tf.addRouted(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// runAction runs one action on the monitors of host ("" or local: this
// machine's; else routed there through ssh, see routeAction) and reports
// it.
func (a *app) runAction(cmd *cobra.Command, asJSON bool, host string, r routed, do func(svc api.Service, origin string) (api.ActionResult, error)) error {
	var res api.ActionResult
	if host != "" && host != api.LocalHost {
		var err error
		res, err = routeAction(cmd.Context(), a, host, r, do, actionOutcome)
		if err != nil {
			return actionError(err)
		}
		// Name the pane as this machine names it: HOST:TARGET.
		res.Target, res.Session = api.JoinHost(host, res.Target), api.JoinHost(host, res.Session)
	} else {
		svc, err := a.Client(cmd.Context(), core.RunMonitors)
		if err != nil {
			return err
		}
		defer a.Release(svc.Close)
		res, err = do(svc, actionOrigin)
		if err != nil {
			return actionError(err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(res)
	}
	fmt.Fprintln(a.stdout, describeAction(res))
	if res.Action == "inject" && res.Delivered && !res.Verified && res.Detail != "" {
		fmt.Fprintf(a.Stderr, "system3: warning: delivered but not verified: %s; look at the pane (`tmux attach -t %s`)\n", res.Detail, res.Target)
	}
	return nil
}

// actionError turns the service's errors into what to do next.
func actionError(err error) error {
	switch {
	case errors.Is(err, api.ErrNoSender):
		return fmt.Errorf("%w; this system3 daemon cannot type into panes", err)
	}
	return err
}

// describeAction is one line saying what was sent where.
func describeAction(r api.ActionResult) string {
	var b strings.Builder
	switch r.Action {
	case "inject":
		fmt.Fprintf(&b, "sent %d bytes to %s (%s)", len(r.Text), r.Target, r.Pane)
		if len(r.Keys) > 0 {
			fmt.Fprintf(&b, " after %s", strings.Join(r.Keys, " "))
		}
		switch {
		case r.Verified:
			b.WriteString(": delivered and verified")
		case r.Delivered:
			b.WriteString(": delivered, not verified")
		}
	case "answer":
		fmt.Fprintf(&b, "answered %s (%s) with %q: pressed %s", r.Target, r.Pane, r.Option, strings.Join(r.Keys, " "))
	default:
		fmt.Fprintf(&b, "%s %s (%s): pressed %s", r.Action, r.Target, r.Pane, strings.Join(r.Keys, " "))
	}
	return b.String()
}
