package tmux

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ioReader reads how many read system calls the tmux server process has
// made (syscr in /proc/PID/io); read's ok is false where that cannot be
// read (not Linux, another user's process, a process that is gone).
//
// tmux reads every pane's output with read(2), so a count that has not
// moved since the last look means no pane wrote anything: no window
// activity, cursor or history size can have changed. Commands from
// clients (ours included) arrive with recvmsg(2), which it does not count,
// so the count stays still while system3 lists panes; only formats that
// make tmux read /proc (pane_current_command) move it.
//
// It keeps /proc/PID/io open between reads: each tick costs one pread(2).
type ioReader struct {
	pid int
	f   *os.File
	buf [1024]byte
}

func (r *ioReader) read(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	if r.f == nil || r.pid != pid {
		r.close()
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/io")
		if err != nil {
			return 0, false
		}
		r.f, r.pid = f, pid
	}
	n, err := r.f.ReadAt(r.buf[:], 0)
	if n == 0 && err != nil {
		// The process is gone (ESRCH), or the file cannot be read.
		r.close()
		return 0, false
	}
	for line := range bytes.Lines(r.buf[:n]) {
		if v, found := bytes.CutPrefix(line, []byte("syscr:")); found {
			c, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64)
			return c, err == nil
		}
	}
	return 0, false
}

func (r *ioReader) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// isTmuxServer reports whether pid is a tmux server process: tmux names
// its server process "tmux: server". A pid from another pid namespace (a
// server outside this container) may name another process here.
func isTmuxServer(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(b)) == "tmux: server"
}
