// Package cline is what system3 knows about the Cline CLI: its rules
// (rules.yaml), its keys (approvals take y and n, its question tool the
// arrow keys) and how a session resumes: by its id only (cline --id ID),
// which system3 learns from the session files Cline keeps.
package cline

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

//go:embed rules.yaml
var rules []byte

// Spec is the Cline CLI. It approves every tool unless started with
// --auto-approve false, so system3 starts it that way. It has no resume
// of the latest conversation: without an id learnt, a restored Cline
// starts afresh.
//
// With system3's hook files installed (system3 hooks install --agent
// cline), its events are weighed against its screen (TaskStart and
// TaskResume are a turn's start, TaskComplete its end, PostToolUse a
// tool call done), and the approval policy sees its PreToolUse, before
// Cline's approval dialog: Cline's reply can only cancel, so a deny
// refuses the call (and stops the turn) and anything else is left to the
// dialog. Cline runs a hook in the process that runs the session: the
// CLI in the pane, or its hub, a daemon the first CLI of a user starts
// and every later one hands its sessions to, in auto mode, which runs
// them with that first CLI's environment (its pane, its token) and below
// its process. So system3 starts Cline with its sessions in the CLI's own
// process (CLINE_SESSION_BACKEND_MODE=local), and refuses an event from
// below the hub (Hub): those panes are read from the screen alone.
var Spec = agent.Spec{
	Name:  "cline",
	Rules: rules,
	Keys:  keys{},
	Launch: agent.Launch{Command: []string{"cline", "--auto-approve", "false"},
		Env: map[string]string{"CLINE_SESSION_BACKEND_MODE": "local"}},
	Hooks: true,
	Hub:   "--cline-hub-daemon",
	Resume: func(id string) []string {
		if id == "" {
			return nil
		}
		return []string{"--id", id}
	},
	// Its plain listing leaves the ids out; --json has them (sessionId)
	// with each conversation's cwd.
	History: []string{"cline", "history", "--json"},
	// The npm launcher (node …/cline/bin/cline) runs the native binary as
	// bin/.cline, else a platform package's bin/cline.
	Probe: &agent.Probe{Processes: []string{".cline", "cline"}, SessionID: SessionID},
	// A usage limit ends the turn after five retries (2 to 32 s apart,
	// whatever Retry-After says); Cline then waits at its prompt and never
	// goes on by itself (seen live past the reset).
	Continue: "continue",
}

// Where Cline keeps its sessions (3.0.65): CLINE_SESSION_DATA_DIR, else
// CLINE_DATA_DIR/sessions, else CLINE_DIR (default ~/.cline)/data/sessions,
// a directory per conversation named by its id (the time it began in
// milliseconds, "_" and five letters) holding <id>.json, its manifest.
const (
	// maxSessions bounds the conversations SessionID reads, newest
	// first: the pane's is among the latest begun.
	maxSessions = 200
	// maxManifest bounds one manifest (it holds the first prompt).
	maxManifest = 4 << 20
)

// manifest is the part of a session's <id>.json SessionID reads, and
// when it was written.
type manifest struct {
	ID      string `json:"session_id"`
	PID     int    `json:"pid"`
	Ended   string `json:"ended_at"`
	written time.Time
}

// SessionID is the id of the conversation Cline holds in a pane. A
// conversation it began (the first prompt, or one after /clear) is the
// newest session, among the latest maxSessions, that has not ended and
// whose manifest names a process that runs in the pane and had started
// when the manifest was written. A conversation it resumed (cline --id
// ID) keeps the manifest naming the process that began it, so it is the
// one its command line names, while that session has not ended.
// Sub-agents keep their messages inside their lead's directory, so every
// directory is a conversation a person started.
func SessionID(p agent.Process) string {
	dir := sessionsDir(p.Env)
	if dir == "" {
		return ""
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	// Ids begin with the time in milliseconds: by name is by age.
	slices.Reverse(entries)
	read := 0
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if read++; read > maxSessions {
			break
		}
		m, ok := readManifest(dir, e.Name())
		if ok && m.Ended == "" && m.PID > 0 && p.Holds(m.PID, m.written) {
			return m.ID
		}
	}
	if id := resumed(p.Args); id != "" {
		if m, ok := readManifest(dir, id); ok && m.Ended == "" {
			return m.ID
		}
	}
	return ""
}

// resumed is the session id a command line resumes (--id ID, --id=ID).
func resumed(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--id="); ok {
			return v
		}
		if a == "--id" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func sessionsDir(env map[string]string) string {
	if d := strings.TrimSpace(env["CLINE_SESSION_DATA_DIR"]); d != "" {
		return d
	}
	if d := strings.TrimSpace(env["CLINE_DATA_DIR"]); d != "" {
		return filepath.Join(d, "sessions")
	}
	root := strings.TrimSpace(env["CLINE_DIR"])
	if root == "" {
		if env["HOME"] == "" {
			return ""
		}
		root = filepath.Join(env["HOME"], ".cline")
	}
	return filepath.Join(root, "data", "sessions")
}

// readManifest reads session id's manifest in dir; a manifest that does
// not name its own directory's session is none.
func readManifest(dir, id string) (manifest, bool) {
	if id == "" || id != filepath.Base(id) || strings.HasPrefix(id, ".") || strings.HasPrefix(id, "-") || strings.ContainsAny(id, " \t\n") {
		return manifest{}, false
	}
	f, err := os.Open(filepath.Join(dir, id, id+".json"))
	if err != nil {
		return manifest{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return manifest{}, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifest))
	if err != nil {
		return manifest{}, false
	}
	var m manifest
	if json.Unmarshal(b, &m) != nil || m.ID != id {
		return manifest{}, false
	}
	m.written = fi.ModTime()
	return m, true
}

// keys: an approval ("[y] Approve   [n] Deny") takes the option's letter;
// the question tool's list opens on its first option and takes Down to
// the option and Enter; Escape stops a turn (Ctrl-C quits).
type keys struct{}

func (keys) Choose(p agent.Prompt, i int) ([]tmux.Key, error) {
	if i < 0 || i >= max(len(p.Options), 1) {
		return nil, fmt.Errorf("option %d is not on screen", i+1)
	}
	if p.Kind == "permission" {
		label := strings.ToLower(strings.TrimSpace(p.Options[i]))
		switch {
		case strings.HasPrefix(label, "approve"):
			return []tmux.Key{tmux.Key("y")}, nil
		case strings.HasPrefix(label, "deny"):
			return []tmux.Key{tmux.Key("n")}, nil
		}
		return nil, fmt.Errorf("cline's option %q has no key system3 may press", p.Options[i])
	}
	out := make([]tmux.Key, 0, i+1)
	for range i {
		out = append(out, tmux.KeyDown)
	}
	return append(out, tmux.KeyEnter), nil
}

// Yes is Approve.
func (keys) Yes(p agent.Prompt) int {
	for i, o := range p.Options {
		if agent.HasWordPrefix(o, "approve") {
			return i
		}
	}
	return agent.YesOption(p.Options)
}

// No is Deny, else Escape.
func (k keys) No(p agent.Prompt) (string, []tmux.Key, error) {
	for i, o := range p.Options {
		if agent.HasWordPrefix(o, "deny") {
			keys, err := k.Choose(p, i)
			return o, keys, err
		}
	}
	return agent.DeclineMenu(k, p, false)
}

func (keys) Interrupt() tmux.Key { return tmux.KeyEscape }
