package ipc

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A command an agent CLI ran, through its shell, is known as that
// agent's: the peer's ancestors are walked to the nearest agent process.
func TestAgentAncestor(t *testing.T) {
	dir := t.TempDir()
	// A program named claude (its process name is its file's name) that
	// runs a child through a shell, as Claude Code's Bash tool does.
	script := filepath.Join(dir, "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsh -c 'sleep 30 & echo $!; wait'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(child); err == nil {
			p.Kill()
		}
	})
	name, pid := agentAncestor(child)
	if name != "claude" || pid != cmd.Process.Pid {
		t.Fatalf("agentAncestor(%d) = %q, %d; want claude, %d", child, name, pid, cmd.Process.Pid)
	}
	p := Peer{PID: child, Exe: "sleeper", Agent: name, AgentPID: pid}
	if o := p.Origin("cli"); o != `socket:pid=`+strconv.Itoa(child)+`,agent=claude:`+strconv.Itoa(cmd.Process.Pid)+`,exe=sleeper claims "cli"` {
		t.Fatalf("origin %q", o)
	}
}
