package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// The Cline CLI (3.0.65) runs hooks that are files: a script named after
// its event (TaskStart, PreToolUse, ..., any case, with no extension or
// one of .sh .bash .zsh .js .mjs .cjs .ts .py .ps1) in a hooks directory:
// ~/Documents/Cline/Hooks, $CLINE_DIR/hooks (~/.cline/hooks), and a
// workspace's .clinerules/hooks and .cline/hooks. It runs every such file
// of an event, from every directory, with the script's shebang (else
// bash), in the process that runs the session, with that process's
// environment, the payload on stdin: {"hookName": "agent_start", "taskId",
// "sessionContext": {"rootSessionId"}, "workspaceRoots", ...}. It reads
// the directories when a session starts.

// ClineEvents are the Cline hook files system3 installs, by the event
// each is named after: a turn started (TaskStart; TaskResume in a
// conversation resumed with cline --id), a tool call before it runs and
// before Cline's approval dialog (PreToolUse), a tool call done
// (PostToolUse), a turn ended (TaskComplete). Cline 3.0.65 fires no
// UserPromptSubmit in its interactive CLI, TaskCancel only for an error
// that says it was cancelled, and SessionShutdown whenever a turn is
// stopped (not when the CLI exits): none of them is installed.
var ClineEvents = []string{"TaskStart", "TaskResume", "PreToolUse", "PostToolUse", "TaskComplete"}

// clineNames are the Cline payloads' hookName values system3 takes, by
// the names it keeps them under: a turn's start is Claude Code's
// UserPromptSubmit (working), its end a Stop (idle), a finished tool call
// a PostToolUse (PostToolUseFailure when it failed), and the call before
// it runs keeps its own name, the approval policy's (api.ClineToolCall).
var clineNames = map[string]string{
	"agent_start":     api.UserPromptSubmit,
	"agent_resume":    api.UserPromptSubmit,
	"agent_end":       api.Stop,
	"tool_result":     api.PostToolUse,
	api.ClineToolCall: api.ClineToolCall,
}

// clineScriptExt is the extension of system3's hook files. Cline runs
// every file of an event, so a user's own PreToolUse (no extension, or
// PreToolUse.py) runs beside system3's PreToolUse.sh.
const clineScriptExt = ".sh"

// clineMark is the second line of system3's hook files: a file of the
// same name without it is someone else's, which InstallCline never
// replaces.
const clineMark = "# system3: tells system3 what this Cline is doing (system3 hooks install --agent cline)"

