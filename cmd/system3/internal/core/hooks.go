package core

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/system3-dev/system3/monitor/hooks"
)

// HookCommand is the shell command Claude Code's hooks run: command when
// set, else this executable's absolute path with "hook", and --state-dir
// when the state dir was chosen by flag or environment (the agent may not
// share this environment).
func (a *App) HookCommand(command string) (string, error) {
	if command != "" {
		return command, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot tell where this system3 is (%v); pass --command", err)
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	parts := []string{ShellQuote(exe)}
	if a.stateDirChosen {
		parts = append(parts, "--state-dir", ShellQuote(a.Settings.StateDir))
	}
	parts = append(parts, "hook")
	return strings.Join(parts, " "), nil
}

// HookSettings is the settings JSON for `claude --settings` that sends
// every hook event to this system3 (command as for HookCommand). Spawn
// passes it to the Claude Code sessions it starts.
func (a *App) HookSettings(command string) ([]byte, error) {
	cmdline, err := a.HookCommand(command)
	if err != nil {
		return nil, err
	}
	return hooks.Settings(cmdline)
}

// ShellQuote quotes s for a POSIX shell when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
