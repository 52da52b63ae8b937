package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/tasks"
)

func newTasksCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tasks [LIST-ID]",
		Short: "Print Claude Code task lists with progress and per-task status",
		Long: `Print every Claude Code task list under the tasks dir (default ~/.claude/tasks,
one directory per list) and every legacy TodoWrite file in ~/.claude/todos,
with progress, in-progress and blocked tasks, and the status of each task.
Files that cannot be read are listed with the reason; the rest of the list
is still shown.

With LIST-ID, print only that list. With --json, print a stable document
({"schema": "system3.tasks/v1", "lists": [...]}) for scripts and agents.`,
		Example: `  system3 tasks
  system3 tasks PRD-AUTH-001
  system3 --tasks-dir /tmp/tasks tasks --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := a.settings.TasksDir
			lists, err := tasks.Load(root, a.settings.TodosDir)
			if err != nil && !errors.Is(err, tasks.ErrNoRoot) {
				return err
			}
			noRoot := err != nil
			if len(args) == 1 {
				l, ok := tasks.Find(lists, args[0])
				if !ok {
					return fmt.Errorf("no task list %q under %s; run `system3 tasks` to see the lists", args[0], root)
				}
				lists = []tasks.List{l}
			}
			if asJSON {
				return tasks.WriteJSON(a.stdout, lists)
			}
			if len(lists) == 0 {
				if noRoot {
					fmt.Fprintf(a.stdout, "no task lists: %s does not exist yet (Claude Code creates it when an agent first uses its task tools; choose another root with --tasks-dir)\n", root)
				} else {
					fmt.Fprintf(a.stdout, "no task lists under %s\n", root)
				}
				return nil
			}
			return tasks.WriteText(a.stdout, lists, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	return cmd
}
