package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// agentNames are the agents spawn_orchestrator offers: the configured
// ones, or the built-in ones on a server without a lifecycle.
func (e *Env) agentNames() []string {
	if e.Lifecycle != nil && len(e.Agents) > 0 {
		return e.Agents
	}
	return api.LaunchableAgents()
}

// SpawnTimeout bounds spawn_orchestrator: the agent's ready wait (45 s)
// and git, inside the 60 s after which clients give up on a call.
const SpawnTimeout = 55 * time.Second

// StopTimeout bounds stop_orchestrator: the agent's interrupt and exit,
// git removing a worktree, and for HOST:NAME an ssh round trip that runs
// stop on that host; like spawn, inside the 60 s clients wait.
const StopTimeout = SpawnTimeout

// noLifecycle is the tool error of spawn and stop on a server built
// without a lifecycle.
const noLifecycle = "this system3 cannot start or stop orchestrators (its MCP server was built without them); run `system3 spawn` in a terminal"

// lifecycleError turns a spawn or stop failure into a tool error: every
// one says what failed and what to do, so the model can act on it.
func lifecycleError(err error) (*mcp.CallToolResult, error) {
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, api.ErrOrchestratorExists):
		msg += "; pick another initiative name, or stop_orchestrator the existing one"
	case errors.Is(err, api.ErrOrchestratorNotFound):
		msg += "; call list_sessions for the orchestrators system3 watches"
	case errors.Is(err, facade.ErrUnavailable):
		msg += "; tell the operator; the rest of system3 works"
	}
	return mcp.NewToolResultError(msg), nil
}

