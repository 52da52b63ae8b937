package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/tmux"
)

// OldTmuxEnv names a real tmux older than 3.2 for TestRefusesOldTmux;
// .ci/run installs Debian 11's 3.1c and sets it.
const OldTmuxEnv = "SYSTEM3_TMUX_OLD"

// TestRefusesOldTmux runs system3 on a real tmux older than 3.2: it must
// refuse in one sentence that says what to do, start no server, and exit
// non-zero, on the commands that read tmux and on the one that starts
// the service.
func TestRefusesOldTmux(t *testing.T) {
	old := os.Getenv(OldTmuxEnv)
	if old == "" {
		t.Skipf("%s names no tmux older than 3.2 (.ci/run installs 3.1c and sets it)", OldTmuxEnv)
	}
	out, err := exec.Command(old, "-V").Output()
	if err != nil {
		t.Fatalf("%s -V: %v", old, err)
	}
	v := strings.TrimSpace(string(out))
	if major, minor, known, ok := tmux.ParseVersion(v); !ok || !known || major > 3 || major == 3 && minor >= 2 {
		t.Fatalf("%s=%s is %q, not a tmux older than 3.2", OldTmuxEnv, old, v)
	}
	t.Setenv(tmux.BinEnv, old)
	sock := filepath.Join(t.TempDir(), "sock")
	want := v + " is too old: system3 needs tmux 3.2 or later; install a newer tmux, or set " + tmux.BinEnv + " to one"
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"wait", "--timeout", "1s"}} {
		code, stdout, stderr := invoke(t, nil, append([]string{"--tmux-socket-path", sock}, args...)...)
		msg := strings.TrimSpace(stderr)
		if code == 0 || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("system3 %s on %s: exit %d, stdout %q, stderr %q; want a failure saying %q", strings.Join(args, " "), v, code, stdout, stderr, want)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Fatalf("system3 %s started a tmux %s server", strings.Join(args, " "), v)
		}
	}
}
