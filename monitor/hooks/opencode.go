package hooks

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// opencode (1.18) has no shell hooks; it loads plugins, JavaScript modules
// in a plugins directory of its config, and calls their event hook with
// every event of its bus. system3's plugin (opencode_plugin.js) runs the
// hook command for the events below, with the event on stdin:
// {"type": ..., "properties": {...}, "directory": ..., "at": ms}.

//go:embed opencode_plugin.js
var opencodePlugin string

// OpencodePluginFile is the name of system3's plugin in opencode's plugins
// directory.
const OpencodePluginFile = "system3.js"

// opencodeMark is the first line of system3's plugin: a file of the same
// name without it is someone else's, which Install does not replace.
const opencodeMark = "// system3: tells system3 what this opencode is doing"

// OpencodeEvents are the opencode events system3's plugin reports: a turn
// started (session.status busy), a turn ended (session.idle) or failed
// (session.error), a permission asked (permission.asked).
var OpencodeEvents = []string{"session.status", "session.idle", "session.error", "permission.asked"}

// OpencodePlugin is system3's opencode plugin running cmd.
func OpencodePlugin(cmd string) ([]byte, error) {
	if strings.TrimSpace(cmd) == "" {
		return nil, errors.New("the hook command is empty; pass the command that runs `system3 hook`")
	}
	lit, err := marshal(cmd)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(opencodePlugin, `"__SYSTEM3_HOOK_COMMAND__"`, string(lit), 1)), nil
}

// opencodePayload is what system3's plugin sends: one opencode bus event,
// as far as system3 reads it, and the directory opencode runs in.
type opencodePayload struct {
	Type      string `json:"type"`
	Directory string `json:"directory"`
	// At is when the plugin saw the event, in Unix milliseconds: it runs
	// the hook command for one event at a time, so one may wait behind
	// another.
	At         int64 `json:"at"`
	Properties struct {
		SessionID string `json:"sessionID"`
		Status    struct {
			Type string `json:"type"`
		} `json:"status"`
		Error struct {
			Name string `json:"name"`
			Data struct {
				Message    string `json:"message"`
				StatusCode int    `json:"statusCode"`
			} `json:"data"`
		} `json:"error"`
		Permission string          `json:"permission"`
		Patterns   []string        `json:"patterns"`
		Metadata   json.RawMessage `json:"metadata"`
		Tool       struct {
			CallID string `json:"callID"`
		} `json:"tool"`
	} `json:"properties"`
}

// parseOpencode reads an event of system3's opencode plugin, under the
// name of Claude Code's event that says the same: a turn started is a
// UserPromptSubmit, a turn ended a Stop, a turn failed a StopFailure (its
// error's kind in the words of opencode's rules: auth, rate_limited,
// api_error), a permission asked a permission_prompt Notification, since
// opencode draws its dialog as it asks (the approval policy does not
// decide it: opencode 1.18 runs no plugin hook that could answer).
func parseOpencode(data []byte) (api.HookEvent, error) {
	var p opencodePayload
	if err := json.Unmarshal(data, &p); err != nil {
		return api.HookEvent{}, fmt.Errorf("opencode event is not valid JSON: %v", err)
	}
	pr := p.Properties
	ev := api.HookEvent{SessionID: clip(pr.SessionID, 256), Cwd: clip(p.Directory, maxField)}
	if p.At > 0 {
		ev.Received = time.UnixMilli(p.At).UTC()
	}
	switch p.Type {
	case "session.status":
		if pr.Status.Type != "busy" {
			return api.HookEvent{}, fmt.Errorf("opencode's session.status %q is not one system3 takes", pr.Status.Type)
		}
		ev.Name = api.UserPromptSubmit
	case "session.idle":
		ev.Name = api.Stop
	case "session.error":
		e := pr.Error
		if e.Name == "MessageAbortedError" {
			return api.HookEvent{}, errors.New("opencode's turn was interrupted, which its screen shows")
		}
		ev.Name, ev.Error = api.StopFailure, opencodeErrorKind(e.Name, e.Data.StatusCode)
		detail := e.Name
		if e.Data.StatusCode != 0 {
			detail += fmt.Sprintf(" %d", e.Data.StatusCode)
		}
		if m := oneLine(e.Data.Message); m != "" {
			detail += ": " + m
		}
		ev.ErrorDetails = clip(detail, maxSummary)
	case "permission.asked":
		input := summarizeInput(pr.Metadata)
		if input == "" || input == "{}" {
			input = clip(oneLine(strings.Join(pr.Patterns, ", ")), maxSummary)
		}
		ev.Name, ev.NotificationType = api.Notification, "permission_prompt"
		ev.ToolName, ev.ToolInput, ev.ToolUseID = clip(pr.Permission, 128), input, clip(pr.Tool.CallID, 128)
		ev.Message = clip(strings.TrimSpace("opencode asks to run "+pr.Permission+": "+input), maxSummary)
	default:
		return api.HookEvent{}, fmt.Errorf("opencode event %q is not one system3 takes", p.Type)
	}
	return ev, nil
}

// opencodeErrorKind is the kind of error opencode's rules give the screen
// of a turn that failed with error name and HTTP status.
func opencodeErrorKind(name string, status int) string {
	switch {
	case name == "ProviderAuthError" || status == 401 || status == 403:
		return "auth"
	case status == 429:
		return "rate_limited"
	}
	return "api_error"
}

// PlanFile computes what InstallFile would do to the file at path: write
// content there. A file of that name that system3 did not write (not
// empty, and its first line is not system3's plugin's) is refused.
func PlanFile(path string, content []byte) (Result, error) {
	old, err := readSettings(path)
	if err != nil {
		return Result{Path: path}, err
	}
	res := Result{Path: path}
	if bytes.Equal(old, content) {
		return res, nil
	}
	if len(bytes.TrimSpace(old)) > 0 && !bytes.HasPrefix(old, []byte(opencodeMark)) {
		return res, fmt.Errorf("%s is there and system3 did not write it; nothing was changed: move it away, or add system3's plugin under another name from system3 hooks print --agent opencode", path)
	}
	res.Changed, res.Added = true, OpencodeEvents
	res.Diff = Diff(path, string(old), string(content))
	return res, nil
}

// InstallFile writes content to the file at path, as PlanFile plans: the
// directory is made if missing, and a previous version is copied to a
// backup first.
func InstallFile(path string, content []byte) (Result, error) {
	res, err := PlanFile(path, content)
	if err != nil || !res.Changed {
		return res, err
	}
	if fi, err := os.Stat(path); err == nil {
		backup := fmt.Sprintf("%s.system3-backup-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := copyFile(path, backup, fi.Mode().Perm()); err != nil {
			return Result{Path: path}, fmt.Errorf("back up %s: %w; nothing was changed", path, err)
		}
		res.Backup = backup
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Result{Path: path}, fmt.Errorf("create the directory of %s: %w", path, err)
	}
	if err := writeAtomic(path, content, fs.FileMode(0o644)); err != nil {
		return Result{Path: path, Backup: res.Backup}, fmt.Errorf("write %s: %w; the file was not changed", path, err)
	}
	return res, nil
}
