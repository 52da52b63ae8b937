package geminitest

// Shell asks the CLI to run a shell command (run_shell_command, an approval
// prompt in the default approval mode).
func Shell(command, description string) *FunctionCall {
	return &FunctionCall{Name: "run_shell_command", Args: map[string]any{"command": command, "description": description}}
}

// WriteFile asks the CLI to write a file at an absolute path (write_file).
func WriteFile(path, content string) *FunctionCall {
	return &FunctionCall{Name: "write_file", Args: map[string]any{"file_path": path, "content": content}}
}

// Replace asks the CLI to replace oldText with newText in a file (replace).
func Replace(path, oldText, newText string) *FunctionCall {
	return &FunctionCall{Name: "replace", Args: map[string]any{
		"file_path": path, "instruction": "Replace " + oldText + " with " + newText + ".",
		"old_string": oldText, "new_string": newText,
	}}
}

// Option is one choice of an AskUser question.
type Option struct{ Label, Description string }

// AskUser asks the user one multiple-choice question (ask_user).
func AskUser(question, header string, options ...Option) *FunctionCall {
	opts := make([]map[string]any, len(options))
	for i, o := range options {
		opts[i] = map[string]any{"label": o.Label, "description": o.Description}
	}
	return &FunctionCall{Name: "ask_user", Args: map[string]any{"questions": []any{map[string]any{
		"question": question, "header": header, "type": "choice", "options": opts,
	}}}}
}
