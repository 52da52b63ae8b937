package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// HookTimeout is the timeout, in seconds, Settings gives each hook. `system3
// hook` returns within a second; this only bounds a wedged machine.
const HookTimeout = 5

// group is one matcher group of a settings file's hooks.
type group struct {
	Matcher string    `json:"matcher"`
	Hooks   []command `json:"hooks"`
}

type command struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

func ourGroup(cmd string) group {
	return group{Matcher: "", Hooks: []command{{Type: "command", Command: cmd, Timeout: HookTimeout}}}
}

// Settings returns Claude Code settings JSON that runs command for every
// event in Events: {"hooks": {Event: [{"matcher": "", "hooks": [{"type":
// "command", "command": command, "timeout": HookTimeout}]}]}}. It is what
// `claude --settings` takes and what Install merges into a settings file.
func Settings(cmd string) ([]byte, error) {
	if strings.TrimSpace(cmd) == "" {
		return nil, errors.New("the hook command is empty; pass the command that runs `system3 hook`")
	}
	hooks := make(map[string][]group, len(Events))
	for _, e := range Events {
		hooks[e] = []group{ourGroup(cmd)}
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
