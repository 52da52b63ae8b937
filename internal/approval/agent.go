package approval

// FromAgent is a tool call an agent's PermissionRequest hook delivered
// (Qwen Code's), in the policy's words: its tool named as names says
// (the agent's tools by Claude Code's names for the like, from its
// agent.Spec's PolicyTools), the agent's own name kept as AgentTool. Its
// inputs must already have the fields the policy reads (command,
// file_path...). A tool names does not hold keeps the agent's name.
func FromAgent(req Request, names map[string]string) Request {
	name, ok := names[req.Tool]
	if !ok || name == req.Tool {
		return req
	}
	req.AgentTool, req.Tool = req.Tool, name
	return req
}
