// Package claude is what system3 knows about Claude Code: its rules
// (rules.yaml), its keys, how it is started with system3's hooks, how its
// transcript is found, and how a session resumes.
package claude

import (
	_ "embed"
	"path/filepath"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is Claude Code.
var Spec = agent.Spec{
	Name:  "claude",
	Rules: rules,
	Keys:  keys{},
	// Claude Code gets its task tools (TaskCreate, TaskUpdate), which
	// write the task list the session is linked to.
	Launch: agent.Launch{Command: []string{"claude"}, Env: map[string]string{"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}},
	Resume: func(id string) []string {
		if id == "" {
			return []string{"--continue"}
		}
		return []string{"--resume", id}
	},
	// Claude Code reports its state by hook from its first second, for
	// this process only: the user's settings are left alone.
	HookArgs:  func(settings []byte) []string { return []string{"--settings", string(settings)} },
	Hooks:     true,
	Probe:     &agent.Probe{Processes: []string{"claude"}, TaskListVar: "CLAUDE_CODE_TASK_LIST_ID", TranscriptDir: TranscriptDir},
	TaskLists: true,
	// At its prompt after the automatic continue at a usage limit was
	// cancelled (or never offered): a prompt of its own, as a person
	// would type it.
	Continue: "continue",
	Cursor:   agent.CaretCursor,
}

// keys: numbered menus; "no" is always Escape, which every Claude Code
// prompt takes as its No.
type keys struct{ agent.Menu }

func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) { return agent.DeclineMenu(k, p, true) }

// TranscriptDir is the project directory of Claude Code's transcripts for
// a process with environment env working in cwd: projects/<cwd encoded>
// in CLAUDE_CONFIG_DIR, or in $HOME/.claude.
func TranscriptDir(env map[string]string, cwd string) string {
	dir := env["CLAUDE_CONFIG_DIR"]
	if dir == "" && env["HOME"] != "" {
		dir = filepath.Join(env["HOME"], ".claude")
	}
	if dir == "" || cwd == "" {
		return ""
	}
	return filepath.Join(dir, "projects", EncodeProjectDir(cwd))
}

// EncodeProjectDir names a project directory as Claude Code does: every
// byte that is not an ASCII letter or digit becomes '-'.
func EncodeProjectDir(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
