package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// HookTimeout is the timeout, in seconds, Settings gives each hook but
// PermissionRequest's. `system3 hook` returns within a second; this only
// bounds a wedged machine.
const HookTimeout = 5

// PermissionTimeout is the timeout, in seconds, Settings gives the
// PermissionRequest hook: while the approval policy asks a person or a
// supervising agent, the hook holds the tool call (and Claude Code's
// dialog) until an answer comes, for at most PermissionBudget.
const PermissionTimeout = 60

// PermissionBudget is how long `system3 hook` may take for a
// PermissionRequest, well inside PermissionTimeout so that Claude Code
// never kills it: past it, the hook prints nothing and the agent shows
// its own dialog.
const PermissionBudget = (PermissionTimeout - 5) * time.Second

// group is one matcher group of a settings file's hooks.
type group struct {
	Matcher string    `json:"matcher"`
	Hooks   []command `json:"hooks"`
}

type command struct {
	// Name names the hook in the Gemini CLI's /hooks panel.
	Name    string `json:"name,omitempty"`
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

func ourGroup(event, cmd string) group {
	switch event {
	case api.PermissionRequest:
		return group{Matcher: "", Hooks: []command{{Type: "command", Command: cmd, Timeout: PermissionTimeout}}}
	case api.BeforeTool:
		// Gemini counts milliseconds.
		return group{Matcher: GeminiMatcher, Hooks: []command{{Name: "system3", Type: "command", Command: cmd, Timeout: PermissionTimeout * 1000}}}
	}
	return group{Matcher: "", Hooks: []command{{Type: "command", Command: cmd, Timeout: HookTimeout}}}
}

// Settings returns Claude Code settings JSON that runs command for every
// event in Events: {"hooks": {Event: [{"matcher": "", "hooks": [{"type":
// "command", "command": command, "timeout": HookTimeout}]}]}}, with
// PermissionTimeout for PermissionRequest. It is what
// `claude --settings` takes and what Install merges into a settings file.
func Settings(cmd string) ([]byte, error) { return SettingsFor(cmd, Events) }

// CodexEvents are the events system3's hooks take from the Codex CLI: its
// PermissionRequest (0.169 and later), which the approval policy answers
// with the same decision as Claude Code's. Codex reads them from a
// hooks.json of the same form as Claude Code's settings (its root holds
// "hooks" and "description" only).
var CodexEvents = []string{api.PermissionRequest}

// QwenEvents are the events system3's hooks take from Qwen Code (0.24),
// whose hooks are Claude Code's: the same settings form (matcher groups,
// the timeout in seconds) in its settings.json, the same payloads and the
// same PermissionRequest reply. It has Claude Code's events but its task
// events (TodoCreated and TodoCompleted instead of TaskCreated and
// TaskCompleted), and names an event it does not know as a warning, so
// those two are left out.
var QwenEvents = slices.DeleteFunc(slices.Clone(Events), func(e string) bool {
	return e == api.TaskCreated || e == api.TaskCompleted
})

// GeminiEvents are the events system3's hooks take from the Gemini CLI:
// its BeforeTool (0.61), run before a tool call and before Gemini's own
// approval, which the approval policy answers (DecisionReply). Gemini
// reads them from its settings.json, in the form of Claude Code's, with
// the timeout in milliseconds and a regular expression of tool names as
// the matcher.
var GeminiEvents = []string{api.BeforeTool}

// GeminiMatcher is the matcher of system3's BeforeTool hook: the tools
// the Gemini CLI asks about in its default approval mode (a shell
// command, writing or editing a file, fetching a URL, activating a skill,
// an MCP tool). Its read-only tools (read_file, glob, grep_search,
// google_web_search...) run without asking, and without the hook.
const GeminiMatcher = "^(run_shell_command|write_file|replace|web_fetch|activate_skill|mcp_.+)$"

// CopilotEvents are the events system3's hooks take from GitHub Copilot
// CLI (1.0.102), by the names its settings give them: its
// permissionRequest, run before its permission dialog, which the approval
// policy answers (DecisionReply); and its agentStop, a turn's natural
// end, the push signal Claude Code's Stop is. Its dialogs are read from
// the screen, with the prompt an answer checks: its notification
// (permission_prompt) announces one too, but a wake raised from it before
// the screen shows the dialog would have no prompt to answer, and a
// second one would follow. Copilot reads them from its settings.json as
// flat entries (copilotEntry), not matcher groups.
var CopilotEvents = []string{api.CopilotPermissionRequest, "agentStop"}

// copilotEntry is one of GitHub Copilot CLI's hook entries: a shell
// command and its timeout in seconds.
type copilotEntry struct {
	Type       string `json:"type"`
	Bash       string `json:"bash"`
	TimeoutSec int    `json:"timeoutSec,omitempty"`
}

// CopilotCommand is the command a Copilot hook entry runs for event:
// cmd naming the event, which Copilot's agentStop payload does not.
func CopilotCommand(cmd, event string) string { return cmd + " --event " + event }

// ourEntry is what system3 adds to a settings file's hooks for event: a
// matcher group, or for Copilot's events a flat entry.
func ourEntry(event, cmd string) any {
	if !slices.Contains(CopilotEvents, event) {
		return ourGroup(event, cmd)
	}
	timeout := HookTimeout
	if event == api.CopilotPermissionRequest {
		timeout = PermissionTimeout
	}
	return copilotEntry{Type: "command", Bash: CopilotCommand(cmd, event), TimeoutSec: timeout}
}

// SettingsFor is Settings for the given events only: for Codex's
// hooks.json, CodexEvents; for Gemini's settings.json, GeminiEvents; for
// Copilot's settings.json, CopilotEvents; for Qwen Code's settings.json,
// QwenEvents.
func SettingsFor(cmd string, events []string) ([]byte, error) {
	if strings.TrimSpace(cmd) == "" {
		return nil, errors.New("the hook command is empty; pass the command that runs `system3 hook`")
	}
	hooks := make(map[string][]any, len(events))
	for _, e := range events {
		hooks[e] = []any{ourEntry(e, cmd)}
	}
	return marshal(map[string]any{"hooks": hooks})
}

// marshal is json.Marshal without HTML escaping: a command with & or >
// stays readable in a settings file.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
