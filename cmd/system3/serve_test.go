package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// serveDaemon serves a fake service on the state dir's socket, as a
// running dashboard would.
func serveDaemon(t *testing.T, state string) *fakeService {
	t.Helper()
	daemon := newFakeService(t)
	ln, err := ipc.Listen(filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.NewServer(ln, backend.New(daemon, backend.Parts{}), nil).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return daemon
}

func TestServeRefusals(t *testing.T) {
	hooked := useFake(t)
	busy := testkit.ShortDir(t)
	serveDaemon(t, busy)
	loose := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(loose, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"another system3 monitors the state dir", map[string]string{"SYSTEM3_STATE_DIR": busy}, []string{"serve"}, "already monitors state dir " + busy},
		{"beyond loopback without a token", nil, []string{"serve", "--listen", "0.0.0.0:0"}, "needs a bearer token: 0.0.0.0:0 is reachable from other machines; create a token with `system3 token`"},
		{"a token file others can read", nil, []string{"serve", "--token-file", loose}, "can be read by other users (mode 0644); run chmod 600"},
		{"a missing token file", nil, []string{"serve", "--token-file", loose + ".nope"}, "create one with `system3 token`"},
		{"a bad listen address", nil, []string{"serve", "--listen", "nowhere"}, "use host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := invoke(t, tt.env, tt.args...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errOut, tt.want)
			}
		})
	}
	// Monitors started for a refused listen were stopped again.
	if hooked.starts.Load() != hooked.stops.Load() {
		t.Errorf("monitors started %d, stopped %d", hooked.starts.Load(), hooked.stops.Load())
	}
}

// serve runs the monitors and the MCP server until interrupted, with the
// settings of config.yaml overridden by flags.
func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hooked := useFake(t)
	state := testkit.ShortDir(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: 127.0.0.1:1\n  read_only: true\n  allow_sessions: ['orch-*']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg}
	out := &lineWriter{lines: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0"}, strings.NewReader(""), out, io.Discard, func(k string) string { return vars[k] })
	}()
	var line string
	select {
	case line = <-out.lines:
	case <-time.After(10 * time.Second):
		t.Fatal("serve printed nothing")
	}
	_, rest, _ := strings.Cut(line, "MCP server on ")
	url, _, _ := strings.Cut(rest, " ")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(line, "(read-only)") {
		t.Fatalf("serve printed %q", line)
	}

	// The health endpoint and the read-only tool set.
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if health["ok"] != true || health["read_only"] != true {
		t.Fatalf("health = %v", health)
	}
	// The socket is served too (by the monitors; here the fake's hook).
	if hooked.starts.Load() != 1 {
		t.Fatalf("monitors started %d times", hooked.starts.Load())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d after interrupt", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if hooked.stops.Load() != 1 {
		t.Errorf("monitors stopped %d times", hooked.stops.Load())
	}
}

func TestToken(t *testing.T) {
	state := testkit.ShortDir(t)
	env := map[string]string{"SYSTEM3_STATE_DIR": state}
	path := filepath.Join(state, "mcp-token")
	code, out, errOut := invoke(t, env, "token")
	if code != 0 || !strings.Contains(out, "Created bearer token") || !strings.Contains(out, "--token-file "+path) || !strings.Contains(out, "Authorization: Bearer $(cat "+path+")") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	first, _ := os.ReadFile(path)
	if tok := strings.TrimSpace(string(first)); len(tok) != 64 {
		t.Fatalf("token %q is not 32 random bytes in hex", tok)
	}
	if _, err := readToken(path); err != nil {
		t.Fatal(err)
	}

	code, out, _ = invoke(t, env, "token")
	again, _ := os.ReadFile(path)
	if code != 0 || !strings.Contains(out, "Kept the existing") || string(again) != string(first) {
		t.Fatalf("second token: exit %d, %q; token changed %v", code, out, string(again) != string(first))
	}
	code, out, _ = invoke(t, env, "token", "--rotate")
	rotated, _ := os.ReadFile(path)
	if code != 0 || !strings.Contains(out, "Replaced") || string(rotated) == string(first) {
		t.Fatalf("rotate: exit %d, %q", code, out)
	}

	// The printed client command uses the address serve will listen on.
	if !strings.Contains(out, "system3 http://127.0.0.1:8889/mcp ") {
		t.Errorf("default URL missing:\n%s", out)
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  listen: 127.0.0.1:7777\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", cfg, "token"}, "http://127.0.0.1:7777/mcp"},
		{[]string{"--config", cfg, "token", "--listen", "0.0.0.0:9000"}, "http://127.0.0.1:9000/mcp"},
		{[]string{"token", "--listen", "[::]:9001"}, "http://[::1]:9001/mcp"},
		{[]string{"token", "--listen", "myhost.lan:9002"}, "http://myhost.lan:9002/mcp"},
	} {
		code, out, errOut := invoke(t, env, tt.args...)
		if code != 0 || !strings.Contains(out, "--transport http system3 "+tt.want+" ") {
			t.Errorf("%v: exit %d, want %s in\n%s%s", tt.args, code, tt.want, out, errOut)
		}
	}

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := invoke(t, env, "token"); code != 1 || !strings.Contains(errOut, "chmod 600") || !strings.Contains(errOut, "--rotate") {
		t.Fatalf("group-readable token: exit %d, %q", code, errOut)
	}
}
