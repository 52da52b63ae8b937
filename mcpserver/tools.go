package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// Env is what the tool constructors need: the service and the server's
// settings. A Server builds one; tests may too.
type Env struct {
	Svc     Service
	Version string
	Started time.Time
	Clock   func() time.Time
	// ReadOnly is reported by status.
	ReadOnly bool
	// ProgressEvery is wait_for_wake's progress interval.
	ProgressEvery time.Duration
	Log           *slog.Logger
	// Learn is the learning store; nil when the learning tools are off.
	Learn facade.Learning
	// Lifecycle starts and stops orchestrators; nil: it cannot. Finish:
	// it also restores and finishes them. Agents are the agents a spawn
	// may name.
	Lifecycle facade.Orchestrators
	Finish    bool
	Agents    []string
	// Coach serves the behaviour-pattern tools; nil when there is none.
	Coach facade.Coaching
	// Hosts are the other machines reported beside this one; nil: none.
	Hosts Hosts

	progress *progressTracker
}

func (s *Server) env() *Env {
	return &Env{
		Svc: s.svc, Version: s.opts.Version, Started: s.opts.Started, Clock: s.opts.Clock,
		ReadOnly: s.opts.ReadOnly, ProgressEvery: s.opts.ProgressEvery, Log: s.log, Learn: s.learn, Lifecycle: s.lifecycle,
		Finish: s.finish, Agents: s.agents, progress: s.tracker, Coach: s.coach, Hosts: s.opts.Hosts,
	}
}

// Deadlines of service calls: every call a tool makes has one, so a
// wedged tmux or daemon cannot hold a client past its own timeout.
const (
	callTimeout   = 10 * time.Second
	actionTimeout = 20 * time.Second
)

// MaxWait is wait_for_wake's hard cap, well inside the 60 s after which
// Claude Desktop drops a call and Claude Code's HTTP client gives up.
const MaxWait = 25 * time.Second

// DefaultWait is wait_for_wake's wait when the client names none.
const DefaultWait = 20 * time.Second

// Screen line limits of get_session.
const (
	DefaultScreenLines = 40
	MaxScreenLines     = 500
)

// readOnly annotates a tool that changes nothing.
func readOnly(title string) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// writes annotates a tool that acts; destructive when what it does to an
// agent cannot be taken back (typed text, a chosen option, an interrupt).
func writes(title string, destructive, idempotent bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		Title:           title,
		ReadOnlyHint:    mcp.ToBoolPtr(false),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// argOrder keeps the arguments in the order a reader should see them.
func argOrder(names ...string) mcp.ToolOption {
	return func(t *mcp.Tool) { t.InputSchema.PropertyOrder = names }
}

// reasonValues are the wake reasons, for enums.
func reasonValues() []string {
	rs := api.Reasons()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// needReasons lists the reasons of wakes that ask someone to act (all but
// the heartbeat and the summary), for descriptions.
func needReasons() string {
	var out []string
	for _, r := range api.PersonReasons() {
		out = append(out, string(r))
	}
	return strings.Join(out, ", ")
}

// result is a tool's answer: v as JSON text (what models read) and as
// structured content (what programs read).
func result(v any) (*mcp.CallToolResult, error) {
	raw, err := encodeResult(v)
	if err != nil {
		return nil, err
	}
	return rawResult(raw, string(raw)), nil
}

// encodeResult is v as a tool answer's JSON (compact, HTML left as is).
func encodeResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// rawResult is the answer whose JSON is raw and text: both are the same
// encoding, and the structured content is kept as those bytes, not
// decoded into maps the transport would encode again. Neither is changed
// after, so answers may share them.
func rawResult(raw json.RawMessage, text string) *mcp.CallToolResult {
	res := mcp.NewToolResultStructured(raw, text)
	res.RawStructuredContent = raw
	return res
}

// badInput is a tool error for arguments the schema cannot rule out; msg
// says what to send instead.
func badInput(format string, a ...any) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultError(fmt.Sprintf(format, a...)), nil
}

// serviceError turns an error of the service into a tool error a model can
// act on, and keeps a Go error for internal failures.
func serviceError(err error) (*mcp.CallToolResult, error) {
	hint := ""
	switch {
	case errors.Is(err, api.ErrUnknownTarget):
		hint = "call list_sessions for the names and panes system3 watches"
	case errors.Is(err, api.ErrAmbiguousTarget):
		hint = "pass pane (like %3) or a target (session:window.pane) from the list instead"
	case errors.Is(err, api.ErrNotAwaiting):
		hint = "call get_session to see what it shows; use inject_guidance to send it text"
	case errors.Is(err, api.ErrPromptChanged):
		hint = "nothing was typed; call get_session to read the prompt on screen now, and answer that one if it is still yours to answer"
	case errors.Is(err, api.ErrBadAnswer):
		hint = "send an option number, yes, no, or an option's label exactly as listed"
	case errors.Is(err, api.ErrBadRequest):
	case errors.Is(err, api.ErrUnknownList):
		hint = "call list_tasks without list to see the ids"
	case errors.Is(err, api.ErrUnknownWake):
		hint = "call list_wakes (include_acked and include_resolved true) to see the ids"
	case errors.Is(err, api.ErrRefused):
	case errors.Is(err, api.ErrNoSender):
		hint = "this system3 cannot type into panes"
	case errors.Is(err, facade.ErrUnavailable):
		hint = "tell the operator; the rest of system3 works"
	case errors.Is(err, api.ErrAuditUnwritable):
		hint = "tell the operator: system3's state dir needs free space or write permission"
	case errors.Is(err, context.DeadlineExceeded):
		hint = "system3 did not answer in time (is tmux responsive?); try again"
	default:
		return nil, err
	}
	msg := err.Error()
	if hint != "" {
		msg += "; " + hint
	}
	return mcp.NewToolResultError(msg), nil
}

// bind decodes a call's arguments into v. The schema has been checked by
// then, so a failure here is a value the schema allows but Go cannot hold
// (a huge number).
func bind(req mcp.CallToolRequest, v any) error {
	raw := req.Params.RawArguments
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if req.Params.Arguments == nil {
			return nil
		}
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return err
		}
		raw = b
	}
	return json.Unmarshal(raw, v)
}

// decodeProblem says in JSON's words why a call's arguments, valid for
// the schema, did not fit the handler (a number too large for any
// counter): the argument, what it takes, and what came.
func decodeProblem(t mcp.Tool, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		typ := "a value of another type"
		if p, ok := t.InputSchema.Properties[te.Field].(map[string]any); ok {
			if s, ok := p["type"].(string); ok {
				typ = article(s) + " " + s
			}
		}
		if te.Value == "number" || strings.HasPrefix(te.Value, "number ") {
			return fmt.Sprintf("%s must be %s in range, not %s", te.Field, typ, strings.TrimPrefix(te.Value, "number "))
		}
		return fmt.Sprintf("%s must be %s, not %s", te.Field, typ, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "the arguments are not a JSON object"
	}
	return "the arguments do not fit this tool"
}

// withTimeout bounds one service call.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// handlerFunc adapts a typed handler: arguments decoded into A, a bad
// decode answered with what the tool accepts.
func handlerFunc[A any](t mcp.Tool, h func(ctx context.Context, req mcp.CallToolRequest, args A) (*mcp.CallToolResult, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args A
		if err := bind(req, &args); err != nil {
			return badInput("invalid arguments: %s. Send instead: %s", decodeProblem(t, err), argumentsUsage(t))
		}
		return h(ctx, req, args)
	}
}
