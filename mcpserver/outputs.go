package mcpserver

import "github.com/mark3labs/mcp-go/mcp"

// Output schemas of the tools: every tool answers a JSON object, as text
// and as structured content, and declares its shape here so a client can
// rely on it. The tests validate every result a test sees against its
// tool's schema. Fields always present are required; nested rows name
// their main fields' types.

// schema is one JSON Schema node.
type schema = map[string]any

var (
	tString = schema{"type": "string"}
	tInt    = schema{"type": "integer"}
	tNum    = schema{"type": "number"}
	tBool   = schema{"type": "boolean"}
	tObject = schema{"type": "object"}
	tTime   = schema{"type": "string", "description": "RFC 3339 time"}
)

func arrayOf(items schema) schema { return schema{"type": "array", "items": items} }

func nullable(typ string) schema { return schema{"type": []string{typ, "null"}} }

// object is an object schema with the given properties, of which required
// are always present.
func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// countsOf is an object whose values are counts.
var countsOf = schema{"type": "object", "additionalProperties": tInt}

// Rows shared by several tools.
var (
	hostRowSchema = object(schema{
		"name": tString, "state": schema{"type": "string", "enum": []string{"connected", "disconnected"}},
		"last_seen": tTime, "error": tString, "sessions": tInt, "needs_person": tInt,
	}, "name", "state", "sessions", "needs_person")
	sessionRowSchema = object(schema{
		"host": tString, "name": tString, "target": tString, "pane": tString, "agent": tString,
		"status": tString, "state": tString, "kind": tString, "question": tString, "tasks": tString, "hint": tString,
	}, "name", "target", "pane", "state")
	wakeSchema = object(schema{
		"id": tString, "seq": tInt, "time": tTime, "reason": tString, "key": tString,
		"session": tString, "pane": tString, "agent": tString, "state": tString, "kind": tString,
		"evidence": tObject, "suggested_action": tString, "acked": tBool,
	}, "id", "seq", "reason")
	actionSchema = schema{
		"delivered": tBool, "verified": tBool, "submitted": tBool, "priority": tString, "option": tString,
		"keys": arrayOf(tString), "pane": tString, "target": tString, "session": tString, "at": tTime,
		"method": tString, "detail": tString, "next": tString,
	}
)

