//go:build !linux

package monitor

// ProcessTree is not implemented outside Linux: agents are recognised by
// the pane's command and their screens.
func ProcessTree(pid int) []string { return nil }