// clinePayload is a Cline hook payload, as far as system3 reads it.
type clinePayload struct {
	HookName       string `json:"hookName"`
	TaskID         string `json:"taskId"`
	SessionContext struct {
		RootSessionID string `json:"rootSessionId"`
	} `json:"sessionContext"`
	WorkspaceRoots []string `json:"workspaceRoots"`
	ToolCall       *struct {
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"tool_call"`
	ToolResult *struct {
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  string          `json:"error"`
	} `json:"tool_result"`
}

// isCline reports whether a payload that names its event name in hookName
// is the Cline CLI's.
func isCline(name string) bool { _, ok := clineNames[name]; return ok }

// parseCline reads a Cline hook payload (isCline). The session is the
// conversation cline --id resumes (sessionContext.rootSessionId).
func parseCline(data []byte) (api.HookEvent, error) {
	var p clinePayload
	if err := json.Unmarshal(data, &p); err != nil {
		return api.HookEvent{}, fmt.Errorf("Cline hook payload is not valid JSON: %v", err)
	}
	ev := api.HookEvent{
		Name:      clineNames[p.HookName],
		SessionID: clip(firstOf(p.SessionContext.RootSessionID, p.TaskID), 256),
	}
	if len(p.WorkspaceRoots) > 0 {
		ev.Cwd = clip(p.WorkspaceRoots[0], maxField)
	}
	var input json.RawMessage
	switch {
	case ev.Name == api.ClineToolCall && p.ToolCall != nil:
		ev.ToolName, ev.ToolUseID, input = p.ToolCall.Name, p.ToolCall.ID, p.ToolCall.Input
	case ev.Name == api.PostToolUse && p.ToolResult != nil:
		r := p.ToolResult
		ev.ToolName, ev.ToolUseID, input = r.Name, r.ID, r.Input
		if r.Error != "" {
			ev.Name, ev.Error = api.PostToolUseFailure, clip(r.Error, maxField)
		} else {
			ev.ToolResponse = clip(oneLine(text(r.Output)), maxSummary)
		}
	}
	ev.ToolName, ev.ToolUseID = clip(ev.ToolName, 128), clip(ev.ToolUseID, 128)
	ev.ToolInput = summarizeInput(input)
	if ev.AsksPermission() {
		ev.ToolInputJSON = exactInput(input)
	}
	return ev, nil
}

// ClineScript is system3's Cline hook file for event (one of
// ClineEvents): a shell script that runs cmd with the payload on stdin.
// cmd is a shell command line (the hook command of system3 hooks print).
func ClineScript(cmd, event string) ([]byte, error) {
	if strings.TrimSpace(cmd) == "" {
		return nil, errors.New("the hook command is empty; pass the command that runs `system3 hook`")
	}
	if strings.ContainsAny(cmd, "\n\r") {
		return nil, errors.New("the hook command is more than one line; pass one command line")
	}
	if !slices.Contains(ClineEvents, event) {
		return nil, fmt.Errorf("%q is not a Cline hook system3 installs (%s)", event, strings.Join(ClineEvents, ", "))
	}
	return fmt.Appendf(nil, "#!/bin/sh\n%s\n# Cline runs this file for its %s hook, with the event on stdin.\nexec %s\n", clineMark, event, cmd), nil
}

// ClineFile is the name of system3's hook file for event.
func ClineFile(event string) string { return event + clineScriptExt }

// PlanCline computes what InstallCline would do to the hooks directory
// dir without touching it: Result.Path is dir, Added the events whose
// file is new or changes. It refuses, changing nothing, when a file of
// system3's name there is not system3's.
func PlanCline(dir, cmd string) (Result, map[string][]byte, error) {
	res := Result{Path: dir}
	write := map[string][]byte{}
	var diff strings.Builder
	for _, ev := range ClineEvents {
		want, err := ClineScript(cmd, ev)
		if err != nil {
			return res, nil, err
		}
		path := filepath.Join(dir, ClineFile(ev))
		old, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return res, nil, fmt.Errorf("read %s: %w; nothing was changed", path, err)
		case !bytes.Contains(old, []byte(clineMark)):
			return res, nil, fmt.Errorf("%s is not system3's hook (it lacks the line %q): system3 does not replace it; move it away, or give it another name Cline runs (%s without the extension, or %s.py, ...): Cline runs every file of an event; nothing was changed", path, clineMark, ev, ev)
		case bytes.Equal(old, want):
			continue
		}
		write[path] = want
		res.Added = append(res.Added, ev)
		diff.WriteString(Diff(path, string(old), string(want)))
	}
	res.Changed, res.Diff = len(write) > 0, diff.String()
	return res, write, nil
}

// InstallCline writes system3's hook files for ClineEvents into the hooks
// directory dir (created if missing), each running cmd. A file of
// system3's name that system3 did not write is refused, and nothing is
// changed; system3's own earlier file is replaced, copied to a backup
// first (Result.Backup names the last). Files of other names, the user's
// own hooks among them, are left alone: Cline runs them too.
func InstallCline(dir, cmd string) (Result, error) {
	res, write, err := PlanCline(dir, cmd)
	if err != nil || !res.Changed {
		return res, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{Path: dir}, fmt.Errorf("create %s: %w", dir, err)
	}
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	for _, ev := range res.Added {
		path := filepath.Join(dir, ClineFile(ev))
		if _, err := os.Stat(path); err == nil {
			// A backup's name ends in no extension Cline runs.
			backup := fmt.Sprintf("%s.system3-backup-%s", path, stamp)
			if err := copyFile(path, backup, 0o600); err != nil {
				return Result{Path: dir}, fmt.Errorf("back up %s: %w", path, err)
			}
			res.Backup = backup
		}
		if err := writeAtomic(path, write[path], 0o755); err != nil {
			return Result{Path: dir, Backup: res.Backup}, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return res, nil
}

// ClinePrint is system3's Cline hook files running cmd, each under a line
// that names it, as system3 hooks print --agent cline shows them.
func ClinePrint(cmd string) ([]byte, error) {
	var b bytes.Buffer
	for i, ev := range ClineEvents {
		s, err := ClineScript(cmd, ev)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "==> %s <==\n", ClineFile(ev))
		b.Write(s)
	}
	return b.Bytes(), nil
}
