//go:build unix

package wake

import (
	"os"
	"syscall"
)

var errWouldBlock error = syscall.EWOULDBLOCK

func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// canCreateIn reports whether this process may create files in dir.
func canCreateIn(dir string) error { return syscall.Access(dir, 0x2|0x1) } // W_OK|X_OK
