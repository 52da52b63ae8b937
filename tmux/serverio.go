package tmux

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/system3-dev/system3/internal/procfs"
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
// It keeps /proc/PID/io open between reads, and each tick costs one
// pread(2): the kernel gives the whole file in one read, so there is no
// second read to find its end (os.File.ReadAt's), and the file is never
// offered to the runtime's poller.
type ioReader struct {
	pid    int
	fd     int
	opened bool
	buf    [1024]byte
}

func (r *ioReader) read(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	if !r.open(pid) {
		return 0, false
	}
	n, err := unix.Pread(r.fd, r.buf[:], 0)
	if err == unix.EINTR {
		n, err = unix.Pread(r.fd, r.buf[:], 0)
	}
	if n <= 0 || err != nil {
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

// open opens pid's io file unless it is open already.
func (r *ioReader) open(pid int) bool {
	if r.opened && r.pid == pid {
		return true
	}
	r.close()
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/io", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	r.fd, r.pid, r.opened = fd, pid, true
	return true
}

func (r *ioReader) close() {
	if r.opened {
		unix.Close(r.fd)
		r.opened = false
	}
}

// isTmuxServer reports whether pid is a tmux server process: tmux names
// its server process "tmux: server". A pid from another pid namespace (a
// server outside this container) may name another process here.
func isTmuxServer(pid int) bool {
	b, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(b)) == "tmux: server"
}
