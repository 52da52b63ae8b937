package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/notifytest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake/notify"
)

// freeAddr is a loopback address nothing listens on (the port is released
// again, for a server that must know its address before it starts).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startServe runs `system3 serve --listen addr` in this process with env
// until the test ends, and waits until it serves.
func startServeAt(t *testing.T, env map[string]string, addr string) {
	t.Helper()
	out := &lineWriter{lines: make(chan string, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", addr}, strings.NewReader(""), out, io.Discard, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line := <-out.lines:
			if strings.Contains(line, "MCP server on") {
				return
			}
		case code := <-done:
			t.Fatalf("serve exited %d before serving", code)
		case <-deadline:
			t.Fatal("serve printed no address")
		}
	}
}

// ntfyRecorder is a local server speaking ntfy's JSON publishing API (on
// any path but /hook) and a Slack-style webhook (on /hook).
type ntfyRecorder struct {
	*httptest.Server
	mu    sync.Mutex
	ntfy  []notify.NtfyMessage
	hooks []notify.WebhookBody
	at    []time.Time
}

func newNtfyRecorder(t *testing.T) *ntfyRecorder {
	r := &ntfyRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "POST JSON", http.StatusBadRequest)
			return
		}
		dec := json.NewDecoder(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.URL.Path == "/hook" {
			var b notify.WebhookBody
			if err := dec.Decode(&b); err != nil || b.Text == "" {
				http.Error(w, "no text", http.StatusBadRequest)
				return
			}
			r.hooks = append(r.hooks, b)
			r.at = append(r.at, time.Now())
			io.WriteString(w, "ok")
			return
		}
		var m notify.NtfyMessage
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil || m.Topic == "" || m.Message == "" || len(m.Actions) > 3 {
			http.Error(w, `{"code":40001,"error":"invalid request"}`, http.StatusBadRequest)
			return
		}
		r.ntfy = append(r.ntfy, m)
		fmt.Fprintf(w, `{"id":"m%d","event":"message","topic":%q}`, len(r.ntfy), m.Topic)
	}))
	t.Cleanup(r.Close)
	return r
}

// nth waits up to a minute for the n-th ntfy message (1-based) and returns
// it; screen, when set, tells what the agent showed if it never came.
func (r *ntfyRecorder) nth(t *testing.T, n int, screen func() string) notify.NtfyMessage {
	t.Helper()
	msgs := testkit.WaitForValue(t, 60*time.Second, fmt.Sprintf("push %d (those so far)", n), func() ([]notify.NtfyMessage, bool) {
		msgs, _, _ := r.snapshot()
		return msgs, len(msgs) >= n
	}, func() string {
		shown := ""
		if screen != nil {
			shown = screen()
		}
		return "screen:\n" + shown
	})
	return msgs[n-1]
}

// tapAction posts to a push's action URL as the ntfy app does, and returns the
// status and what the page said.
func tapAction(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *ntfyRecorder) snapshot() ([]notify.NtfyMessage, []notify.WebhookBody, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ntfy), slices.Clone(r.hooks), slices.Clone(r.at)
}

