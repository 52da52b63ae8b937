//go:build unix

package ipc

import "syscall"

// maxPathLen is the longest socket path the kernel accepts: sun_path less
// its terminating NUL (107 bytes on Linux, 103 on macOS and the BSDs).
const maxPathLen = len(syscall.RawSockaddrUnix{}.Path) - 1
