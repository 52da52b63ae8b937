//go:build !linux

package fakeagent

import "errors"

var errNoTerminal = errors.New("terminal control is only implemented on Linux")

// MakeRaw is only implemented on Linux; elsewhere the agent runs with the
// terminal as it is.
func MakeRaw(fd int) (restore func() error, err error) { return nil, errNoTerminal }

// TermSize is only implemented on Linux.
func TermSize(fd int) (width, height int, err error) { return 0, 0, errNoTerminal }
