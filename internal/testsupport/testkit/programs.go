package testkit

import (
	"fmt"
	"os/exec"
	"testing"
)

// program is what installs one program the tests run: a Debian package,
// which README.md's prerequisites install in their one apt-get line, or
// else a toolchain those prerequisites name (Debian's Go and Node.js are
// older than the suite needs).
type program struct {
	pkg       string
	toolchain string
}

// programs are the programs outside this module that the tests run, by
// the name they run them by: a name looked up on PATH, or an absolute
// path where a test runs that file. README.md's prerequisites install
// every package here and .ci/run installs exactly those, so a fresh
// machine that follows README.md runs the whole suite; programs_test.go
// checks that README.md lists each package and that every program a test
// names is here.
var programs = map[string]program{
	"tmux": {pkg: "tmux"},
	"git":  {pkg: "git"}, // repositories for the worktree and Codex tests
	// The web page's tests drive it headless.
	"chromium": {pkg: "chromium"},
	// A private session bus for the notification tests (Debian 12 puts the
	// binary in dbus-daemon, which dbus pulls in).
	"dbus-daemon": {pkg: "dbus"},
	// A private OpenSSH server for the remote-host tests, the client
	// system3 reaches hosts with, and throwaway keys.
	"/usr/sbin/sshd": {pkg: "openssh-server"},
	"ssh":            {pkg: "openssh-client"},
	"ssh-keygen":     {pkg: "openssh-client"},
	// A journal mounted read-only for root, in a mount namespace of its own.
	"unshare": {pkg: "util-linux"},
	"mount":   {pkg: "mount"},
	// Shells in panes and scripts, a quiet pane's sleep, and cat: Debian always
	// has these, and README.md names their packages all the same.
	"sh":        {pkg: "dash"},
	"/bin/sh":   {pkg: "dash"},
	"bash":      {pkg: "bash"},
	"/bin/bash": {pkg: "bash"},
	"sleep":     {pkg: "coreutils"},
	"cat":       {pkg: "coreutils"}, // a program that reads its terminal, as a REPL does
	// The toolchains: the suite builds system3 and runs the Node.js CLIs.
	"go":   {toolchain: "Go 1.26 or newer"},
	"node": {toolchain: "Node.js 20 or newer"},
}

// LookPath is the path of a program the test runs (a name on PATH, or an
// absolute path), from testkit's programs. A program that is not
// installed fails the test, saying what installs it: the suite needs every
// one, so a missing program is a broken setup, never a reason to pass
// without testing. A name that is not among the programs fails the test
// too: it is a mistake in the test, which must add the program there and
// to README.md's prerequisites.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, ok := programs[name]
	if !ok {
		t.Fatalf("testkit.LookPath(%q): %s is not among the programs the tests run: add it to testkit's programs and README's prerequisites", name, name)
		return ""
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: %s", name, p.install())
		return ""
	}
	return path
}

// install is one clause saying what installs the program.
func (p program) install() string {
	if p.pkg != "" {
		return fmt.Sprintf("README.md's prerequisites install it (apt-get install %s)", p.pkg)
	}
	return fmt.Sprintf("README.md's prerequisites ask for %s", p.toolchain)
}
