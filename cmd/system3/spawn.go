package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
)

// oneOrchestrator takes exactly one argument, the orchestrator to act on.
func oneOrchestrator(verb string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("name the orchestrator to %s, like `system3 %s auth`", verb, verb)
		}
		return nil
	}
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newSpawnCmd(a *app) *cobra.Command {
	var req api.SpawnRequest
	var asJSON bool
	var agent, host, origin string
	cmd := &cobra.Command{
		Use:   "spawn --initiative NAME --goal TEXT [--repo DIR] [--base BRANCH] [--agent AGENT] [--task-list ID] [--context TEXT]",
		Short: "Start an orchestrator in its own git worktree and tmux session",
		Long: `Start an orchestrator: an agent working on one initiative in its own git
worktree, watched by system3 from its first second.

spawn creates the worktree <repo>/trees/<NAME> on a new branch NAME (from
--base, default HEAD), starts tmux session orch-<NAME> there running the
agent with CLAUDE_CODE_TASK_LIST_ID set to the task list (default
PRD-<NAME>), links the session to that list, waits until the agent is ready
for input, and sends the first prompt: the goal, the context, and what the
learning store knows about the goal when one is configured.

Claude Code asks whether to trust a folder it has not seen; spawn answers
Yes for the worktree it has just created (you asked to work there) and logs
that it did. --no-auto-trust leaves the dialog to you: answer it within the
ready timeout (45s).

It refuses when the branch, the directory or the session exists, or when the
repository has uncommitted changes to tracked files and no --base is given
(the worktree starts from HEAD and would not have them). trees/ is added to
.git/info/exclude when it is not ignored. If a step fails, spawn undoes what
it did (kills the session, removes the worktree and the branch) and says
which step failed and what it cleaned up.

With lifecycle.setup in the config file, the new worktree is set up before
the agent starts (files copied or symlinked from the main checkout, then a
command such as npm ci, its output kept in the state dir); a failing set-up
fails the spawn. Every orchestrator is recorded in the state dir
(orchestrators.json), so system3 restore can bring it back and system3
finish can merge and clean it up.

--agent is claude (default), codex, gemini, qwen, opencode, cline, copilot, aider, another agent named in
the config file (agents: NAME: {command: [...], env: {...}}), or a command
line run by the shell. A command line is taken from this command only: the
dashboard and MCP clients can start only the agents the config names. With --json a failure is printed as a document too
({"status": "failed", "step": ..., "cleaned_up": [...]}). See
docs/lifecycle.md.`,
		Example: `  system3 spawn --initiative auth --goal "Add OAuth login" --repo ~/src/app
  system3 spawn --initiative billing --goal "Invoice PDFs" --base main --context "Use the pdf package we vendor"
  system3 spawn --initiative docs --goal "Fix the README" --agent codex --json
  system3 spawn --host web1 --initiative api --goal "Rate limits" --repo ~/src/api`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Initiative == "" || req.Goal == "" {
				return errors.New("give --initiative NAME and --goal TEXT")
			}
			if host != "" && host != api.LocalHost {
				return a.runOnHost(cmd, host, "orch-"+req.Initiative, "spawn")
			}
			m, err := a.Client(cmd.Context(), core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(m.Close)
			req.Origin = claimedOrigin(origin)
			// The operator's own command line runs too, from here only.
			names, err := m.Agents(cmd.Context())
			if err != nil {
				return err
			}
			if slices.Contains(names, strings.TrimSpace(agent)) {
				req.Agent = strings.TrimSpace(agent)
			} else {
				req.Command = agent
			}
			if !asJSON {
				req.Progress = func(step, msg string) { fmt.Fprintf(a.Stderr, "system3: %s\n", msg) }
			}
			res, err := m.Spawn(cmd.Context(), req)
			var serr *api.SpawnError
			if asJSON && errors.As(err, &serr) {
				// Scripts get the failure as a document too; the exit
				// status and stderr still say it failed.
				if perr := a.printJSON(map[string]any{"status": "failed", "initiative": serr.Initiative, "step": serr.Step,
					"error": serr.Err.Error(), "cleaned_up": nonNil(serr.CleanedUp), "left": nonNil(serr.Left)}); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "spawned %s: session %s (%s), worktree %s, branch %s, task list %s\n",
				res.Initiative, res.Session, res.Pane, res.Worktree, res.Branch, res.TaskList)
			if res.AutoTrusted {
				fmt.Fprintf(a.stdout, "answered Claude Code's folder-trust dialog for %s\n", res.Worktree)
			}
			if len(res.Wisdom) > 0 {
				fmt.Fprintf(a.stdout, "wisdom: %d learning(s) in the first prompt\n", len(res.Wisdom))
			} else {
				fmt.Fprintf(a.stdout, "wisdom: %s\n", res.WisdomNote)
			}
			if res.Detail != "" {
				fmt.Fprintf(a.Stderr, "system3: warning: %s\n", res.Detail)
			}
			fmt.Fprintf(a.stdout, "watch it: %s\n", a.TmuxServer().AttachCommand(res.Session))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Initiative, "initiative", "", "initiative name: the branch, trees/NAME and tmux session orch-NAME")
	f.StringVar(&req.Goal, "goal", "", "what the orchestrator is to achieve (opens the first prompt)")
	f.StringVar(&req.Repo, "repo", "", "a directory in the git repository (default: the working directory)")
	f.StringVar(&req.Base, "base", "", "branch, tag or commit the new branch starts from (default HEAD)")
	f.StringVar(&agent, "agent", agents.Default, "claude, codex, gemini, qwen, opencode, cline, copilot, aider, an agent from the config file, or a command line (from this command only)")
	f.StringVar(&req.TaskList, "task-list", "", "task list id (default PRD-<NAME>, upper-cased)")
	f.StringVar(&req.Context, "context", "", "more text for the first prompt")
	f.BoolVar(&req.NoAutoTrust, "no-auto-trust", false, "leave Claude Code's folder-trust dialog to the operator")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.StringVar(&host, "host", "", "spawn on this host of the config's hosts: (through ssh; --repo is a path there)")
	addOriginFlag(cmd, &origin)
	return cmd
}

func newStopCmd(a *app) *cobra.Command {
	var req api.StopRequest
	var asJSON bool
	var origin string
	cmd := &cobra.Command{
		Use:   "stop NAME [--remove-worktree]",
		Short: "Stop an orchestrator: interrupt its agent and kill its tmux session",
		Long: `Stop the orchestrator NAME (the initiative, like auth, or its session,
like orch-auth): interrupt its agent, then kill its tmux session and remove
its task list link. The worktree and branch are kept, so no work is lost;
--remove-worktree also removes the worktree when it has no uncommitted
changes (the branch is always kept). HOST:NAME stops it on that host of
the config's hosts: (through ssh, audited there and here).`,
		Example: `  system3 stop auth
  system3 stop orch-auth --remove-worktree
  system3 stop web1:auth`,
		Args: oneOrchestrator("stop"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if host, name, _ := api.SplitHost(args[0], a.IsHost); host != "" && host != api.LocalHost {
				return a.runOnHost(cmd, host, name, "stop", name)
			} else if host == api.LocalHost {
				args[0] = name
			}
			m, err := a.Client(cmd.Context(), core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(m.Close)
			req.Name, req.Origin = args[0], claimedOrigin(origin)
			res, err := m.Stop(cmd.Context(), req)
			if asJSON && res.Status != "" {
				if perr := a.printJSON(res); perr != nil {
					return perr
				}
			} else if res.Status != "" {
				fmt.Fprintf(a.stdout, "stopped %s", res.Session)
				if res.Interrupted {
					fmt.Fprint(a.stdout, " (interrupted its agent first)")
				}
				fmt.Fprintln(a.stdout)
				if res.Detail != "" && err == nil {
					fmt.Fprintln(a.stdout, res.Detail)
				}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&req.RemoveWorktree, "remove-worktree", false, "also remove the worktree (not one with uncommitted changes; the branch is kept)")
	cmd.Flags().StringVar(&req.Repo, "repo", "", "the repository, to find trees/NAME when the session does not show it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	addOriginFlag(cmd, &origin)
	return cmd
}

// addOriginFlag adds the hidden --origin: what another machine's system3
// claims when it runs this command here through ssh for one of its MCP
// clients ("mcp:NAME via ssh from HOST"). The command then acts under that
// origin rather than as this machine's operator: the policy applies to it
// and no command line is taken. Claiming less than the operator is all it
// can do: whoever runs the command could act as the operator anyway.
func addOriginFlag(cmd *cobra.Command, origin *string) {
	cmd.Flags().StringVar(origin, "origin", "", "act as this origin (set by another machine's system3 routing an MCP client's action)")
	_ = cmd.Flags().MarkHidden("origin")
}

// claimedOrigin is the origin a lifecycle command acts under: the
// operator's CLI, or what --origin claims, kept to one printable line.
func claimedOrigin(claim string) string {
	claim = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(claim))
	if claim == "" || claim == actionOrigin {
		return actionOrigin
	}
	if len(claim) > 200 {
		claim = claim[:200]
	}
	return claim
}

func newLinkCmd(a *app) *cobra.Command {
	var tf targetFlags
	var list string
	var remove, asJSON bool
	cmd := &cobra.Command{
		Use:   "link (--session NAME | --pane ID) (--task-list ID | --remove)",
		Short: "Link a session to a task list (adopt an orchestrator started by hand)",
		Long: `Link a tmux session (or one pane) to a Claude Code task list, so system3
shows that list's progress for it and puts it in its wakes, whatever the
agent's process says. Use it to adopt an orchestrator you started by hand.
A link by session name holds when the agent is restarted in a new pane of
the session; links are kept in the state dir (links.json), so a restarted
system3 keeps them. --remove removes the link. --session HOST:NAME links a
session of that host of the config's hosts: (its daemon keeps the link).`,
		Example: `  system3 link --session orch-auth --task-list PRD-AUTH
  system3 link --pane %3 --task-list PRD-DOCS
  system3 link --session orch-auth --remove`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, t, err := tf.target(a)
			if err != nil {
				return err
			}
			if (list == "") != remove {
				return errors.New("give --task-list ID to link, or --remove to unlink")
			}
			if host != "" && host != api.LocalHost {
				req := api.LinkRequest{Target: t, TaskList: strings.TrimSpace(list)}
				sess, err := routeAction(cmd.Context(), a, host, routed{action: "link", target: t.String(), args: req.TaskList},
					func(svc api.Service, origin string) (api.Session, error) {
						req.Origin = origin
						return svc.Link(cmd.Context(), req)
					}, func(s api.Session) (bool, bool, string) { return true, true, "task list " + s.TaskList })
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(sess)
				}
				fmt.Fprintf(a.stdout, "linked %s:%s (%s) on host %s to task list %q\n", host, sess.Target, sess.Pane, host, sess.TaskList)
				return nil
			}
			svc, err := a.Client(cmd.Context(), core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(svc.Close)
			// The service's link keeps the orchestrator records in step
			// (restore brings an adopted session back).
			sess, err := svc.Link(cmd.Context(), api.LinkRequest{Target: t, TaskList: strings.TrimSpace(list), Origin: actionOrigin})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(sess)
			}
			switch {
			case remove:
				fmt.Fprintf(a.stdout, "removed the task list link of %s\n", t)
			case sess.Tasks != nil:
				fmt.Fprintf(a.stdout, "linked %s (%s) to task list %s: %d/%d done\n", sess.Target, sess.Pane, sess.TaskList, sess.Tasks.Completed, sess.Tasks.Total)
			default:
				fmt.Fprintf(a.stdout, "linked %s (%s) to task list %s (no tasks in it yet)\n", sess.Target, sess.Pane, sess.TaskList)
			}
			return nil
		},
	}
	tf.add(cmd)
	cmd.Flags().StringVar(&list, "task-list", "", "task list id, like PRD-AUTH (a directory under the tasks dir)")
	cmd.Flags().BoolVar(&remove, "remove", false, "remove the link")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session as JSON")
	return cmd
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
