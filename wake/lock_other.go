//go:build !unix

package wake

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// flock is unix-only; system3 needs tmux, which needs unix, so elsewhere the
// lock only has to compile.
func flock(*os.File) error { return errors.ErrUnsupported }

// canCreateIn cannot tell ahead on this system; creating will say.
func canCreateIn(string) error { return nil }
