package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

func newTasksCmd(a *app) *cobra.Command {
	var asJSON, full bool
	var taskID string
	cmd := &cobra.Command{
		Use:   "tasks [LIST-ID]",
		Short: "Print Claude Code task lists with progress and per-task status",
		Long: `Print every Claude Code task list under the tasks dir (default ~/.claude/tasks,
one directory per list) and every legacy TodoWrite file in ~/.claude/todos,
with progress, in-progress and blocked tasks, and the status of each task.
Files that cannot be read are listed with the reason; the rest of the list
is still shown.

With LIST-ID, print only that list. With --json, print a stable document
({"schema": "system3.tasks/v1", "lists": [...]}) for scripts and agents.

Task files are written by agents and nothing bounds them: subjects longer
than 200 characters and descriptions longer than 2,000 are cut, ending
"… (+N chars)" (in JSON the task says "truncated": true). --full prints
every text whole; --task ID prints one task of LIST-ID whole, with its
description.`,
		Example: `  system3 tasks
  system3 tasks PRD-AUTH-001
  system3 tasks PRD-AUTH-001 --task 3 --full
  system3 --tasks-dir /tmp/tasks tasks --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root := a.Settings.TasksDir
			lists, err := tasks.Load(root, a.Settings.TodosDir)
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
			if taskID != "" {
				if len(args) == 0 {
					return fmt.Errorf("--task needs the task's list: system3 tasks LIST-ID --task %s", taskID)
				}
				t, ok := tasks.TaskFull(lists[0], taskID)
				if !ok {
					return fmt.Errorf("list %q has no task %q; run `system3 tasks %s` to see its tasks", args[0], taskID, args[0])
				}
				return writeTask(a, t, asJSON)
			}
			if asJSON {
				if full {
					return tasks.WriteJSONFull(a.stdout, lists)
				}
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
			if full {
				return tasks.WriteTextFull(a.stdout, lists, time.Now())
			}
			return tasks.WriteText(a.stdout, lists, time.Now())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable JSON document")
	cmd.Flags().BoolVar(&full, "full", false, "print subjects and descriptions whole, however long")
	cmd.Flags().StringVar(&taskID, "task", "", "print only this task of LIST-ID, whole")
	return cmd
}

// writeTask prints one task whole: as JSON (the tasks document's task
// object), or as text, its fields then its description.
func writeTask(a *app, t api.TaskDoc, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(t)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "task %s: %s\n", sanitize(t.ID), sanitize(t.Subject))
	fmt.Fprintf(&b, "status: %s", t.Status)
	if t.Blocked {
		fmt.Fprintf(&b, " (blocked by %s)", sanitize(strings.Join(t.BlockedBy, ", ")))
	}
	b.WriteByte('\n')
	if t.ActiveForm != "" {
		fmt.Fprintf(&b, "active form: %s\n", sanitize(t.ActiveForm))
	}
	if t.Owner != "" {
		fmt.Fprintf(&b, "owner: %s\n", sanitize(t.Owner))
	}
	if t.Description != "" {
		b.WriteString("\n")
		for _, line := range strings.Split(t.Description, "\n") {
			b.WriteString(sanitize(line) + "\n")
		}
	}
	_, err := io.WriteString(a.stdout, b.String())
	return err
}
