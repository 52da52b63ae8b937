package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// auditTimeout bounds writing one audit entry (over the socket, it is a
// call to another process).
const auditTimeout = 3 * time.Second

// Limits of what an audit entry keeps of a call.
const (
	maxAuditArgs   = 2048
	maxAuditResult = 512
	maxClientName  = 64
)

// addHooks wires the server's bookkeeping into mcp-go: which sessions are
// open, the client name of each (for origins), and an audit entry for
// every tool call, including those rejected before their handler ran.
func (s *Server) addHooks(h *server.Hooks) {
	h.AddOnRegisterSession(func(ctx context.Context, cs server.ClientSession) {
		s.sessionOpened(cs.SessionID())
	})
	h.AddOnUnregisterSession(func(ctx context.Context, cs server.ClientSession) {
		s.sessionClosed(cs.SessionID())
		s.clients.forget(cs.SessionID())
	})
	h.AddAfterInitialize(func(ctx context.Context, id any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			s.clients.set(cs.SessionID(), req.Params.ClientInfo.Name)
		}
		s.log.Info("mcp client connected", "client", cleanName(req.Params.ClientInfo.Name), "version", req.Params.ClientInfo.Version,
			"protocol", req.Params.ProtocolVersion)
	})
	h.AddBeforeReadResource(func(ctx context.Context, id any, req *mcp.ReadResourceRequest) {
		s.markMissing(ctx, req)
	})
	h.AddAfterCallTool(func(ctx context.Context, id any, req *mcp.CallToolRequest, result any) {
		res, _ := result.(*mcp.CallToolResult)
		if res != nil && res.IsError {
			s.explainValidation(req.Params.Name, requestArgs(req), res)
		}
		s.auditCall(ctx, req, res, nil)
	})
	h.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
		if method != mcp.MethodToolsCall {
			return
		}
		req, _ := message.(*mcp.CallToolRequest)
		if req == nil {
			req = &mcp.CallToolRequest{}
		}
		s.auditCall(ctx, req, nil, err)
	})
}

