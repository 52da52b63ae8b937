package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/fakeagent"
)

// newFakeAgentCmd is the hidden `fake-agent` command: a terminal program
// that looks like Claude Code to system3's rules. The demo runs one per
// tmux session, and the end-to-end tests use it instead of the real CLI.
func newFakeAgentCmd(a *app) *cobra.Command {
	var opt fakeagent.Options
	var lines []string
	var marks, inputs string
	for _, s := range fakeagent.Scripts() {
		lines = append(lines, fmt.Sprintf("  %-11s %s", s.Name, s.Summary))
	}
	cmd := &cobra.Command{
		Use:    "fake-agent --script NAME [--tasks-dir DIR --task-list ID]",
		Short:  "Imitate a Claude Code session in this terminal (for the demo and tests)",
		Hidden: true,
		Long: `Draw the screens Claude Code draws (spinner, input box, permission and
question dialogs, API error retries, a crash) and follow a script, reading
keys like the real CLI: digits answer dialogs, Escape interrupts, typed
text and Enter submit a prompt. It calls no model and no network.

Scripts:
` + strings.Join(lines, "\n") + `

With --tasks-dir and --task-list it also writes a Claude Code task list,
DIR/ID/<n>.json, and moves its tasks from pending to in_progress to
completed as the script goes.`,
		Example:     "  system3 fake-agent --script permission --tasks-dir /tmp/tasks --task-list PRD-BILLING",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{skipSetup: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.Script == "" {
				return errors.New("--script is required (see --help for the scripts)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
			defer stop()
			if marks != "" {
				f, err := os.OpenFile(marks, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
				if err != nil {
					return fmt.Errorf("open the marks file: %w", err)
				}
				defer f.Close()
				opt.Marks = f
			}
			if inputs != "" {
				f, err := os.OpenFile(inputs, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
				if err != nil {
					return fmt.Errorf("open the inputs file: %w", err)
				}
				defer f.Close()
				opt.Inputs = f
			}
			opt.In, opt.Out = a.stdin, a.term
			opt.Color = a.Getenv("NO_COLOR") == ""
			if f, ok := a.term.(*os.File); ok {
				fd := int(f.Fd())
				opt.Size = func() (int, int) {
					w, h, err := fakeagent.TermSize(fd)
					if err != nil {
						return 0, 0
					}
					return w, h
				}
			}
			if f, ok := a.stdin.(*os.File); ok {
				if restore, err := fakeagent.MakeRaw(int(f.Fd())); err == nil {
					defer restore()
				}
			}
			resized := make(chan os.Signal, 1)
			signal.Notify(resized, syscall.SIGWINCH)
			defer signal.Stop(resized)
			opt.Resized = resized

			err := fakeagent.Run(ctx, opt)
			var crash *fakeagent.CrashError
			if errors.As(err, &crash) {
				return &exitError{code: 1} // the trace is on the screen already
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Script, "script", "", "what the agent does: "+scriptNames())
	f.StringVar(&opt.TasksDir, "tasks-dir", "", "root of the task lists to write (with --task-list)")
	f.StringVar(&opt.TaskList, "task-list", "", "id of the task list to write (a directory name)")
	f.DurationVar(&opt.PromptEvery, "prompt-every", 0, "stream script: show a permission prompt at random times, on average this often")
	f.DurationVar(&opt.PromptHold, "prompt-hold", 2*time.Second, "stream script: how long a prompt waits for an answer before the agent carries on")
	f.StringVar(&marks, "marks", "", "stream script: append the time each prompt is drawn (Unix ns) to this file")
	f.StringVar(&inputs, "inputs", "", "append each key, paste and prompt the agent reads, with what it was doing then (idle, working, permission, question), to this file")
	return cmd
}

func scriptNames() string {
	var names []string
	for _, s := range fakeagent.Scripts() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}
