//go:build !linux

package monitor

// TerminalRaw is not known outside Linux: a program no agent package knows
// that runs from a shell is then the shell's job.
func TerminalRaw(tty string) (raw, ok bool) { return false, false }
