package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
)

func newRestoreCmd(a *app) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "restore [NAME...|--all]",
		Short: "Bring back orchestrators whose tmux sessions are gone, resuming their agents",
		Long: `Bring back orchestrators after the tmux server or the machine went down.

system3 keeps a record of every orchestrator it spawns (and of sessions
adopted with link) in the state dir (orchestrators.json): its worktree,
agent, task list and the agent's own session id. restore starts each named
orchestrator (or, with --all, every one not stopped on purpose) whose tmux
session is gone again in its worktree, with the agent's resume (claude
--resume ID, codex resume ID, gemini --resume ID), links its task list again,
waits until the agent is ready, and reports each one as restored, skipped
(already running) or failed, with why. Restores never overlap, so nothing
is restored twice. With lifecycle.auto_restore: true in the config file, the
dashboard and system3 serve restore by themselves when they see the tmux
server come back. See docs/lifecycle.md.`,
		Example: `  system3 restore --all
  system3 restore auth billing --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errors.New("name the orchestrators to restore, or pass --all")
			}
			m, err := a.Client(cmd.Context(), core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(m.Close)
			req := api.RestoreRequest{Names: args, All: all, Origin: actionOrigin}
			if !asJSON {
				req.Progress = func(name, msg string) { fmt.Fprintf(a.Stderr, "system3: %s\n", msg) }
			}
			res, err := m.Restore(cmd.Context(), req)
			if err != nil {
				return err
			}
			if asJSON {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				if res.Problem != "" {
					fmt.Fprintf(a.Stderr, "system3: warning: %s\n", res.Problem)
				}
				if len(res.Orchestrators) == 0 {
					fmt.Fprintln(a.stdout, "nothing to restore: no orchestrator is recorded as running")
				}
				for _, o := range res.Orchestrators {
					fmt.Fprintf(a.stdout, "%s: %s", o.Name, o.Status)
					if o.Reason != "" {
						fmt.Fprintf(a.stdout, " (%s)", o.Reason)
					}
					fmt.Fprintln(a.stdout)
				}
			}
			if _, _, failed := res.Counts(); failed > 0 {
				return fmt.Errorf("%d orchestrator(s) could not be restored; see above", failed)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "restore every recorded orchestrator not stopped on purpose")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newFinishCmd(a *app) *cobra.Command {
	var req api.FinishRequest
	var asJSON, statOnly bool
	cmd := &cobra.Command{
		Use:   "finish NAME [--merge ff|merge | --pr] [--remove] [--force]",
		Short: "Review an orchestrator's work, then merge it or open a pull request, and clean up",
		Long: `Finish an orchestrator's initiative, one explicit step at a time.
HOST:NAME finishes one on that host of the config's hosts: (through ssh,
audited there and here).

Without flags, finish shows the branch's changes since it left its base
branch (git diff BASE...BRANCH: the stat, then the full diff) and changes
nothing. Then, as asked:

  --merge ff     fast-forward the base branch to the branch, in the main checkout
  --merge merge  merge with a merge commit; a conflict is refused and the
                 merge aborted, leaving the checkout as it was
  --pr           push the branch to origin and open a pull request with gh
                 (installed and logged in)
  --remove       stop the session, remove the worktree and delete the branch,
                 only once the branch is merged into the base or pushed
  --force        remove even what is neither merged nor pushed

The outcome (success, or failure with why) is recorded in the learning store
with the diff stat. See docs/lifecycle.md.`,
		Example: `  system3 finish auth
  system3 finish web1:auth --merge ff
  system3 finish auth --merge ff --remove
  system3 finish auth --pr --title "OAuth login" --remove`,
		Args: oneOrchestrator("finish"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if host, name, _ := api.SplitHost(args[0], a.IsHost); host != "" && host != api.LocalHost {
				return a.runOnHost(cmd, host, name, "finish", name)
			} else if host == api.LocalHost {
				args[0] = name
			}
			m, err := a.Client(cmd.Context(), core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(m.Close)
			req.Name, req.Origin = args[0], actionOrigin
			if !asJSON {
				req.Progress = func(step, msg string) { fmt.Fprintf(a.Stderr, "system3: %s\n", msg) }
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
			defer cancel()
			res, err := m.Finish(ctx, req)
			if asJSON {
				if res.Branch != "" {
					if perr := a.printJSON(res); perr != nil {
						return perr
					}
				}
				return err
			}
			if res.Branch != "" {
				fmt.Fprintf(a.stdout, "%s: branch %s against %s, %d commit(s)\n", res.Name, res.Branch, res.Base, res.Commits)
				if res.Stat != "" {
					fmt.Fprintln(a.stdout, res.Stat)
				} else {
					fmt.Fprintln(a.stdout, "no changes")
				}
				if res.Uncommitted != "" {
					fmt.Fprintf(a.stdout, "uncommitted in the worktree (in no diff or merge):\n%s\n", res.Uncommitted)
				}
				if !statOnly && res.Diff != "" {
					fmt.Fprintf(a.stdout, "\n%s", res.Diff)
				}
				for _, s := range res.Steps[1:] {
					fmt.Fprintln(a.stdout, s)
				}
			}
			if err == nil && req.Merge == "" && !req.PR && !req.Remove {
				fmt.Fprintf(a.Stderr, "system3: nothing changed; finish %s --merge ff|merge or --pr, then --remove\n", res.Name)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Merge, "merge", "", "merge into the base branch: ff (fast-forward only) or merge (a merge commit)")
	f.BoolVar(&req.PR, "pr", false, "push the branch and open a pull request with gh")
	f.StringVar(&req.Title, "title", "", "pull request title (default: the initiative)")
	f.StringVar(&req.Body, "body", "", "pull request body (default: the diff stat)")
	f.BoolVar(&req.Remove, "remove", false, "stop the session, remove the worktree and delete the branch (once merged or pushed)")
	f.BoolVar(&req.Force, "force", false, "remove even what is neither merged nor pushed, and uncommitted changes")
	f.StringVar(&req.Repo, "repo", "", "the repository, when system3 has no record of the orchestrator")
	f.StringVar(&req.Base, "base", "", "the base branch (default: the one it was spawned from)")
	f.BoolVar(&statOnly, "stat", false, "show the diff stat only, not the full diff")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
