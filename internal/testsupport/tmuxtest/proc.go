package tmuxtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// descendants returns pid and every process below it, read from /proc;
// nothing for a pid that names no single process. tmux 3.8 lists a dead
// pane's pid as empty, which reads as 0, and below 0 is every process on
// the machine.
func descendants(pid int) []int {
	if pid <= 1 {
		return nil
	}
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces; fields follow the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// reap waits up to timeout for the processes to end (tmux sends their
// panes SIGHUP when the server goes) and kills those still alive.
func reap(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		if pid <= 1 || pid == os.Getpid() {
			continue // kill(2) would take a process group, or init, or us
		}
		if !testkit.Poll(time.Until(deadline), func() bool { return !alive(pid) }) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// usingSocket returns the processes whose command line names the socket
// path: the test's own server and clients (the path is unique to a test).
func usingSocket(path string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(b, []byte{0}) {
			if string(arg) == path {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
