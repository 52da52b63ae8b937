package chattest

// The tools each CLI offers the model, as the fake calls them.

// Shell asks cli to run command: opencode's and Copilot's bash, Qwen Code's
// run_shell_command, Cline's run_commands.
func Shell(cli CLI, command, description string) *ToolCall {
	switch cli {
	case Opencode, Copilot:
		return &ToolCall{Name: "bash", Args: map[string]any{"command": command, "description": description}}
	case Qwen:
		return &ToolCall{Name: "run_shell_command", Args: map[string]any{"command": command, "description": description, "is_background": false}}
	default:
		return &ToolCall{Name: "run_commands", Args: map[string]any{"commands": []string{command}}}
	}
}

// Edit asks cli to change a file at an absolute path: opencode's edit of
// oldText, Qwen Code's write_file of newText (its edit wants the file read
// first), Cline's editor, Copilot's edit.
func Edit(cli CLI, path, oldText, newText string) *ToolCall {
	switch cli {
	case Copilot:
		return &ToolCall{Name: "edit", Args: map[string]any{"path": path, "old_str": oldText, "new_str": newText}}
	case Opencode:
		return &ToolCall{Name: "edit", Args: map[string]any{"filePath": path, "oldString": oldText, "newString": newText}}
	case Qwen:
		return &ToolCall{Name: "write_file", Args: map[string]any{"file_path": path, "content": newText + "\n"}}
	default:
		return &ToolCall{Name: "editor", Args: map[string]any{"path": path, "old_text": oldText, "new_text": newText}}
	}
}

// Option is one choice of a Question.
type Option struct{ Label, Description string }

// Question asks the user one multiple-choice question with cli's own tool:
// opencode's question, Qwen Code's ask_user_question, Cline's ask_question
// (labels only), Copilot's ask_user (a form of one field, header, whose
// values are the labels).
func Question(cli CLI, question, header string, options ...Option) *ToolCall {
	labels := make([]string, len(options))
	for i, o := range options {
		labels[i] = o.Label
	}
	switch cli {
	case Cline:
		return &ToolCall{Name: "ask_question", Args: map[string]any{"question": question, "options": labels}}
	case Copilot:
		return &ToolCall{Name: "ask_user", Args: map[string]any{"message": question, "requestedSchema": map[string]any{
			"properties": map[string]any{"choice": map[string]any{"type": "string", "title": header, "enum": labels}},
			"required":   []string{"choice"},
		}}}
	}
	opts := make([]map[string]any, len(options))
	for i, o := range options {
		opts[i] = map[string]any{"label": o.Label, "description": o.Description}
	}
	q := map[string]any{"question": question, "header": header, "options": opts}
	name := "question"
	if cli == Qwen {
		name = "ask_user_question"
		q["multiSelect"] = false
	}
	return &ToolCall{Name: name, Args: map[string]any{"questions": []any{q}}}
}
