//go:build !unix

package ipc

// maxPathLen matches Windows' AF_UNIX limit; system3 needs tmux, so
// elsewhere the package only has to compile.
const maxPathLen = 107
