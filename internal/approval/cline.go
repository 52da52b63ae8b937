package approval

import (
	"encoding/json"
	"strings"
)

// clineTools are the Cline CLI's tools (3.0.65) by the names the policy
// knows the like by, Claude Code's: run_commands runs shell commands,
// editor changes or creates a file. Their inputs are not Claude Code's
// (FromCline translates them); Cline's other tools (read_files,
// search_codebase, fetch_web_content, apply_patch, ...) keep their names.
var clineTools = map[string]string{
	"run_commands": "Bash",
	"editor":       "Edit",
}

// FromCline is a tool call the Cline CLI's PreToolUse hook delivered, in
// the policy's words: its tool named as Claude Code names the like
// (clineTools), Cline's own name kept as AgentTool, and its input given
// the fields the policy reads: run_commands's commands, which Cline runs
// one after the other, as one "command" of one line each (so a rule that
// denies any of them denies the call), editor's "path" as "file_path".
// A call whose input is not what Cline sends keeps Cline's name, which no
// rule for Claude Code's tools matches.
func FromCline(req Request) Request {
	name, ok := clineTools[req.Tool]
	if !ok {
		return req
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(req.Input, &m) != nil {
		return req
	}
	switch req.Tool {
	case "run_commands":
		var cmds []string
		if json.Unmarshal(m["commands"], &cmds) != nil {
			var one string
			if json.Unmarshal(m["commands"], &one) != nil || one == "" {
				return req
			}
			cmds = []string{one}
		}
		if len(cmds) == 0 {
			return req
		}
		b, err := json.Marshal(strings.Join(cmds, "\n"))
		if err != nil {
			return req
		}
		m["command"] = b
	case "editor":
		p, ok := m["path"]
		if !ok {
			return req
		}
		m["file_path"] = p
	}
	in, err := json.Marshal(m)
	if err != nil {
		return req
	}
	req.AgentTool, req.Tool, req.Input = req.Tool, name, in
	return req
}
