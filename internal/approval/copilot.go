package approval

// copilotTools are GitHub Copilot CLI's tools (1.0.102) by the names the
// policy knows them by, Claude Code's, as its permissionRequest hook
// names them: bash with the command as its input's "command", and edit,
// which it names for a new file too (its create tool), with the file as
// "file_path" beside the change as a diff.
var copilotTools = map[string]string{
	"bash": "Bash",
	"edit": "Edit",
}

// FromCopilot is a tool call GitHub Copilot CLI's permissionRequest hook
// delivered, in the policy's words: its tool named as Claude Code names
// the like (copilotTools), Copilot's own name kept as AgentTool. Its
// inputs already have the fields the policy reads. A tool the policy has
// no name for keeps Copilot's.
func FromCopilot(req Request) Request {
	name, ok := copilotTools[req.Tool]
	if !ok {
		return req
	}
	req.AgentTool, req.Tool = req.Tool, name
	return req
}
