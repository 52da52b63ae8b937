package mcpserver

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// maxPromptPart caps each part of spawn_orchestrator's first prompt.
const maxPromptPart = 16 << 10

// target is the session or pane a write tool names, as the service's
// target: the service resolves it, once, as it applies the policy
// (allowlist, read-only, rate) to the action, whichever process it runs
// in; its refusal, and a name that matches nothing or more than one pane,
// come back as a tool error.
func target(session, pane string) (api.Target, *mcp.CallToolResult, error) {
	if session == "" && pane == "" {
		r, err := badInput(`name the session: {"session": "orch-auth"} (a name, target or pane from list_sessions), or {"pane": "%%3"}`)
		return api.Target{}, r, err
	}
	return api.Target{Session: session, Pane: pane}, nil, nil
}

type actionView struct {
	Delivered bool      `json:"delivered"`
	Verified  *bool     `json:"verified,omitempty"`
	Submitted *bool     `json:"submitted,omitempty"`
	Priority  string    `json:"priority,omitempty"`
	Option    string    `json:"option,omitempty"`
	Keys      []string  `json:"keys,omitempty"`
	Pane      string    `json:"pane"`
	Target    string    `json:"target"`
	Session   string    `json:"session"`
	At        time.Time `json:"at"`
	Method    string    `json:"method,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Next      string    `json:"next,omitempty"`
}

func viewOf(r api.ActionResult) actionView {
	return actionView{Delivered: r.Delivered, Option: r.Option, Keys: r.Keys, Pane: r.Pane, Target: r.Target,
		Session: r.Session, At: r.At, Method: r.Method, Detail: r.Detail}
}

// InjectGuidanceTool types a message into an agent's input and submits it.
func InjectGuidanceTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("inject_guidance",
		mcp.WithDescription(`Type a message into an agent's input box and submit it, exactly as a person at the keyboard would: use it to give an agent guidance, answer a free-text question, or tell it what to do next. The message is text: printable characters, newlines and tabs, up to 256 KB. A message holding any other control character (Ctrl-C, carriage return, NUL...), ESC (so any escape sequence or bracketed-paste marker), a C1 control or invalid UTF-8 is refused with an error naming the byte and its offset, and nothing is typed; with visible_controls true those bytes are typed as visible text instead (ESC as ^[, Ctrl-C as ^C, byte 0xff as \xff). Nothing in the message ever reaches the pane as a key: system3 itself presses only Enter (to submit) and, for "urgent", Escape. After typing, Enter, and system3 checks that the agent took it. priority "urgent" first interrupts what the agent is doing (Escape) so it reads the message now; "normal" lets it finish its current step. submit false only types the text. Returns delivered (tmux accepted it), verified (the agent was seen to take it), the pane and target it went to, and when. Only sessions the operator allows (mcp.allow_sessions) can be typed into, at most mcp.inject_per_minute actions per pane per minute; every message, refused ones too, is written to system3's audit log exactly as typed, before it is typed (when the log cannot be written, nothing is typed).`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3").`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", instead of session.`), mcp.MaxLength(32)),
		mcp.WithString("message", mcp.Required(), mcp.Description("The text to type. Newlines are kept (it is pasted as one message)."), mcp.MinLength(1), mcp.MaxLength(api.MaxText)),
		mcp.WithBoolean("submit", mcp.Description("Press Enter after typing, and check the agent took the message."), mcp.DefaultBool(true)),
		mcp.WithString("priority", mcp.Description(`"urgent" interrupts the agent (Escape) before typing; "normal" does not.`), mcp.Enum("normal", "urgent"), mcp.DefaultString("normal")),
		mcp.WithBoolean("visible_controls", mcp.Description(`Type control characters, ESC and invalid UTF-8 in the message as visible text (^C, ^[, \xff) instead of refusing the message.`), mcp.DefaultBool(false)),
		argOrder("session", "pane", "message", "submit", "priority", "visible_controls"),
		writes("Inject guidance", true, false),
	)
	type args struct {
		Session  string `json:"session"`
		Pane     string `json:"pane"`
		Message  string `json:"message"`
		Submit   *bool  `json:"submit"`
		Priority string `json:"priority"`
		Visible  bool   `json:"visible_controls"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if a.Message == "" {
			return badInput(`message is empty; send the text to type, like {"session": "orch-auth", "message": "Run the tests before committing."}`)
		}
		submit := a.Submit == nil || *a.Submit
		urgent := a.Priority == "urgent"
		to, refusal, err := target(a.Session, a.Pane)
		if refusal != nil || err != nil {
			return refusal, err
		}
		actx, cancel := withTimeout(ctx, actionTimeout)
		defer cancel()
		r, err := e.Svc.Inject(actx, api.InjectRequest{Target: to, Text: a.Message,
			NoEnter: !submit, Urgent: urgent, VisibleControls: a.Visible, Origin: originOf(ctx)})
		if err != nil {
			return serviceError(err)
		}
		v := viewOf(r)
		v.Verified, v.Submitted = &r.Verified, &submit
		v.Priority = "normal"
		if urgent {
			v.Priority = "urgent"
		}
		switch {
		case !r.Delivered:
			v.Next = "tmux did not take the text; call get_session to see the pane"
		case submit && !r.Verified:
			v.Next = "typed, but system3 did not see the agent take it; call get_session to check its screen"
		}
		return result(v)
	})
}

// AnswerPromptTool answers the question or permission prompt an agent
// waits at.
func AnswerPromptTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("answer_prompt",
		mcp.WithDescription(`Answer the prompt an agent is waiting at (state awaiting_input: a permission request like "Do you want to proceed?" or a multiple-choice question). answer is an option number ("1"), "yes" (the first option starting with Yes), "no" (decline, the way the agent expects), or an option's label (or a unique part of it). Read the question, what it is about (about: the command, file or URL) and the numbered options first with get_session, list_sessions or wait_for_wake, and pass the prompt identity you read (prompt, or wake: the wake's id; a wake of this machine alone names the session too): system3 reads the pane again right before typing and types only if that very prompt is still on screen and nobody answered it yet. Without either it answers the prompt system3 last saw. Fails without typing anything when the prompt changed, was answered already, the agent is not waiting, or the answer matches no option; returns the option chosen and the keys pressed.`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3"); not needed with wake.`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", instead of session.`), mcp.MaxLength(32)),
		mcp.WithString("answer", mcp.Required(), mcp.Description(`"1".."9", "yes", "no", or an option's label.`), mcp.MinLength(1), mcp.MaxLength(256)),
		mcp.WithString("prompt", mcp.Description(`The prompt identity from list_sessions or get_session ("p" and 16 hex digits): answer only that prompt.`), mcp.MaxLength(64)),
		mcp.WithString("wake", mcp.Description(`The id of the awaiting_input wake being answered (from wait_for_wake or list_wakes), instead of prompt.`), mcp.MaxLength(128)),
		argOrder("session", "pane", "answer", "prompt", "wake"),
		writes("Answer prompt", true, false),
	)
	type args struct {
		Session string `json:"session"`
		Pane    string `json:"pane"`
		Answer  string `json:"answer"`
		Prompt  string `json:"prompt"`
		Wake    string `json:"wake"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		var answerTo api.Target
		if _, _, hosted := api.SplitHost(a.Wake, nil); a.Session == "" && a.Pane == "" && a.Wake != "" && !hosted {
			// A wake of this machine names its pane: the service answers
			// the prompt of that wake, as system3 answer --wake does.
		} else {
			to, refusal, err := target(a.Session, a.Pane)
			if refusal != nil || err != nil {
				return refusal, err
			}
			answerTo = to
		}
		actx, cancel := withTimeout(ctx, actionTimeout)
		defer cancel()
		r, err := e.Svc.Answer(actx, api.AnswerRequest{Target: answerTo, Answer: a.Answer, Prompt: a.Prompt, Wake: a.Wake, Origin: originOf(ctx)})
		if err != nil {
			return serviceError(err)
		}
		v := viewOf(r)
		v.Next = "call get_session in a moment to see the agent carry on"
		return result(v)
	})
}

// InterruptTool stops what an agent is doing.
func InterruptTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("interrupt",
		mcp.WithDescription(`Stop what an agent is doing right now, like a person pressing Escape (Ctrl-C for aider and shells). The agent keeps its conversation and waits for input: follow up with inject_guidance to tell it what to do instead. Returns the keys pressed and the pane.`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3").`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", instead of session.`), mcp.MaxLength(32)),
		argOrder("session", "pane"),
		writes("Interrupt agent", true, false),
	)
	type args struct {
		Session string `json:"session"`
		Pane    string `json:"pane"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		to, refusal, err := target(a.Session, a.Pane)
		if refusal != nil || err != nil {
			return refusal, err
		}
		actx, cancel := withTimeout(ctx, actionTimeout)
		defer cancel()
		r, err := e.Svc.Interrupt(actx, api.InterruptRequest{Target: to, Origin: originOf(ctx)})
		if err != nil {
			return serviceError(err)
		}
		v := viewOf(r)
		v.Next = "tell it what to do instead with inject_guidance"
		return result(v)
	})
}

// AckWakeTool acknowledges wakes.
func AckWakeTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("ack_wake",
		mcp.WithDescription(`Acknowledge a wake once you have handled it, so wait_for_wake and list_wakes stop returning it and the dashboard shows it done (acknowledged by "mcp:<your client name>"). Pass the wake's id (HOST:ID for another host's wake, as wait_for_wake names it), or all true to acknowledge every unacknowledged wake of this machine. Acknowledging twice is harmless. The condition itself stays: a prompt still on screen raises no new wake until it goes away.`),
		mcp.WithString("id", mcp.Description(`The wake id, like "w0000000042-m3k2j1" (or "web1:w0000000042-m3k2j1" on another host); from wait_for_wake or list_wakes.`), mcp.MaxLength(192)),
		mcp.WithBoolean("all", mcp.Description("Acknowledge every unacknowledged wake instead of one."), mcp.DefaultBool(false)),
		argOrder("id", "all"),
		writes("Acknowledge wake", false, true),
	)
	type args struct {
		ID  string `json:"id"`
		All bool   `json:"all"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if (a.ID == "") == !a.All {
			return badInput(`send either {"id": "<wake id>"} or {"all": true}, not both and not neither`)
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		var evs []api.Wake
		if a.All {
			all, err := e.Svc.AckAll(cctx, originOf(ctx))
			if err != nil {
				return serviceError(err)
			}
			evs = all
		} else if host, id, ok := api.SplitHost(a.ID, nil); ok && e.Hosts != nil && host != api.LocalHost {
			// HOST:ID, as wait_for_wake names another host's wake: that
			// host's daemon acknowledges it, through the service when it
			// routes to hosts (remote.Fleet: this machine's policy and
			// audit apply first).
			var ev api.Wake
			var err error
			if r, routes := e.Svc.(interface{ Routes(host string) bool }); routes && r.Routes(host) {
				ev, err = e.Svc.Ack(cctx, a.ID, originOf(ctx))
				ev.ID = id
				if h, s, _ := api.SplitHost(ev.Session, nil); h == host {
					ev.Session = s
				}
			} else {
				ev, err = e.Hosts.Ack(cctx, host, id, originOf(ctx))
			}
			if err != nil {
				return serviceError(err)
			}
			ev.Session = api.JoinHost(host, ev.Session)
			evs = []api.Wake{ev}
		} else {
			if ok && host == api.LocalHost {
				a.ID = id
			}
			ev, err := e.Svc.Ack(cctx, a.ID, originOf(ctx))
			if err != nil {
				return serviceError(err)
			}
			evs = []api.Wake{ev}
		}
		type acked struct {
			ID      string    `json:"id"`
			Reason  string    `json:"reason"`
			Session string    `json:"session"`
			AckedBy string    `json:"acked_by"`
			AckedAt time.Time `json:"acked_at"`
		}
		out := make([]acked, 0, len(evs))
		for _, ev := range evs {
			out = append(out, acked{ID: ev.ID, Reason: string(ev.Reason), Session: ev.Session, AckedBy: ev.AckedBy, AckedAt: ev.AckedAt})
		}
		return result(map[string]any{"acked": out, "count": len(out), "next": "call wait_for_wake for the next one"})
	})
}