// A real permission prompt of a fake agent is pushed once to ntfy, with its
// options as action buttons, and to the webhook with the whole wake;
// posting an action's request answers the prompt in the pane.
func TestPushPermissionPromptAndAnswerFromAction(t *testing.T) {
	srv := agentServer(t)
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	s := agentSession("permission")
	pane := startTestAgents(t, srv, tasksDir, s)[s.Name]

	rec := newNtfyRecorder(t)
	addr := freeAddr(t)
	base := "http://" + addr
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("notify:\n  ntfy:\n    url: %s/system3-test\n    token: tk_test\n    actions_url: %s\n  webhook:\n    url: %s/hook\n", rec.URL, base, rec.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	state := testkit.ShortDir(t)
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir,
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_CONFIG": cfg}
	startServeAt(t, env, addr)

	deadline := time.Now().Add(60 * time.Second)
	var msgs []notify.NtfyMessage
	var hooks []notify.WebhookBody
	var at []time.Time
	testkit.WaitForValue(t, time.Until(deadline), "a push by ntfy and by webhook (how many of each)", func() ([2]int, bool) {
		msgs, hooks, at = rec.snapshot()
		return [2]int{len(msgs), len(hooks)}, len(msgs) > 0 && len(hooks) > 0
	})
	m := msgs[0]
	if m.Topic != "system3-test" || m.Title != s.Name+" "+pane+": waiting for you" || m.Priority != 4 || !slices.Contains(m.Tags, "awaiting_input") ||
		!strings.HasPrefix(m.Message, "Do you want to proceed?\nAbout: ") || !strings.Contains(m.Message, "npm run migrate -- --env staging\n1. Yes\n") || m.Click != base+"/web/" {
		t.Fatalf("ntfy message = %+v", m)
	}
	if len(m.Actions) != 3 {
		t.Fatalf("actions = %+v, want the three options", m.Actions)
	}
	for i, a := range m.Actions {
		if a.Action != "http" || a.Method != http.MethodPost || !strings.HasPrefix(permissionOptions[i], strings.TrimSuffix(a.Label, "…")) || a.Label == "" || !strings.HasPrefix(a.URL, base+"/web/act?t=") {
			t.Errorf("action %d = %+v", i, a)
		}
	}
	h := hooks[0]
	if h.Wake == nil || h.Wake.Pane != pane || h.Wake.Reason != "awaiting_input" || !slices.Equal(h.Wake.Options, permissionOptions) ||
		!strings.Contains(h.Text, "Do you want to proceed?") {
		t.Fatalf("webhook body = %+v", h)
	}
	t.Logf("push latency from wake to the test server: %v", at[0].Sub(h.Wake.Time).Round(time.Millisecond))

	// A tampered link answers nothing.
	if code, body := tapAction(t, strings.Replace(m.Actions[0].URL, "t=", "t=x", 1)); code != http.StatusForbidden {
		t.Fatalf("tampered action: %d %s", code, body)
	}
	// Tapping "Yes" answers option 1: the agent runs the command.
	code, body := tapAction(t, m.Actions[0].URL)
	if code != http.StatusOK || !strings.Contains(body, "answered “Yes”") {
		t.Fatalf("action: %d %s", code, body)
	}
	awaitStatus(t, env, srv, 30*time.Second, map[string]func(statusPane) string{s.Name: func(p statusPane) string {
		if p.State == "awaiting_input" {
			return "still at the prompt"
		}
		return ""
	}})
	c := tmux.NewClient(srv)
	testkit.WaitForValue(t, time.Until(deadline.Add(30*time.Second)), "the approved command to run", func() (string, bool) {
		screen, _ := c.Capture(context.Background(), pane, tmux.CaptureOptions{})
		return screen, strings.Contains(screen, "Bash(npm run migrate -- --env staging)")
	})
	// The same button again, or another option of the same wake, does nothing.
	if code, body := tapAction(t, m.Actions[2].URL); code != http.StatusConflict {
		t.Fatalf("second tap: %d %s", code, body)
	}
	audit, _ := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if !strings.Contains(string(audit), `"web:action"`) {
		t.Errorf("the audit log lacks the action:\n%s", audit)
	}
	// Pushed once: the same wake was never sent again.
	msgs, hooks, _ = rec.snapshot()
	if len(msgs) != 1 || len(hooks) != 1 {
		t.Errorf("pushed %d times to ntfy, %d to the webhook; want once each", len(msgs), len(hooks))
	}
}

// `system3 notify test` sends the sample to each configured channel and
// says which failed.
func TestNotifyTestCommand(t *testing.T) {
	rec := newNtfyRecorder(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("notify:\n  desktop:\n    enabled: \"off\"\n  ntfy:\n    url: %s/topic\n  webhook:\n    url: %s/hook\n", rec.URL, rec.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_CONFIG": cfg}
	code, out, errOut := invoke(t, env, "notify", "test")
	if code != 0 || !strings.Contains(out, "ntfy     sent in") || !strings.Contains(out, "webhook  sent in") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	msgs, hooks, _ := rec.snapshot()
	if len(msgs) != 1 || msgs[0].Title != "system3-test %0: waiting for you" || len(hooks) != 1 || !hooks[0].Test {
		t.Fatalf("ntfy %+v, webhook %+v", msgs, hooks)
	}
	if code, _, errOut := invoke(t, env, "notify", "test", "desktop"); code != 1 || !strings.Contains(errOut, `no channel "desktop" is configured`) {
		t.Fatalf("desktop: exit %d, %q", code, errOut)
	}
	rec.Close()
	if code, out, errOut := invoke(t, env, "notify", "test", "ntfy"); code != 1 || !strings.Contains(out, "ntfy     failed:") || !strings.Contains(errOut, "1 of 1 channels failed") {
		t.Fatalf("server down: exit %d, %q, %q", code, out, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("notify:\n  ntfy:\n    url: https://ntfy.sh/\n"), 0o600)
	if code, _, errOut := invoke(t, map[string]string{"SYSTEM3_CONFIG": bad}, "notify", "test"); code != 1 || !strings.Contains(errOut, "is not a topic URL") {
		t.Fatalf("bad url: exit %d, %q", code, errOut)
	}
}

// `system3 demo --notify` pushes the demo's permission prompt with its
// options as buttons.
func TestDemoNotifyPushesPermissionPrompt(t *testing.T) {
	rec := newNtfyRecorder(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("notify:\n  desktop: {enabled: \"off\"}\n  reasons: [awaiting_input]\n  digest_window: \"off\"\n  ntfy:\n    url: %s/demo\n    actions_url: http://127.0.0.1:8889\n", rec.URL)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t), "SYSTEM3_CONFIG": cfg}
	out := &testkit.SyncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--no-ui", "--notify"}, strings.NewReader(""), out, out, func(k string) string { return env[k] })
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("demo did not stop")
		}
	}()
	var billing notify.NtfyMessage
	testkit.WaitForValue(t, 60*time.Second, "a push for orch-billing (the pushes so far)", func() ([]notify.NtfyMessage, bool) {
		select {
		case code := <-done:
			t.Fatalf("demo exited %d:\n%s", code, out.String())
		default:
		}
		msgs, _, _ := rec.snapshot()
		found := false
		for _, m := range msgs {
			if strings.HasPrefix(m.Title, "orch-billing ") {
				billing, found = m, true
			}
		}
		return msgs, found
	}, out.String)
	if len(billing.Actions) != 3 || billing.Actions[0].Label != "Yes" || billing.Actions[2].Label != "No" ||
		!strings.HasPrefix(billing.Actions[0].URL, "http://127.0.0.1:8889/web/act?t=") {
		t.Fatalf("orch-billing push = %+v", billing)
	}
}

// With notify.desktop on and a session bus, `system3 notify test desktop`
// shows the sample through the freedesktop service over D-Bus.
func TestNotifyTestDesktopOverDBus(t *testing.T) {
	addr := notifytest.PrivateBus(t)
	srv := notifytest.NewServer(t, addr)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("notify:\n  desktop:\n    enabled: \"on\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_CONFIG": cfg, "DBUS_SESSION_BUS_ADDRESS": addr}
	code, out, errOut := invoke(t, env, "notify", "test", "desktop")
	if code != 0 || !strings.Contains(out, "desktop  sent in") {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	n := srv.Next(t)
	if n.App != "system3" || n.Summary != "system3-test %0: waiting for you" || !strings.Contains(n.Body, "1. Yes") {
		t.Fatalf("notification = %+v", n)
	}
}
