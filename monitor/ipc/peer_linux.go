package ipc

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer refuses a connection from another user. The socket is 0600 in
// a 0700 directory, so only this user (or root) can connect; the kernel's
// peer credentials make that a check rather than an assumption, e.g. when
// the state dir's mode was loosened by hand.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil // tests serve on pipes
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("read peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("read peer credentials: %w", err)
	}
	if credErr != nil {
		return fmt.Errorf("read peer credentials: %w", credErr)
	}
	if me := os.Getuid(); int(cred.Uid) != me && cred.Uid != 0 {
		return fmt.Errorf("refused a connection from uid %d (pid %d): only uid %d may use this socket", cred.Uid, cred.Pid, me)
	}
	return nil
}
