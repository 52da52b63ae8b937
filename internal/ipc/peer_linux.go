package ipc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/system3-dev/system3/internal/procfs"
	"github.com/system3-dev/system3/monitor/agents"
)

// checkPeer refuses a connection from another user, and returns the peer
// process. The socket is 0600 in a 0700 directory, so only this user (or
// root) can connect; the kernel's peer credentials make that a check rather
// than an assumption, e.g. when the state dir's mode was loosened by hand.
func checkPeer(conn net.Conn) (Peer, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Peer{}, nil // tests serve on pipes
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", err)
	}
	if credErr != nil {
		return Peer{}, fmt.Errorf("read peer credentials: %w", credErr)
	}
	if me := os.Getuid(); int(cred.Uid) != me && cred.Uid != 0 {
		return Peer{}, fmt.Errorf("refused a connection from uid %d (pid %d): only uid %d may use this socket", cred.Uid, cred.Pid, me)
	}
	p := Peer{PID: int(cred.Pid), UID: int(cred.Uid)}
	if p.PID > 0 {
		// The executable may be gone or unreadable (another user's
		// process, root's): the pid is what counts.
		p.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/exe")
		p.Agent, p.AgentPID = agentAncestor(p.PID)
	}
	return p, nil
}

// maxAncestors bounds the walk up a peer's parents.
const maxAncestors = 12

// agentAncestor is the nearest ancestor of pid whose process is an agent
// CLI system3 knows by its program ("claude", "codex"...), and its pid:
// the agent that ran the command (through its shell). "" when none is.
// Each ancestor costs one read: its /proc/PID/stat has both its name and
// its parent.
func agentAncestor(pid int) (string, int) {
	_, ppid, ok := procStat(pid)
	for range maxAncestors {
		if !ok || ppid <= 1 {
			return "", 0
		}
		pid = ppid
		var comm string
		if comm, ppid, ok = procStat(pid); ok {
			if spec, found := agents.ByProgram(comm); found && spec.IsAgent() {
				return spec.Name, pid
			}
		}
	}
	return "", 0
}

// procStat reads a process's name (as /proc/PID/comm has it) and its
// parent from /proc/PID/stat; ok is false when it cannot. The name, in
// parentheses, may hold spaces and parentheses, so it ends at the last
// ')'.
func procStat(pid int) (comm string, ppid int, ok bool) {
	b, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return s[open+1 : end], ppid, err == nil
}
