package tmux

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// serverReads returns how many read system calls the tmux server process
// pid has made (syscr in /proc/PID/io); ok is false where that cannot be
// read (not Linux, another user's or namespace's process, a process that
// is not a tmux server).
//
// tmux reads every pane's output with read(2), so a count that has not
// moved since the last look means no pane wrote anything: no window
// activity, cursor or history size can have changed. Commands from
// clients (ours included) arrive with recvmsg(2), which it does not count,
// so the count stays still while system3 lists panes; only formats that
// make tmux read /proc (pane_current_command) move it.
func serverReads(pid int) (reads uint64, ok bool) {
	if pid <= 0 {
		return 0, false
	}
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/io")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, found := bytes.CutPrefix(line, []byte("syscr:")); found {
			n, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// isTmuxServer reports whether pid is a tmux server process: tmux names
// its server process "tmux: server". A pid from another pid namespace (a
// server outside this container) may name another process here.
func isTmuxServer(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(b)) == "tmux: server"
}
