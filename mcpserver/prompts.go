package mcpserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
)

// SupervisePrompt is the prompt that sets a model up as a supervisor.
const SupervisePrompt = "supervise"

// supervisePrompt describes the prompt, for the server and the docs.
func supervisePrompt() mcp.Prompt {
	return mcp.NewPrompt(SupervisePrompt,
		mcp.WithPromptTitle("Supervise the coding agents"),
		mcp.WithPromptDescription("Instructions to supervise the coding agents system3 watches: the wait-for-wake loop, how to read a session, answer it, guide it and acknowledge the wake."),
		mcp.WithArgument("sessions", mcp.ArgumentDescription(`Glob of the tmux sessions to supervise, like "orch-*" (default: all).`)),
	)
}

func (s *Server) addPrompts() {
	s.mcp.AddPrompt(supervisePrompt(), func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		glob := req.Params.Arguments["sessions"]
		scope, arg := "every coding agent system3 watches", ""
		if glob != "" {
			scope = fmt.Sprintf("the coding agents in tmux sessions matching %q", glob)
			arg = fmt.Sprintf(`, session=%q`, glob)
		}
		text := fmt.Sprintf(`You supervise %s through system3's MCP tools. Work in a loop:

1. Call wait_for_wake(reasons=[%s]%s). It answers within 25 seconds; while it says "waiting", call it again.
2. When it returns a wake, call get_session with the wake's session to read the question, its numbered options, the evidence and the last lines of the screen.
3. Act: answer_prompt to answer a permission request or question (an option number, yes or no); inject_guidance to tell the agent what to do (priority "urgent" interrupts it first); interrupt to stop it. Approve only what is safe and within the task; when unsure, decline and explain with inject_guidance. A usage_limit wake (the agent's usage limit; state rate_limited) says when the limit resets (resets_at): type nothing before then; its suggested action says whether the agent, or system3, continues it at the reset, or whether you should inject_guidance "continue" after it.
4. Call ack_wake with the wake's id, then go back to step 1.

Call status first for an overview. Every action you take is written to system3's audit log.`, scope, quotedReasons(api.PersonReasons()), arg)
		return mcp.NewGetPromptResult("Supervise the coding agents", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(text)),
		}), nil
	})
}

// quotedReasons is reasons as a JSON list's items: "a", "b".
func quotedReasons(rs []api.Reason) string {
	q := make([]string, len(rs))
	for i, r := range rs {
		q[i] = strconv.Quote(string(r))
	}
	return strings.Join(q, ", ")
}
