package claudefake

import "encoding/json"

// Tool builds a ToolCall whose input is v marshalled to JSON. It panics if v
// does not marshal, which is a bug in the caller.
func Tool(name string, v any) *ToolCall {
	b, err := json.Marshal(v)
	if err != nil {
		panic("claudefake: tool input for " + name + ": " + err.Error())
	}
	return &ToolCall{Name: name, Input: b}
}

// Bash asks the CLI to run a shell command (a permission prompt in
// --permission-mode default).
func Bash(command, description string) *ToolCall {
	return Tool("Bash", struct {
		Command     string `json:"command"`
		Description string `json:"description,omitempty"`
	}{command, description})
}

// BashBackground asks the CLI to run a shell command as a background
// task: the call returns at once, and the CLI, idle or not, sends a
// request of its own (a <task-notification>) when the command exits.
func BashBackground(command, description string) *ToolCall {
	return Tool("Bash", struct {
		Command         string `json:"command"`
		Description     string `json:"description,omitempty"`
		RunInBackground bool   `json:"run_in_background"`
	}{command, description, true})
}

// Write asks the CLI to create or overwrite a file at an absolute path.
func Write(path, content string) *ToolCall {
	return Tool("Write", struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}{path, content})
}

// Edit asks the CLI to replace oldText with newText in a file it has read.
func Edit(path, oldText, newText string) *ToolCall {
	return Tool("Edit", struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}{path, oldText, newText})
}

// Read asks the CLI to read a file at an absolute path.
func Read(path string) *ToolCall {
	return Tool("Read", struct {
		FilePath string `json:"file_path"`
	}{path})
}

// Question is one question of an AskUserQuestion call.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"` // chip label, at most 12 characters
	Options     []Option `json:"options"`
	MultiSelect bool     `json:"multiSelect"`
}

// Option is one choice of a Question.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// AskUserQuestion shows the CLI's multiple-choice question dialog.
func AskUserQuestion(qs ...Question) *ToolCall {
	return Tool("AskUserQuestion", struct {
		Questions []Question `json:"questions"`
	}{qs})
}

// TaskCreate creates a task (needs CLAUDE_CODE_ENABLE_TODO_TOOLS=1).
func TaskCreate(subject, description, activeForm string) *ToolCall {
	return Tool("TaskCreate", struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
		ActiveForm  string `json:"activeForm,omitempty"`
	}{subject, description, activeForm})
}

// TaskUpdate changes a task's status: "pending", "in_progress",
// "completed" or "deleted".
func TaskUpdate(taskID, status string) *ToolCall {
	return Tool("TaskUpdate", struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}{taskID, status})
}

// ExitPlanMode asks the user to approve a plan (in --permission-mode plan).
func ExitPlanMode(plan string) *ToolCall {
	return Tool("ExitPlanMode", struct {
		Plan string `json:"plan"`
	}{plan})
}
