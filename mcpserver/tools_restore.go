package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// maxDiffBytes bounds the full diff in finish_orchestrator's answer.
const maxDiffBytes = 64 << 10

func (e *Env) finisher() (facade.Orchestrators, bool) {
	return e.Lifecycle, e.Lifecycle != nil && e.Finish
}

// RestoreOrchestratorsTool brings back orchestrators whose sessions are
// gone.
func RestoreOrchestratorsTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("restore_orchestrators",
		mcp.WithDescription(`Bring back orchestrators after the tmux server or the machine went down. system3 records every orchestrator it spawns (and sessions adopted with the system3 link command); for each named one (or, with all, every one not stopped on purpose) whose tmux session is gone, it starts the agent again in its worktree with the agent's resume (claude --resume ID, codex resume ID, gemini --resume ID), links its task list again and waits until it is ready. Returns per orchestrator "restored", "skipped" (already running) or "failed" with the reason. Takes up to about 50 seconds; call it again for any that ran out of time. Nothing is restored twice.`),
		mcp.WithArray("names", mcp.Description(`Initiatives or sessions to restore, like ["auth", "orch-billing"]; leave out and set all to restore every recorded one.`),
			mcp.WithStringItems(mcp.MinLength(1), mcp.MaxLength(256)), mcp.MaxItems(64)),
		mcp.WithBoolean("all", mcp.Description("Restore every recorded orchestrator that was not stopped on purpose."), mcp.DefaultBool(false)),
		argOrder("names", "all"),
		writes("Restore orchestrators", false, true),
	)
	type args struct {
		Names []string `json:"names"`
		All   bool     `json:"all"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		f, ok := e.finisher()
		if !ok {
			return mcp.NewToolResultError(noLifecycle), nil
		}
		if a.All == (len(a.Names) > 0) {
			return badInput(`name the orchestrators, like {"names": ["auth"]}, or send {"all": true}`)
		}
		rctx, cancel := withTimeout(ctx, SpawnTimeout)
		defer cancel()
		res, err := f.Restore(rctx, api.RestoreRequest{Names: a.Names, All: a.All, Origin: originOf(ctx)})
		if err != nil {
			return lifecycleError(err)
		}
		return result(res)
	})
}

// FinishOrchestratorTool shows an orchestrator's diff and, as asked,
// merges it or opens a pull request, and cleans up.
func FinishOrchestratorTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("finish_orchestrator",
		mcp.WithDescription(`Finish an orchestrator's initiative, one explicit step at a time. With only name it changes nothing and returns the branch's diff against its base branch (stat, commit count and the full diff, cut at 64 KiB). merge "ff" fast-forwards the base branch in the main checkout, "merge" makes a merge commit; a merge that would conflict is refused and aborted, leaving the checkout clean. pr pushes the branch and opens a pull request with gh (installed and logged in). remove then stops the session, removes the worktree and deletes the branch, only once the branch is merged or pushed unless force. The outcome is recorded in the learning store. Show the diff to the person and ask before merging.`),
		mcp.WithString("name", mcp.Required(), mcp.Description(`The initiative ("auth") or its session ("orch-auth").`), mcp.MinLength(1), mcp.MaxLength(256)),
		mcp.WithString("merge", mcp.Description(`"ff" (fast-forward only) or "merge" (a merge commit); leave out to not merge.`), mcp.Enum(api.MergeFastForward, api.MergeCommit)),
		mcp.WithBoolean("pr", mcp.Description("Push the branch and open a pull request with gh."), mcp.DefaultBool(false)),
		mcp.WithString("title", mcp.Description("Pull request title (default: the initiative)."), mcp.MaxLength(256)),
		mcp.WithString("body", mcp.Description("Pull request body (default: the diff stat)."), mcp.MaxLength(maxPromptPart)),
		mcp.WithBoolean("remove", mcp.Description("Stop the session, remove the worktree and delete the branch (only once merged or pushed)."), mcp.DefaultBool(false)),
		mcp.WithBoolean("force", mcp.Description("Remove even what is neither merged nor pushed; work is lost."), mcp.DefaultBool(false)),
		argOrder("name", "merge", "pr", "title", "body", "remove", "force"),
		writes("Finish orchestrator", true, false),
	)
	type args struct {
		Name   string `json:"name"`
		Merge  string `json:"merge"`
		PR     bool   `json:"pr"`
		Title  string `json:"title"`
		Body   string `json:"body"`
		Remove bool   `json:"remove"`
		Force  bool   `json:"force"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		f, ok := e.finisher()
		if !ok {
			return mcp.NewToolResultError(noLifecycle), nil
		}
		name := strings.TrimSpace(a.Name)
		fctx, cancel := withTimeout(ctx, SpawnTimeout)
		defer cancel()
		res, err := f.Finish(fctx, api.FinishRequest{Name: name, Merge: a.Merge, PR: a.PR, Title: a.Title, Body: a.Body,
			Remove: a.Remove, Force: a.Force, Origin: originOf(ctx)})
		if err != nil {
			if len(res.Steps) > 1 {
				return mcp.NewToolResultError(fmt.Sprintf("%v (done before it: %s)", err, strings.Join(res.Steps[1:], "; "))), nil
			}
			return lifecycleError(err)
		}
		if len(res.Diff) > maxDiffBytes {
			res.Diff = res.Diff[:maxDiffBytes] + fmt.Sprintf("\n[diff cut at %d KiB; run system3 finish %s in a terminal for all of it]\n", maxDiffBytes>>10, res.Name)
		}
		return result(res)
	})
}

func init() {
	outputSchemas["restore_orchestrators"] = object(schema{
		"orchestrators": arrayOf(object(schema{
			"name": tString, "session": tString, "status": tString, "reason": tString, "pane": tString,
			"command": arrayOf(tString), "agent_session_id": tString, "task_list": tString,
		}, "name", "status")),
		"problem": tString,
	}, "orchestrators")
	outputSchemas["finish_orchestrator"] = object(schema{
		"name": tString, "session": tString, "worktree": tString, "branch": tString, "base": tString, "repo": tString,
		"stat": tString, "diff": tString, "uncommitted": tString, "commits": tInt,
		"merged": tString, "merge_commit": tString, "pushed": tBool, "pr_url": tString,
		"session_stopped": tBool, "worktree_removed": tBool, "branch_deleted": tBool, "outcome": tString,
		"steps": arrayOf(tString),
	}, "name", "branch", "base", "stat", "diff", "commits", "steps")
}
