package ipc

import (
	"fmt"
	"net"
	"os"
	"strconv"

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
	st, err := procfs.ReadStat(pid)
	for range maxAncestors {
		if err != nil || st.PPID <= 1 {
			return "", 0
		}
		pid = st.PPID
		if st, err = procfs.ReadStat(pid); err == nil {
			if spec, found := agents.ByProgram(st.Comm); found && spec.IsAgent() {
				return spec.Name, pid
			}
		}
	}
	return "", 0
}