// auditCall records one tool call in the audit log shared with the
// dashboard. A failing audit log is logged; the call has happened.
func (s *Server) auditCall(ctx context.Context, req *mcp.CallToolRequest, res *mcp.CallToolResult, callErr error) {
	e := api.AuditEntry{
		Time:   s.opts.Clock(),
		Origin: s.origin(ctx),
		Action: "tool_call",
		Tool:   req.Params.Name,
		Args:   summarizeArgs(req),
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		e.MCPSession = cs.SessionID()
	}
	switch {
	case callErr != nil:
		e.Error = callErr.Error()
	case res != nil && res.IsError:
		e.Error = truncate(resultText(res), maxAuditResult)
	case res != nil:
		e.Result = truncate(resultText(res), maxAuditResult)
		e.Sent = delivered(res)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if err := s.svc.Audit(actx, e); err != nil {
		s.log.Warn("audit tool call", "tool", e.Tool, "err", err)
	}
	s.log.Debug("tool call", "origin", e.Origin, "tool", e.Tool, "args", e.Args, "error", e.Error)
}

// delivered is a successful call's "delivered" for the audit log: what
// the result itself says where it has the field (a tool that types into a
// pane may answer without having delivered), true otherwise (the call did
// what was asked).
func delivered(res *mcp.CallToolResult) bool {
	var doc struct {
		Delivered *bool `json:"delivered"`
	}
	raw := res.RawStructuredContent
	if len(raw) == 0 {
		raw = []byte(resultText(res))
	}
	// Only the tools that type into panes have the field: a read's
	// answer (a whole status) is not decoded for it.
	if !bytes.Contains(raw, []byte(`"delivered"`)) {
		return true
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Delivered != nil {
		return *doc.Delivered
	}
	return true
}

// summarizeArgs is a tool call's arguments as compact JSON, cut to a size
// the audit log keeps.
func summarizeArgs(req *mcp.CallToolRequest) string {
	raw := req.Params.RawArguments
	if len(raw) == 0 && req.Params.Arguments != nil {
		raw, _ = json.Marshal(req.Params.Arguments)
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			raw = b
		}
	}
	return truncate(string(raw), maxAuditArgs)
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes cut)", len(s)-cut)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// explainValidation adds to mcp-go's schema validation message what the
// tool accepts, so a model can correct its call in one step.
func (s *Server) explainValidation(tool string, args map[string]any, res *mcp.CallToolResult) {
	if len(res.Content) != 1 {
		return
	}
	t, ok := mcp.AsTextContent(res.Content[0])
	if !ok || !strings.HasPrefix(t.Text, "input schema validation failed") {
		return
	}
	reg := s.mcp.GetTool(tool)
	if reg == nil {
		return
	}
	msg := t.Text
	if problems := argumentProblems(reg.Tool, args); len(problems) > 0 {
		msg = "invalid arguments: " + strings.Join(problems, "; ")
	}
	res.Content[0] = mcp.NewTextContent(msg + ". Send instead: " + argumentsUsage(reg.Tool))
}

// argumentProblems says in words what is wrong with args for t: the same
// checks as the schema (required, unknown, type, enum, range, length).
func argumentProblems(t mcp.Tool, args map[string]any) []string {
	var out []string
	for _, r := range t.InputSchema.Required {
		if _, ok := args[r]; !ok {
			out = append(out, fmt.Sprintf("missing required argument %q", r))
		}
	}
	names := make([]string, 0, len(args))
	for n := range args {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := args[n]
		p, ok := t.InputSchema.Properties[n].(map[string]any)
		if !ok {
			out = append(out, fmt.Sprintf("unknown argument %q", n))
			continue
		}
		out = append(out, valueProblems(n, p, v)...)
	}
	return out
}

func valueProblems(name string, p map[string]any, v any) []string {
	typ, _ := p["type"].(string)
	got := jsonType(v)
	if typ != "" && got != typ && !(typ == "number" && got == "integer") {
		if got == "null" {
			return []string{fmt.Sprintf("%s must be %s %s, not null (leave it out for the default)", name, article(typ), typ)}
		}
		return []string{fmt.Sprintf("%s must be %s %s, not %s %s", name, article(typ), typ, article(got), got)}
	}
	var out []string
	switch x := v.(type) {
	case string:
		if enum := enumStrings(p["enum"]); len(enum) > 0 && !slices.Contains(enum, x) {
			out = append(out, fmt.Sprintf("%s %q is not one of %s", name, x, strings.Join(enum, ", ")))
		}
		if n, ok := p["minLength"].(int); ok && len([]rune(x)) < n {
			out = append(out, fmt.Sprintf("%s is empty", name))
		}
		if n, ok := p["maxLength"].(int); ok && len([]rune(x)) > n {
			out = append(out, fmt.Sprintf("%s is longer than %d characters", name, n))
		}
	case float64:
		if lo, ok := toFloat(p["minimum"]); ok && x < lo {
			out = append(out, fmt.Sprintf("%s %v is below %v", name, x, lo))
		}
		if hi, ok := toFloat(p["maximum"]); ok && x > hi {
			out = append(out, fmt.Sprintf("%s %v is above %v", name, x, hi))
		}
	case []any:
		items, _ := p["items"].(map[string]any)
		for i, it := range x {
			out = append(out, valueProblems(fmt.Sprintf("%s[%d]", name, i), items, it)...)
		}
	}
	return out
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func argumentsUsage(t mcp.Tool) string {
	var parts []string
	for _, name := range propertyNames(t) {
		p, _ := t.InputSchema.Properties[name].(map[string]any)
		var attrs []string
		typ, _ := p["type"].(string)
		if typ == "array" {
			if items, ok := p["items"].(map[string]any); ok {
				if it, ok := items["type"].(string); ok {
					typ = "array of " + it
				}
				if enum := enumStrings(items["enum"]); len(enum) > 0 {
					attrs = append(attrs, "items one of "+strings.Join(enum, ", "))
				}
			}
		}
		attrs = append([]string{typ}, attrs...)
		for _, r := range t.InputSchema.Required {
			if r == name {
				attrs = append(attrs, "required")
			}
		}
		if enum := enumStrings(p["enum"]); len(enum) > 0 {
			attrs = append(attrs, "one of "+strings.Join(enum, ", "))
		}
		if lo, ok := p["minimum"]; ok {
			if hi, ok := p["maximum"]; ok {
				attrs = append(attrs, fmt.Sprintf("%v to %v", lo, hi))
			} else {
				attrs = append(attrs, fmt.Sprintf("at least %v", lo))
			}
		}
		if d, ok := p["default"]; ok {
			attrs = append(attrs, fmt.Sprintf("default %v", d))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", name, strings.Join(attrs, "; ")))
	}
	if len(parts) == 0 {
		return "no arguments: {}"
	}
	return strings.Join(parts, ", ") + "; no other arguments"
}

func enumStrings(v any) []string {
	var out []string
	switch e := v.(type) {
	case []string:
		out = e
	case []any:
		for _, x := range e {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// propertyNames are a tool's argument names in declaration order.
func propertyNames(t mcp.Tool) []string {
	names := append([]string(nil), t.InputSchema.PropertyOrder...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	var rest []string
	for n := range t.InputSchema.Properties {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// originKey carries a call's origin ("mcp:<client>") to the handlers.
type originKey struct{}

// withOrigin is the tool middleware that names the caller for the audit
// log and the wakes it acknowledges.
func (s *Server) withOrigin(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return next(context.WithValue(ctx, originKey{}, s.origin(ctx)), req)
	}
}

// origin is "mcp:<client name from initialize>".
func (s *Server) origin(ctx context.Context) string {
	if o, ok := ctx.Value(originKey{}).(string); ok {
		return o
	}
	name := ""
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		if ci, ok := cs.(server.SessionWithClientInfo); ok {
			name = ci.GetClientInfo().Name
		}
		if name == "" {
			name = s.clients.get(cs.SessionID())
		}
	}
	return "mcp:" + cleanName(name)
}

// originOf is the origin the middleware put in ctx ("mcp:unknown" for a
// handler called without it, as in tests).
func originOf(ctx context.Context) string {
	if o, ok := ctx.Value(originKey{}).(string); ok {
		return o
	}
	return "mcp:unknown"
}

// WithOrigin returns ctx naming the caller, for calling a handler
// directly (tests, in-process use).
func WithOrigin(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, originKey{}, "mcp:"+cleanName(client))
}

// cleanName keeps a client's self-chosen name printable and short.
func cleanName(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && !unicode.IsSpace(r) || r == ' ' {
			return r
		}
		return -1
	}, strings.TrimSpace(name))
	if r := []rune(name); len(r) > maxClientName {
		name = string(r[:maxClientName])
	}
	if name == "" {
		return "unknown"
	}
	return name
}

// clientNames remembers each session's client name from initialize, for
// the sessions whose mcp-go session keeps none. An entry lives as long as
// its session: it is forgotten when the session ends.
type clientNames struct {
	mu    sync.Mutex
	names map[string]string
}

func newClientNames() *clientNames {
	return &clientNames{names: map[string]string{}}
}

func (c *clientNames) set(id, name string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names[id] = name
}

func (c *clientNames) get(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[id]
}

func (c *clientNames) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.names, id)
}

// requestArgs are a call's arguments as decoded JSON.
func requestArgs(req *mcp.CallToolRequest) map[string]any {
	var m map[string]any
	if len(req.Params.RawArguments) > 0 && json.Unmarshal(req.Params.RawArguments, &m) == nil {
		return m
	}
	if m, ok := req.Params.Arguments.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