// SpawnOrchestratorTool starts an orchestrator in its own worktree and
// tmux session.
func SpawnOrchestratorTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	agents := e.agentNames()
	t := mcp.NewTool("spawn_orchestrator",
		mcp.WithDescription(`Start a new orchestrator: a coding agent (Claude Code by default) working on one initiative in its own git worktree and tmux session, watched by system3 from the start. It creates the worktree <repo>/trees/<initiative> on a new branch named after the initiative, starts tmux session orch-<initiative> there with CLAUDE_CODE_TASK_LIST_ID set to the task list (default PRD-<INITIATIVE>) and links the session to that list, waits until the agent is ready for input (answering Claude Code's folder-trust dialog for the new worktree unless no_auto_trust), then sends the first prompt: the goal, the context, and relevant learnings from system3's learning store when one is configured. Takes up to about 50 seconds and reports progress. Refuses when the branch, the worktree or the session exists, or when the repository has uncommitted changes to tracked files and no base is given. On failure it undoes what it did and says which step failed and what was cleaned up. Returns the session, pane, worktree, branch, task list, wisdom injected and status "spawned"; follow it with get_session or wait_for_wake.`),
		mcp.WithString("initiative", mcp.Required(), mcp.Description(`Initiative name: letters, digits, '-' and '_' (like "auth-login"); it names the branch, trees/<initiative> and session orch-<initiative>.`),
			mcp.MinLength(1), mcp.MaxLength(48), mcp.Pattern(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)),
		mcp.WithString("goal", mcp.Required(), mcp.Description("What the orchestrator is to achieve; it opens the first prompt."), mcp.MinLength(1), mcp.MaxLength(maxPromptPart)),
		mcp.WithString("repo", mcp.Description("Absolute path of a directory in the git repository to work in (default: the directory system3 runs in)."), mcp.MaxLength(4096)),
		mcp.WithString("base", mcp.Description("Branch, tag or commit the new branch starts from (default HEAD)."), mcp.MaxLength(256)),
		mcp.WithString("agent", mcp.Description(`The agent to start, by the name the operator gave it in system3's config (default "claude"); a program or command line is never taken from a client.`),
			mcp.Enum(agents...), mcp.MaxLength(256)),
		mcp.WithString("task_list", mcp.Description(`Task list id (default PRD-<INITIATIVE>, upper-cased).`), mcp.MaxLength(128)),
		mcp.WithString("context", mcp.Description("More text for the first prompt: constraints, pointers, acceptance criteria."), mcp.MaxLength(maxPromptPart)),
		mcp.WithBoolean("no_auto_trust", mcp.Description("Leave Claude Code's folder-trust dialog to a person instead of answering it."), mcp.DefaultBool(false)),
		mcp.WithString("host", mcp.Description(`Another of system3's configured hosts to start it on (status lists them), like "web1"; repo is then a path there. Default: this machine.`), mcp.MaxLength(64)),
		argOrder("initiative", "goal", "repo", "base", "agent", "task_list", "context", "no_auto_trust", "host"),
		writes("Spawn orchestrator", false, false),
	)
	type args struct {
		Initiative  string `json:"initiative"`
		Goal        string `json:"goal"`
		Repo        string `json:"repo"`
		Base        string `json:"base"`
		Agent       string `json:"agent"`
		TaskList    string `json:"task_list"`
		Context     string `json:"context"`
		NoAutoTrust bool   `json:"no_auto_trust"`
		Host        string `json:"host"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if e.Lifecycle == nil {
			return mcp.NewToolResultError(noLifecycle), nil
		}
		if why := api.ValidInitiative(a.Initiative); why != "" {
			return badInput("%s", why)
		}
		if strings.TrimSpace(a.Goal) == "" {
			return badInput(`goal is empty; say what the orchestrator is to achieve, like {"initiative": "auth", "goal": "Add OAuth login"}`)
		}
		// Configured agents only: a program named by a client is never run.
		if a.Agent != "" && !slices.Contains(agents, a.Agent) {
			return badInput("agent %q is not one system3's configuration names; send one of: %s (the operator adds agents under agents: in config.yaml)",
				a.Agent, strings.Join(agents, ", "))
		}
		if h := strings.TrimSpace(a.Host); h != "" && h != api.LocalHost && e.Hosts == nil {
			return badInput("host %q: system3 has no other hosts configured (hosts: in its config); leave host out to start it on this machine", h)
		}
		sreq := api.SpawnRequest{Initiative: a.Initiative, Goal: a.Goal, Repo: a.Repo, Base: a.Base, Agent: a.Agent,
			TaskList: a.TaskList, Context: a.Context, NoAutoTrust: a.NoAutoTrust, Origin: originOf(ctx), Host: strings.TrimSpace(a.Host)}
		type step struct{ name, msg string }
		steps := make(chan step, 16)
		sreq.Progress = func(name, msg string) {
			select {
			case steps <- step{name, msg}:
			default: // progress is best effort
			}
		}
		type done struct {
			res api.SpawnResult
			err error
		}
		out := make(chan done, 1)
		sctx, cancel := context.WithTimeout(ctx, SpawnTimeout)
		defer cancel()
		go func() {
			res, err := e.Lifecycle.Spawn(sctx, sreq)
			out <- done{res, err}
		}()
		prog := newProgressReporter(ctx, req, SpawnTimeout.Seconds(), e.progress)
		defer prog.flush()
		every := e.ProgressEvery
		if every <= 0 {
			every = DefaultProgressEvery
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		start := time.Now()
		last := "starting"
		// Progress must grow with every notification, even two in the
		// same tenth of a second.
		var sent float64
		elapsed := func() float64 {
			sent = min(max(math.Round(time.Since(start).Seconds()*10)/10, sent+0.01), SpawnTimeout.Seconds()-0.01)
			return sent
		}
		for {
			select {
			case d := <-out:
				for len(steps) > 0 { // steps reported just before the end
					s := <-steps
					prog.send(elapsed(), s.msg)
				}
				if d.err != nil {
					return lifecycleError(d.err)
				}
				prog.send(SpawnTimeout.Seconds(), "spawned "+d.res.Session)
				return result(spawnView(d.res))
			case s := <-steps:
				last = s.msg
				prog.send(elapsed(), s.msg)
			case <-tick.C:
				prog.send(elapsed(), fmt.Sprintf("%s (%.0fs)", last, time.Since(start).Seconds()))
			}
		}
	})
}

type spawnResultView struct {
	api.SpawnResult
	Next string `json:"next"`
}

func spawnView(r api.SpawnResult) spawnResultView {
	next := fmt.Sprintf("call wait_for_wake to hear when %s needs you, or get_session %q to watch it", r.Session, r.Session)
	if !r.PromptVerified {
		next = fmt.Sprintf("call get_session %q: system3 did not see the agent take the first prompt", r.Session)
	}
	return spawnResultView{SpawnResult: r, Next: next}
}

// StopOrchestratorTool stops an orchestrator.
func StopOrchestratorTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("stop_orchestrator",
		mcp.WithDescription(`Stop an orchestrator: interrupt its agent, kill its tmux session and remove its task list link. Its worktree and branch are kept, so no work is lost; remove_worktree also removes the worktree when it has no uncommitted changes (the branch is always kept). name is the initiative ("auth") or its session ("orch-auth"); HOST:NAME ("web1:auth") stops one on that host of system3's configured hosts, where it acts as you (your client's name), under that host's policy too. Returns the session, whether the agent was interrupted, the worktree and whether it was removed.`),
		mcp.WithString("name", mcp.Required(), mcp.Description(`The initiative ("auth") or its session name ("orch-auth"); "web1:auth" on host web1.`), mcp.MinLength(1), mcp.MaxLength(256)),
		mcp.WithBoolean("remove_worktree", mcp.Description("Also remove the worktree (refused when it has uncommitted changes)."), mcp.DefaultBool(false)),
		argOrder("name", "remove_worktree"),
		writes("Stop orchestrator", true, false),
	)
	type args struct {
		Name           string `json:"name"`
		RemoveWorktree bool   `json:"remove_worktree"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if e.Lifecycle == nil {
			return mcp.NewToolResultError(noLifecycle), nil
		}
		// The service judges the session Stop resolves the name to, so no
		// fallback from orch-<name> to <name> gets past the allowlist.
		name := strings.TrimSpace(a.Name)
		actx, cancel := withTimeout(ctx, StopTimeout)
		defer cancel()
		res, err := e.Lifecycle.Stop(actx, api.StopRequest{Name: name, RemoveWorktree: a.RemoveWorktree, Origin: originOf(ctx)})
		if err != nil {
			if res.Status != "" {
				// Stopped, but the worktree could not go: say both.
				return mcp.NewToolResultError(fmt.Sprintf("stopped %s, but: %v", res.Session, err)), nil
			}
			return lifecycleError(err)
		}
		return result(map[string]any{"status": res.Status, "session": res.Session, "interrupted": res.Interrupted,
			"worktree": res.Worktree, "worktree_removed": res.Removed, "branch": res.Branch, "detail": res.Detail})
	})
}

// LinkTaskListTool links a session to a task list.
func LinkTaskListTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("link_task_list",
		mcp.WithDescription(`Link an agent session to a Claude Code task list, so system3 shows that list's progress for the session (in status, list_sessions and its wakes) whatever the agent's process says: use it to adopt an orchestrator started by hand. A link by session name holds when the agent is restarted in a new pane of the session, and survives system3 restarts. An empty task_list removes the link. Returns the session as it now shows, with its task list and progress.`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3").`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", to link that pane only.`), mcp.MaxLength(32)),
		mcp.WithString("task_list", mcp.Required(), mcp.Description(`Task list id like "PRD-AUTH" (list_tasks shows them); "" removes the link.`), mcp.MaxLength(128)),
		argOrder("session", "pane", "task_list"),
		writes("Link task list", false, true),
	)
	type args struct {
		Session  string `json:"session"`
		Pane     string `json:"pane"`
		TaskList string `json:"task_list"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if a.Session == "" && a.Pane == "" {
			return badInput(`name the session: {"session": "orch-auth", "task_list": "PRD-AUTH"}, or {"pane": "%%3", "task_list": "PRD-AUTH"}`)
		}
		if a.TaskList != "" {
			if why := api.ValidTaskListID(a.TaskList); why != "" {
				return badInput("%s", why)
			}
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		sess, err := e.Svc.Link(cctx, api.LinkRequest{Target: api.Target{Session: a.Session, Pane: a.Pane}, TaskList: a.TaskList, Origin: originOf(ctx)})
		if err != nil {
			return serviceError(err)
		}
		out := map[string]any{"session": sess.Session, "pane": sess.Pane, "target": sess.Target, "task_list": sess.TaskList, "tasks": "no tasks yet"}
		if sess.Tasks != nil {
			out["tasks"] = fmt.Sprintf("%d/%d", sess.Tasks.Completed, sess.Tasks.Total)
		}
		if a.TaskList == "" {
			out["tasks"] = "link removed"
		}
		return result(out)
	})
}