// outputSchemas are the tools' result schemas, by tool name.
var outputSchemas = map[string]schema{
	"status": object(schema{
		"version": tString, "started": tTime, "uptime": tString, "uptime_seconds": tInt,
		"tmux_server": tString, "tmux_running": tBool, "problem": tString, "read_only": tBool,
		"needs_person": tInt, "by_status": countsOf, "by_state": countsOf, "other_panes": tInt,
		"orchestrators": arrayOf(object(schema{
			"host": tString, "name": tString, "target": tString, "pane": tString, "agent": tString, "status": tString,
			"state": tString, "resets_at": tTime, "needs_person": tInt, "hint": tString, "since": tTime,
		}, "name", "pane", "state")),
		"hosts":     arrayOf(hostRowSchema),
		"next":      tString,
		"untrusted": tString,
	}, "version", "uptime", "tmux_running", "read_only", "needs_person", "by_status", "by_state", "orchestrators", "next", "untrusted"),
	"list_sessions": object(schema{
		"sessions": arrayOf(sessionRowSchema), "count": tInt, "watched": tInt, "hosts": arrayOf(hostRowSchema), "untrusted": tString,
	}, "sessions", "count", "watched", "untrusted"),
	"get_session": object(schema{
		"name": tString, "target": tString, "pane": tString, "window": tString, "agent": tString,
		"command": tString, "path": tString, "status": tString, "state": tString, "kind": tString,
		"question": tString, "options": arrayOf(tString), "evidence": tObject, "hint": tString, "since": tTime, "updated": tTime,
		"task_list": tString, "tasks": tString, "task_items": arrayOf(tObject),
		"recent_wakes": arrayOf(tObject), "screen": tString, "screen_lines_cut": tInt, "next": tString, "untrusted": tString,
	}, "name", "target", "pane", "state", "screen", "untrusted"),
	"list_wakes": object(schema{
		"wakes": arrayOf(wakeSchema), "count": tInt, "cursor": tInt, "more": tBool, "untrusted": tString,
	}, "wakes", "count", "cursor", "more", "untrusted"),
	// Task lists, or, with list and task given, that one task whole.
	"list_tasks": {
		"type": "object",
		"properties": schema{
			"lists": arrayOf(object(schema{"id": tString, "session": tString, "agent": tString}, "id")), "count": tInt,
			"list": tString, "task": object(schema{"id": tString, "subject": tString, "status": tString}, "id"),
		},
		"oneOf": []schema{{"required": []string{"lists", "count"}}, {"required": []string{"list", "task"}}},
	},
	"wait_for_wake": object(schema{
		"status": schema{"type": "string", "enum": []string{"wake", "waiting"}}, "wake": wakeSchema,
		"cursor": tInt, "host": tString, "host_cursor": tString, "next": tString, "untrusted": tString,
	}, "status", "cursor", "next"),
	"inject_guidance": object(actionSchema, "delivered", "pane", "target", "session", "at"),
	"answer_prompt":   object(actionSchema, "delivered", "pane", "target", "session", "at"),
	"interrupt":       object(actionSchema, "delivered", "pane", "target", "session", "at"),
	"ack_wake": object(schema{"acked": arrayOf(object(schema{
		"id": tString, "reason": tString, "session": tString, "acked_by": tString, "acked_at": tTime,
	}, "id")), "count": tInt, "next": tString}, "acked", "count"),
	"link_task_list": object(schema{"session": tString, "target": tString, "pane": tString, "task_list": tString, "tasks": tString}, "pane", "task_list"),
	"stop_orchestrator": object(schema{
		"status": tString, "session": tString, "interrupted": tBool, "branch": tString, "worktree": tString,
		"worktree_removed": tBool, "detail": tString,
	}, "status", "session"),
	"spawn_orchestrator": object(schema{
		"status": tString, "session": tString, "pane": tString, "agent": tString, "command": nullable("string"),
		"repo": tString, "worktree": tString, "branch": tString, "base": tString, "initiative": tString,
		"task_list": tString, "prompt": tString, "prompt_verified": tBool, "auto_trusted": tBool,
		"wisdom": arrayOf(tObject), "wisdom_note": tString, "next": tString,
	}, "status", "session"),
	"capability_check": object(schema{"capabilities": arrayOf(tObject), "count": tInt}, "capabilities", "count"),
	"reflect": object(schema{
		"query": tString, "mode": tString, "budget": tString, "confidence": tNum, "note": tString,
		"capabilities": arrayOf(tObject), "patterns": arrayOf(tObject), "anti_patterns": arrayOf(tObject),
	}, "query", "mode", "confidence"),
	"report_outcome": object(schema{
		"outcome_id": tInt, "domain": tString, "kind": tString, "validated": tBool, "confidence": tNum,
		"criteria": arrayOf(tObject), "evidence": tString, "learnings": arrayOf(tObject),
		"capability_updated": tBool, "pattern_stored": tBool, "next": tString,
	}, "outcome_id", "validated"),
	"query_pattern_history": object(schema{
		"alerts":        arrayOf(object(schema{"id": tInt, "pattern": tString, "status": tString, "session": tString}, "id", "pattern", "status")),
		"count":         tInt,
		"interventions": arrayOf(tObject),
	}, "alerts", "count", "interventions"),
	"request_intervention": object(schema{
		"sent": tBool, "alert": tObject, "action": object(actionSchema), "interventions": arrayOf(tObject),
	}, "sent", "alert"),
	"report_intervention": object(schema{
		"pattern": tString, "intervention": tString, "context": tString, "shown": tInt, "worked": tInt,
		"reported": tInt, "reported_worked": tInt, "effectiveness": tNum, "chosen": tBool,
	}, "pattern", "intervention", "effectiveness", "chosen"),
}

// withOutputSchema sets t's declared output schema, when it has one.
func withOutputSchema(t *mcp.Tool) {
	s, ok := outputSchemas[t.Name]
	if !ok {
		return
	}
	t.OutputSchema = mcp.ToolOutputSchema{Type: "object", Properties: s["properties"].(schema)}
	if req, ok := s["required"].([]string); ok {
		t.OutputSchema.Required = req
	}
}
