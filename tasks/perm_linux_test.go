//go:build linux

package tasks

import (
	"runtime"
	"syscall"
	"unsafe"
)

// withoutDACOverride runs f on an OS thread that has lost the capabilities
// that let root read any file (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so a
// chmod 000 file gives EACCES even when the tests run as root. Linux keeps
// capabilities per thread: the thread is locked and, because it is never
// unlocked, thrown away when f returns. It reports false if the capabilities
// cannot be changed.
func withoutDACOverride(f func()) bool {
	type header struct {
		version uint32
		pid     int32
	}
	type data struct{ effective, permitted, inheritable uint32 }
	const (
		version3         = 0x20080522
		capDACOverride   = 1
		capDACReadSearch = 2
	)
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		hdr := header{version: version3}
		var d [2]data
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
			ok <- false
			return
		}
		d[0].effective &^= 1<<capDACOverride | 1<<capDACReadSearch
		if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
			ok <- false
			return
		}
		f()
		ok <- true
	}()
	return <-ok
}
