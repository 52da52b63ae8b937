package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tui"
)

// invokeStdin runs system3 with args as invoke does, with stdin.
func invokeStdin(env map[string]string, stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

// routedEntries are the route entries of the local audit log, by the
// action routed.
func routedEntries(t *testing.T, state string) []api.AuditEntry {
	t.Helper()
	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	var out []api.AuditEntry
	for _, e := range entries {
		if e.Action == "route" {
			out = append(out, e)
		}
	}
	return out
}

// A permission prompt on the remote host, answered from this machine with
// `system3 answer --session remote:SESSION 1`: the remote fake agent takes
// the answer and carries on, the remote audit log records the answer (with
// the relay as the peer and this machine as the claim), the local audit
// log records that it was routed, and `ack remote:ID` acknowledges the
// wake on the remote daemon. A host that is down gets its sentence, and
// the local audit records the failure.
func TestHostsRouteAnswerOverSSH(t *testing.T) {
	w := newHostsWorld(t)
	startTestAgents(t, w.remote, "", agentSession("permission"))
	code, out, errOut := invoke(t, w.env, "wait", "--host", "remote", "--json", "--reason", "awaiting_input", "--timeout", "90s")
	var hw api.HostWake
	if code != 0 || json.Unmarshal([]byte(out), &hw) != nil || hw.Session != "remote:fa-permission" {
		t.Fatalf("wait --host remote: exit %d, out %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = invoke(t, w.env, "answer", "--session", "remote:fa-permission", "1")
	if code != 0 || !strings.Contains(out, "answered remote:fa-permission") || !strings.Contains(out, "pressed 1") {
		t.Fatalf("answer remote:fa-permission 1: exit %d, out %q, stderr %q", code, out, errOut)
	}
	// The remote agent took it: no longer awaiting input.
	rc := waitLeftPrompt(t, w.state, "fa-permission")
	ctx := context.Background()

	// The remote audit: the answer, delivered, from the relay, claiming
	// this machine's CLI.
	entries, err := audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e.Action == "answer" && e.Target == "fa-permission" && e.Phase == audit.PhaseResult && e.Sent &&
			strings.HasPrefix(e.Origin, "socket:pid=") && strings.Contains(e.Origin, `claims "cli via ssh from `) {
			found = true
		}
	}
	if !found {
		t.Errorf("the remote audit log does not record the routed answer: %+v", entries)
	}
	// The local audit: routed, with host, target and outcome.
	routes := routedEntries(t, w.env["SYSTEM3_STATE_DIR"])
	if len(routes) != 1 || routes[0].Tool != "answer" || routes[0].Host != "remote" || routes[0].Target != "remote:fa-permission" ||
		routes[0].Args != "1" || routes[0].Origin != "cli" || routes[0].Phase != audit.PhaseResult || !routes[0].Sent || routes[0].Error != "" {
		t.Errorf("local route entries = %+v; want one answer to remote:fa-permission, delivered", routes)
	}

	// ack HOST:ID acknowledges it there.
	code, out, errOut = invoke(t, w.env, "ack", "remote:"+hw.ID)
	if code != 0 || !strings.Contains(out, "acked "+hw.ID) {
		t.Fatalf("ack remote:%s: exit %d, out %q, stderr %q", hw.ID, code, out, errOut)
	}
	pending, err := rc.Wakes(ctx, api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range pending {
		if ev.ID == hw.ID {
			t.Errorf("wake %s is still pending on the remote after ack remote:ID", hw.ID)
		}
	}
	if code, _, errOut := invoke(t, w.env, "ack", "remote:w9999999999-nope"); code == 0 || !strings.Contains(errOut, "no wake") || !strings.Contains(errOut, "on host remote") {
		t.Errorf("ack of an unknown remote wake: exit %d, stderr %q", code, errOut)
	}

	// A host that is down: its sentence, and the failure audited here.
	code, _, errOut = invoke(t, w.env, "interrupt", "--session", "down:fa-permission")
	if code == 0 || !strings.Contains(errOut, "down or unreachable") {
		t.Errorf("interrupt on a down host: exit %d, stderr %q", code, errOut)
	}
	routes = routedEntries(t, w.env["SYSTEM3_STATE_DIR"])
	last := routes[len(routes)-1]
	if last.Tool != "interrupt" || last.Host != "down" || last.Sent || !strings.Contains(last.Error, "down or unreachable") {
		t.Errorf("the failed route is audited as %+v", last)
	}
	// A prefix that names no host is a local tmux target, as before.
	if code, _, errOut := invoke(t, w.env, "interrupt", "--session", "nohost:1.0"); code == 0 || !strings.Contains(errOut, "no such session or pane: \"nohost:1.0\"") {
		t.Errorf("interrupt nohost:1.0: exit %d, stderr %q; want this machine's unknown-target error", code, errOut)
	}
}

// Hostile text sent over the link with `inject --session remote:catv -`
// into a real pane running `cat -v` on the remote: the remote daemon's
// text check refuses each one with the byte and its offset, and nothing
// is typed; with --visible-controls it is typed as visible text. cat -v
// shows exactly the visible texts, and both audit logs hold every
// attempt.
func TestHostsRouteHostileTextOverSSH(t *testing.T) {
	w := newHostsWorld(t)
	dir := t.TempDir()
	out, ready := filepath.Join(dir, "out"), filepath.Join(dir, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := tmux.NewClient(w.remote).NewSession(ctx, tmux.NewSessionOptions{Name: "catv", Width: 200, Height: 50,
		Command: []string{"sh", "-c", fmt.Sprintf("stty raw -echo -iexten && touch %s && exec cat -v > %s", ready, out)}}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the cat -v pane to be ready", func() bool { _, err := os.Stat(ready); return err == nil })
	rc := dialDaemon(t, w.state)
	testkit.WaitFor(t, 30*time.Second, "the remote monitors to see catv", func() bool {
		snap, err := rc.Snapshot(ctx)
		if err != nil {
			return false
		}
		for _, s := range snap.Sessions {
			if s.Session == "catv" {
				return true
			}
		}
		return false
	})

	hostiles := []struct{ name, text, why, visible string }{
		{"ctrl-c", "\u0003", "byte 0x03 (a control character) at byte offset 0", "^C"},
		{"shift-tab", "\x1b[Z", "byte 0x1b (escape) at byte offset 0", "^[[Z"},
		{"bracketed paste end", "a\x1b[201~\rtouch PWNED\r", "byte 0x1b (escape) at byte offset 1", "a^[[201~^Mtouch PWNED^M"},
		{"nul", "abc\x00def", "byte 0x00 (NUL) at byte offset 3", "abc^@def"},
		{"invalid utf-8", "ok \xff\xfe", "byte 0xff (not valid UTF-8) at byte offset 3", `ok \xff\xfe`},
		{"c1 csi", "x\u009b201~", "character U+009B (a C1 control character) at byte offset 1", `x\u009b201~`},
		{"del", "x\x7fy", "byte 0x7f (delete) at byte offset 1", "x^?y"},
		{"tmux key names", "C-c Enter Escape BTab", "", "C-c Enter Escape BTab"},
	}
	var want strings.Builder
	refused := 0
	for _, h := range hostiles {
		for _, visible := range []bool{false, true} {
			args := []string{"inject", "--session", "remote:catv", "--no-enter"}
			if visible {
				args = append(args, "--visible-controls")
			}
			code, _, errOut := invokeStdin(w.env, h.text, append(args, "-")...)
			switch {
			case h.why != "" && !visible:
				refused++
				if code == 0 || !strings.Contains(errOut, h.why) {
					t.Errorf("%s: exit %d, %q; want a refusal naming %q", h.name, code, errOut, h.why)
				}
			default:
				if code != 0 {
					t.Errorf("%s (visible %v): not delivered: exit %d, %q", h.name, visible, code, errOut)
				}
				want.WriteString(h.visible)
			}
		}
	}
	var got []byte
	testkit.Poll(30*time.Second, func() bool {
		got, _ = os.ReadFile(out)
		return len(got) >= want.Len()
	})
	if string(got) != want.String() {
		t.Fatalf("cat -v on the remote shows\n%q\nwant\n%q", got, want.String())
	}

	entries, err := audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	remoteRefused := 0
	for _, e := range entries {
		if e.Action == "inject" && e.Phase == audit.PhaseRefused {
			remoteRefused++
			if strings.Contains(e.Error, "0xff") && e.Text != "ok \xff\xfe" {
				t.Errorf("the remote audit of the refused invalid UTF-8 holds %q", e.Text)
			}
		}
	}
	if remoteRefused != refused {
		t.Errorf("the remote audit holds %d refused injections, want %d", remoteRefused, refused)
	}
	routes := routedEntries(t, w.env["SYSTEM3_STATE_DIR"])
	if len(routes) != 2*len(hostiles) {
		t.Fatalf("%d route entries here, want %d", len(routes), 2*len(hostiles))
	}
	localRefused := 0
	for _, e := range routes {
		if e.Tool != "inject" || e.Host != "remote" || e.Target != "remote:catv" {
			t.Errorf("route entry %+v", e)
		}
		if e.Error != "" && !e.Sent {
			localRefused++
		}
	}
	if localRefused != refused {
		t.Errorf("the local audit holds %d failed routes, want %d", localRefused, refused)
	}
}

// The MCP server of this machine, given the config's hosts as the commands
// give it (withHosts): a permission prompt on the remote reaches
// wait_for_wake as remote:fa-permission with a host cursor; status lists
// the remote's session and the host that is down as disconnected, and
// answers within the client's timeout; ack_wake remote:ID acknowledges it
// there.
func TestHostsMCPAcrossSSH(t *testing.T) {
	w := newHostsWorld(t)
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return w.env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	var opts mcpserver.Options
	closeHosts := a.WithHosts(&opts)
	defer closeHosts()
	if opts.Hosts == nil {
		t.Fatal("withHosts gave no hosts")
	}
	ms, err := mcpserver.New(a.FleetOf(dialDaemon(t, w.env["SYSTEM3_STATE_DIR"])), opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ms.Handler())
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); ms.Close() })
	c, err := client.NewStreamableHttpClient(ts.URL + mcpserver.EndpointPath)
	if err != nil {
		t.Fatal(err)
	}
	mcpStart(t, c, "hosts-mcp")
	t.Cleanup(func() { c.Close() })

	got := make(chan map[string]any, 1)
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			out, isErr := callTool(t, c, "wait_for_wake", map[string]any{"max_wait_seconds": 20, "reasons": []string{"awaiting_input"}})
			var m map[string]any
			if isErr || json.Unmarshal([]byte(out), &m) != nil {
				t.Errorf("wait_for_wake: %s", out)
				break
			}
			if m["status"] == "wake" {
				got <- m
				return
			}
		}
		close(got)
	}()
	startTestAgents(t, w.remote, "", agentSession("permission"))
	m, ok := <-got
	if !ok {
		t.Fatal("no wake from the remote reached wait_for_wake")
	}
	wk := m["wake"].(map[string]any)
	if m["host"] != "remote" || wk["session"] != "remote:fa-permission" || m["host_cursor"] != fmt.Sprintf("remote:%.0f", wk["seq"].(float64)) {
		t.Fatalf("wait_for_wake = %v", m)
	}

	start := time.Now()
	out, isErr := callTool(t, c, "status", nil)
	took := time.Since(start)
	var st map[string]any
	if isErr || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status: %s", out)
	}
	if took > 10*time.Second {
		t.Errorf("status took %v, past the tools' 10 s budget", took)
	}
	states := map[string]string{}
	for _, h := range st["hosts"].([]any) {
		h := h.(map[string]any)
		states[h["name"].(string)] = h["state"].(string)
	}
	if states["local"] != "connected" || states["remote"] != "connected" || states["down"] != "disconnected" || states["badkey"] != "disconnected" {
		t.Errorf("status hosts = %v", states)
	}
	if n := strings.Count(out, `"name":"remote:fa-permission"`); n != 1 {
		t.Errorf("status lists remote:fa-permission %d times: %s", n, out)
	}

	// One session of the remote, seen and answered through this machine's
	// MCP server: routed to the remote's daemon, audited on both sides.
	out, isErr = callTool(t, c, "get_session", map[string]any{"session": "remote:fa-permission"})
	if isErr || !strings.Contains(out, "remote:fa-permission") || !strings.Contains(out, "awaiting_input") {
		t.Fatalf("get_session remote:fa-permission: %s", out)
	}
	out, isErr = callTool(t, c, "answer_prompt", map[string]any{"session": "remote:fa-permission", "answer": "1"})
	if isErr || !strings.Contains(out, "remote:") {
		t.Fatalf("answer_prompt remote:fa-permission: %s", out)
	}
	waitLeftPrompt(t, w.state, "fa-permission")
	entries, err := audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	remoteAudited := false
	for _, e := range entries {
		if e.Action == "answer" && e.Phase == audit.PhaseResult && e.Sent && strings.Contains(e.Origin, `claims "mcp:hosts-mcp via ssh from `) {
			remoteAudited = true
		}
	}
	if !remoteAudited {
		t.Errorf("the remote audit log lacks the answer from this machine's MCP server: %+v", entries)
	}
	if routes := routedEntries(t, w.env["SYSTEM3_STATE_DIR"]); len(routes) != 1 || routes[0].Tool != "answer" || !strings.HasPrefix(routes[0].Target, "remote:") || routes[0].Origin != "mcp:hosts-mcp" || !routes[0].Sent || routes[0].Result != "option: Yes" {
		t.Errorf("local route entries = %+v", routes)
	}

	out, isErr = callTool(t, c, "ack_wake", map[string]any{"id": "remote:" + wk["id"].(string)})
	if isErr || !strings.Contains(out, `"count":1`) {
		t.Fatalf("ack_wake remote:ID: %s", out)
	}
	left, err := dialDaemon(t, w.state).Wakes(context.Background(), api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range left {
		if ev.ID == wk["id"] {
			t.Errorf("wake %s still pending on the remote", ev.ID)
		}
	}

	// The dashboard's header source: remote connected, down and badkey
	// not, each with when it was last seen.
	hctx, stop := context.WithCancel(context.Background())
	defer stop()
	hosts := a.WatchHosts(hctx)
	testkit.WaitFor(t, 30*time.Second, "the dashboard's hosts to be asked", func() bool {
		by := map[string]tui.HostStatus{}
		for _, h := range hosts() {
			by[h.Name] = h
		}
		return by["remote"].Connected && !by["remote"].LastSeen.IsZero() && !by["down"].Connected && !by["badkey"].Connected && len(by) == 4
	})
}

// waitLeftPrompt waits until the daemon of state shows session as no
// longer awaiting input (its agent took an answer), and returns a client
// of that daemon.
func waitLeftPrompt(t *testing.T, state, session string) *ipc.Client {
	t.Helper()
	c := dialDaemon(t, state)
	testkit.WaitFor(t, 30*time.Second, "the agent of "+session+" to leave its prompt", func() bool {
		snap, err := c.Snapshot(context.Background())
		if err != nil {
			return false
		}
		for _, s := range snap.Sessions {
			if s.Session == session {
				return s.State != api.AwaitingInput
			}
		}
		return false
	})
	return c
}
