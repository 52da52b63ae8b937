package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// A state dir this user cannot enter (mode 000) used to fail with the
// socket's "connect: permission denied"; every command that uses it must
// say what to do: pass another --state-dir. Root enters any dir, so as root
// the commands run in a copy of this test binary as nobody (uid 65534).
func TestStateDirWithoutPermissionNamesTheFlag(t *testing.T) {
	base, err := os.MkdirTemp("", "s3p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "state"), 0o700); os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o000); err != nil {
		t.Fatal(err)
	}
	var bin string
	if os.Getuid() == 0 {
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(base, "system3.test")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"serve", "--listen", "off"}, {"status"}, {"wait", "--timeout", "1s"}, {"ack", "--all"}, {"watch"},
	} {
		var code int
		var errOut string
		full := append([]string{"--state-dir", state, "--tmux-socket", "system3-none-" + t.Name()}, args...)
		if bin == "" {
			code, _, errOut = invoke(t, map[string]string{"HOME": base}, full...)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, bin, "-test.run=^TestStateDirHelper$")
			// SYSTEM3_TMUX may name a tmux unpacked under root's home,
			// which nobody cannot run; the system tmux serves this test,
			// which is about the state dir.
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "SYSTEM3_TMUX=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(env, "HOME="+base, "SYSTEM3_HELPER_ARGS="+strings.Join(full, "\x1f"))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			err := cmd.Run()
			cancel()
			code, errOut = cmd.ProcessState.ExitCode(), stderr.String()
			if err != nil && code < 0 {
				t.Fatalf("%q: %v", args, err)
			}
		}
		// The error is the last line; a warning about the log, which also
		// names --state-dir, may come before it.
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		last := lines[len(lines)-1]
		if code == 0 || strings.Contains(last, "warning:") || !strings.Contains(last, "--state-dir") || strings.Contains(errOut, "connect: permission denied") {
			t.Errorf("%q: exit %d, stderr %q; want a failure naming --state-dir", args, code, errOut)
		}
	}
}

// TestStateDirHelper runs system3 with SYSTEM3_HELPER_ARGS in the child of
// TestStateDirWithoutPermissionNamesTheFlag, and exits with its status.
func TestStateDirHelper(t *testing.T) {
	args := os.Getenv("SYSTEM3_HELPER_ARGS")
	if args == "" {
		return // only a helper
	}
	os.Exit(run(context.Background(), strings.Split(args, "\x1f"), strings.NewReader(""), os.Stdout, os.Stderr, os.Getenv))
}

// serve used to print its socket path even when it could not make the
// socket.
func TestServeWithoutSocketSaysSo(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	sock := filepath.Join(state, "system3.sock")
	if err := os.WriteFile(sock, []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state}
	out := &lineWriter{lines: make(chan string, 16)}
	errOut := &lineWriter{lines: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append(socketArgs(srv), "serve", "--listen", "off"), strings.NewReader(""), out, errOut, func(k string) string { return vars[k] })
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d", code)
		}
	}()
	select {
	case line := <-out.lines:
		if strings.Contains(line, sock) || !strings.Contains(line, "no socket") {
			t.Fatalf("serve printed %q; want no socket path, since none could be made", line)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve printed nothing")
	}
	select {
	case line := <-errOut.lines:
		if !strings.Contains(line, "not a socket") {
			t.Fatalf("stderr %q; want why there is no socket", line)
		}
	default:
		t.Fatal("serve did not say why there is no socket")
	}
}

// A state dir other users can read or write, or a signing key they can
// read, is refused in one sentence that says what to run: whoever reads the
// key signs working action links, and whoever writes the dir rewrites the
// journal.
func TestUnsafeStateDirRefused(t *testing.T) {
	state := testkit.ShortDir(t)
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "--tmux-socket", "system3-none-"+t.Name(), "status")
	if code == 0 || !strings.Contains(errOut, "chmod 700 "+state) || !strings.Contains(errOut, "other users") {
		t.Fatalf("status in a 0777 state dir: exit %d, %s", code, errOut)
	}
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(state, "notify-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("ab", 32)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("notify:\n  ntfy:\n    url: http://127.0.0.1:9/t\n    actions_url: http://127.0.0.1:8889\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg}, "--tmux-socket", "system3-none-"+t.Name(), "notify", "test")
	if code == 0 || !strings.Contains(errOut, "chmod 600 "+secret) {
		t.Fatalf("a 0644 notify-secret: exit %d, %s", code, errOut)
	}
}
