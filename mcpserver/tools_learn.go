package mcpserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// learnTimeout bounds a store call; reflect with budget high may run the
// reflect command, which has its own timeout (learn.reflect_timeout).
const learnTimeout = 10 * time.Second

// learnError is a tool error for input the store refuses, and a Go error
// for its internal failures.
func learnError(err error) (*mcp.CallToolResult, error) {
	if errors.Is(err, api.ErrLearnInvalid) {
		return mcp.NewToolResultError(strings.TrimPrefix(err.Error(), api.ErrLearnInvalid.Error()+": ")), nil
	}
	if errors.Is(err, api.ErrLearnStorage) {
		// The disk, not the request nor system3: the caller can act on it.
		return mcp.NewToolResultError(err.Error()), nil
	}
	return serviceError(err)
}

// ReportOutcomeTool stores how an initiative went and what it taught.
func ReportOutcomeTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("report_outcome",
		mcp.WithDescription(`Record how an initiative (a task, a feature, a fix you supervised) ended, so system3 learns from it. Give the outcome (success, partial, failure), the reasoning path you followed, the learnings to keep (one sentence each) and the blockers. system3 checks the reasoning path for five criteria (goal clearly defined, steps sequenced, decisions justified, risks considered, outcome verified), quoting the phrase that evidences each; it is validated when at least 4 are. Learnings are stored as patterns when the outcome is a success and the reasoning validated, otherwise as anti-patterns; the domain's capability (smoothed success rate) is updated. Returns validated, the criteria with their evidence, pattern_stored, capability_updated and the domain's confidence. Call reflect before the next similar initiative to recall them.`),
		mcp.WithString("initiative", mcp.Required(), mcp.Description(`What was attempted, in a line: "add OAuth login to the API".`), mcp.MinLength(1), mcp.MaxLength(api.MaxOutcomeInitiative)),
		mcp.WithString("outcome", mcp.Required(), mcp.Description("How it ended."), mcp.Enum(api.OutcomeSuccess, api.OutcomePartial, api.OutcomeFailure)),
		mcp.WithString("reasoning_path", mcp.Description("How the work was reasoned through: the goal, the steps in order, why each decision, the risks, how the result was verified."), mcp.MaxLength(api.MaxReasoning)),
		mcp.WithArray("learnings", mcp.Description(`Lessons to keep, one sentence each: "Store tokens in the session store, not cookies".`), mcp.WithStringItems(mcp.MaxLength(api.MaxLearning)), mcp.MaxItems(api.MaxLearnings)),
		mcp.WithArray("blockers", mcp.Description("What stood in the way, one line each."), mcp.WithStringItems(mcp.MaxLength(api.MaxLearning)), mcp.MaxItems(api.MaxLearnings)),
		mcp.WithString("domain", mcp.Description(`The area, which is the capability it counts towards: "auth", "frontend", "database" (default "general").`), mcp.MaxLength(api.MaxDomain)),
		argOrder("initiative", "outcome", "reasoning_path", "learnings", "blockers", "domain"),
		writes("Report outcome", false, false),
	)
	type args struct {
		Initiative    string   `json:"initiative"`
		Outcome       string   `json:"outcome"`
		ReasoningPath string   `json:"reasoning_path"`
		Learnings     []string `json:"learnings"`
		Blockers      []string `json:"blockers"`
		Domain        string   `json:"domain"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		cctx, cancel := withTimeout(ctx, learnTimeout)
		defer cancel()
		r, err := e.Learn.ReportOutcome(cctx, api.Outcome{Initiative: a.Initiative, Outcome: a.Outcome, ReasoningPath: a.ReasoningPath,
			Learnings: a.Learnings, Blockers: a.Blockers, Domain: a.Domain, ReportedBy: originOf(ctx)})
		if err != nil {
			return learnError(err)
		}
		type view struct {
			api.LearnReport
			Next string `json:"next"`
		}
		v := view{LearnReport: r}
		switch {
		case !r.Validated:
			var missing []string
			for _, c := range r.Criteria {
				if !c.Evidenced {
					missing = append(missing, c.Label)
				}
			}
			v.Next = "the reasoning path did not evidence: " + strings.Join(missing, ", ") + "; say so explicitly next time so the learnings can become patterns"
		case len(r.Learnings) == 0:
			v.Next = "no learnings were given; pass learnings to have system3 remember what worked or failed"
		default:
			v.Next = "call reflect before a similar initiative to recall these"
		}
		return result(v)
	})
}

// CapabilityCheckTool reports how reliably initiatives succeed.
func CapabilityCheckTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("capability_check",
		mcp.WithDescription(`How reliably initiatives succeed, from the outcomes reported with report_outcome. Without arguments: one capability per domain. domain keeps one domain. capability names a kind of initiative in words ("database migrations"): its confidence is then computed from the outcomes whose initiative contains all those words, per domain. Each capability has attempts, successes, partials, failures, confidence = (successes+1)/(attempts+2) (0.5 with no evidence), the evidence in words ("3 successful initiatives out of 4") and when it last changed. Use it to decide how much to check an agent's work or whether to split a task.`),
		mcp.WithString("capability", mcp.Description(`A kind of initiative in words, like "oauth login" or "migrations".`), mcp.MaxLength(256)),
		mcp.WithString("domain", mcp.Description(`Only this domain, like "auth".`), mcp.MaxLength(api.MaxDomain)),
		argOrder("capability", "domain"),
		readOnly("Check capability"),
	)
	type args struct {
		Capability string `json:"capability"`
		Domain     string `json:"domain"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		cctx, cancel := withTimeout(ctx, learnTimeout)
		defer cancel()
		caps, err := e.Learn.Capabilities(cctx, a.Capability, a.Domain)
		if err != nil {
			return learnError(err)
		}
		doc := map[string]any{"capabilities": caps, "count": len(caps)}
		if len(caps) == 0 {
			doc["next"] = "no outcomes match yet: confidence would be 0.5 (no evidence); report outcomes with report_outcome"
		}
		return result(doc)
	})
}

// ReflectTool recalls the patterns, anti-patterns and capabilities that
// bear on a question.
func ReflectTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("reflect",
		mcp.WithDescription(`Recall what system3 has learnt that bears on a task before you start or steer it: the patterns (what worked) and anti-patterns (what failed, or was poorly reasoned) whose text best matches the query and context (full-text ranking weighted by recency and by how often each was seen), notes on the capabilities of their domains, and a confidence (how much experience backs it: n/(n+3) for n items found). budget bounds how much comes back: low 2+2 items, mid 5+5, high 10+10; with high and a reflect command configured by the operator (learn.reflect_command), a written reflection is added, otherwise the answer says it is retrieval only.`),
		mcp.WithString("query", mcp.Required(), mcp.Description(`The task or question, like "add OAuth login to the admin app".`), mcp.MinLength(1), mcp.MaxLength(2000)),
		mcp.WithString("context", mcp.Description("Anything else that narrows it: the repository, the stack, what was tried."), mcp.MaxLength(4000)),
		mcp.WithString("budget", mcp.Description("How much to return, and whether to write a reflection (high)."), mcp.Enum(api.Budgets()...), mcp.DefaultString(string(api.BudgetMid))),
		argOrder("query", "context", "budget"),
		readOnly("Reflect"),
	)
	type args struct {
		Query   string `json:"query"`
		Context string `json:"context"`
		Budget  string `json:"budget"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		timeout := learnTimeout
		if a.Budget == string(api.BudgetHigh) {
			timeout = MaxWait // room for the reflect command, within what clients wait
		}
		cctx, cancel := withTimeout(ctx, timeout)
		defer cancel()
		r, err := e.Learn.Reflect(cctx, a.Query, a.Context, api.Budget(a.Budget))
		if err != nil {
			return learnError(err)
		}
		return result(r)
	})
}
