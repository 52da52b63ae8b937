package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// The CLI run by an agent (a supervising Claude Code's `system3 ack`, an
// orchestrator's shell) is that agent's, whatever it claims: a read-only
// daemon refuses it, saying who it was, and lets the same command run by
// a person through.
func TestCLIRunByAnAgentIsBoundByThePolicy(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  read_only: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_CONFIG": cfg}
	startServeAt(t, env, freeAddr(t))

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A program named claude that runs the command through its shell, as
	// Claude Code's Bash tool does.
	claude := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(claude, []byte("#!/bin/sh\n\"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(argv ...string) (string, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{runMainEnv + "=1", "PATH=/usr/bin:/bin"}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(claude, exe, "ack", "--all")
	if err == nil || !strings.Contains(out, "read-only") || !strings.Contains(out, "run by claude (pid ") {
		t.Fatalf("ack --all run by an agent through a read-only daemon: %v\n%s", err, out)
	}
	if out, err := run(exe, "ack", "--all"); err != nil {
		t.Fatalf("the same run by a person: %v\n%s", err, out)
	}
}
