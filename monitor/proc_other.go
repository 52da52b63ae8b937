//go:build !linux

package monitor

import (
	"errors"
	"time"
)

// Outside Linux there is no /proc to read: agents are recognised by the
// pane's command and their screens, and transcripts are not followed.

// ProcessTree returns nil outside Linux.
func ProcessTree(pid int) []string { return nil }

// ProcessCmdlines returns nil outside Linux.
func ProcessCmdlines(pid int) []string { return nil }

func findProcess(pid int, name string) int { return 0 }

func processEnv(pid int) map[string]string { return nil }

func processArgs(pid int) []string { return nil }

// descendsFrom cannot tell outside Linux: a hook event then needs its
// session's token.
func descendsFrom(pid, ancestor int) (bool, error) {
	return false, errors.New("process ancestry is not known on this system")
}

// processStart is not known outside Linux.
func processStart(pid int) (time.Time, error) {
	return time.Time{}, errors.New("process start times are not known on this system")
}

// PaneForeground cannot tell outside Linux: the screen decides.
func PaneForeground(pid int) (comm, job string, ok bool) { return "", "", false }

// AgentVersion is not known from processes outside Linux.
func AgentVersion(pid int, agent string, isAgent func(comm string) bool) string { return "" }
