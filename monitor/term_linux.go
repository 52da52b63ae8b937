//go:build linux

package monitor

import (
	"strings"

	"golang.org/x/sys/unix"
)

// TerminalRaw reports whether the terminal tty (a pane's, /dev/pts/N)
// takes keys one at a time, its canonical mode off, as a full-screen
// program or a menu waiting for a key sets it; ok is false when that
// cannot be read. The terminal is opened only to read its settings: not
// as a controlling terminal, without blocking, and nothing is read from it
// or written to it.
func TerminalRaw(tty string) (raw, ok bool) {
	if !strings.HasPrefix(tty, "/dev/") {
		return false, false
	}
	fd, err := unix.Open(tty, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, false
	}
	return t.Lflag&unix.ICANON == 0, true
}
