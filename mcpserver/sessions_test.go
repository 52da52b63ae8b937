package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// rawMCP speaks Streamable HTTP by hand, so a test controls every header.
type rawMCP struct {
	t   *testing.T
	url string
}

func initBodyAs(name string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}}`, name)
}

const statusCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status","arguments":{}}}`

// initialize opens a session as client name and returns its id.
func (c rawMCP) initialize(name string) string {
	c.t.Helper()
	resp, body := post(c.t, c.url, initBodyAs(name), nil)
	id := resp.Header.Get(server.HeaderKeySessionID)
	if resp.StatusCode != http.StatusOK || id == "" {
		c.t.Fatalf("initialize: %d, session %q, %s", resp.StatusCode, id, body)
	}
	return id
}

// do sends method to the endpoint with session id sid ("" sends none).
func (c rawMCP) do(method, sid, body string) (int, string) {
	c.t.Helper()
	// A GET the server wrongly accepts is a stream that never ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set(server.HeaderKeySessionID, sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "(a stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// listen opens the session's GET stream and returns once the server has
// answered its headers; closing the returned func ends it.
func (c rawMCP) listen(sid string) func() {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		c.t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	go io.Copy(io.Discard, bufio.NewReader(resp.Body))
	return func() { cancel(); resp.Body.Close() }
}

// waitSessions waits until s has n MCP sessions registered: mcp-go
// registers a session just after it answers initialize.
func waitSessions(t *testing.T, s *Server, n int, why string) {
	t.Helper()
	testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("%s: %d sessions", why, n), func() (int, bool) {
		got := s.Status().Sessions
		return got, got == n
	})
}

func toolCalls(f *monitortest.Service) int {
	n := 0
	for _, e := range f.AuditEntries() {
		if e.Action == "tool_call" {
			n++
		}
	}
	return n
}

// TestSessionIDStatusCodes holds the Streamable HTTP spec's rules for a
// server that issues session ids, request by request, through the real
// handler: an id it never issued or that was DELETEd gets 404 and runs
// nothing; a request without the id gets 400 (initialize needs none); a
// sessionless protocol version is refused.
func TestSessionIDStatusCodes(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}

	sid := c.initialize("spec-client")
	if code, body := c.do(http.MethodPost, sid, statusCall); code != 200 || !strings.Contains(body, `"version"`) {
		t.Fatalf("call on a live session: %d %s", code, body)
	}
	calls := toolCalls(f)

	forged := []string{"s3-NEVERISSUED0000000000000000", "mcp-session-6f1c1a3e-6f0e-4b8e-9d55-0d0f2d5b1c11", sid + "x", "x"}
	tests := []struct {
		name, method, sid, body string
		code                    int
		want                    string
	}{
		{"no id, tools/call", http.MethodPost, "", statusCall, 400, "Mcp-Session-Id header is missing"},
		{"no id, notification", http.MethodPost, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, "Mcp-Session-Id"},
		{"no id, ping", http.MethodPost, "", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, 400, "Mcp-Session-Id"},
		{"no id, GET stream", http.MethodGet, "", "", 400, "Mcp-Session-Id"},
		{"no id, DELETE", http.MethodDelete, "", "", 400, "Mcp-Session-Id"},
	}
	for i, id := range forged {
		tests = append(tests,
			struct {
				name, method, sid, body string
				code                    int
				want                    string
			}{fmt.Sprintf("never issued %d, tools/call", i), http.MethodPost, id, statusCall, 404, "session not found"},
			struct {
				name, method, sid, body string
				code                    int
				want                    string
			}{fmt.Sprintf("never issued %d, GET stream", i), http.MethodGet, id, "", 404, "session not found"},
			struct {
				name, method, sid, body string
				code                    int
				want                    string
			}{fmt.Sprintf("never issued %d, DELETE", i), http.MethodDelete, id, "", 404, "session not found"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := c.do(tt.method, tt.sid, tt.body)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("%s: %d %s; want %d with %q", tt.method, code, body, tt.code, tt.want)
			}
			var msg struct {
				JSONRPC string `json:"jsonrpc"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.JSONRPC != "2.0" || msg.Error.Code == 0 {
				t.Fatalf("body is not a JSON-RPC error: %s", body)
			}
		})
	}
	if got := toolCalls(f); got != calls {
		t.Fatalf("refused requests ran %d tool calls", got-calls)
	}
	waitSessions(t, s, 1, "forged ids opened sessions")

	// DELETE ends the session: the id then gets 404, everywhere.
	if code, body := c.do(http.MethodDelete, sid, ""); code != 200 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	for _, m := range []struct{ method, body string }{{http.MethodPost, statusCall}, {http.MethodGet, ""}, {http.MethodDelete, ""}} {
		if code, body := c.do(m.method, sid, m.body); code != 404 || !strings.Contains(body, "initialize again") {
			t.Fatalf("%s with a DELETEd id: %d %s", m.method, code, body)
		}
	}
	if got := toolCalls(f); got != calls {
		t.Fatal("a DELETEd session's call ran")
	}
	waitSessions(t, s, 0, "sessions open after DELETE")

	// A protocol version without sessions is refused: it would name no
	// session and no client.
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"status","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "status")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || toolCalls(f) != calls {
		t.Fatalf("sessionless request: %d %s (tool calls %d, want %d)", resp.StatusCode, b, toolCalls(f), calls)
	}
}

// TestSessionCapEvictsIdlest: the register holds MaxSessions; a new
// session evicts the one idle longest, never one with a request or stream
// in flight, and the evicted id gets 404 so its client starts again.
func TestSessionCapEvictsIdlest(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{MaxSessions: 3})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}

	a, b, cc := c.initialize("a"), c.initialize("b"), c.initialize("c")
	// a is used again: b is now the one idle longest.
	if code, _ := c.do(http.MethodPost, a, statusCall); code != 200 {
		t.Fatal("call on a")
	}
	d := c.initialize("d")
	if code, body := c.do(http.MethodPost, b, statusCall); code != 404 {
		t.Fatalf("evicted b: %d %s", code, body)
	}
	for _, id := range []string{a, cc, d} {
		if code, body := c.do(http.MethodPost, id, statusCall); code != 200 {
			t.Fatalf("kept session: %d %s", code, body)
		}
	}
	waitSessions(t, s, 3, "sessions registered past the cap")

	// Order now, oldest use first: a, cc, d. A listening stream keeps a
	// busy: cc goes next, then d.
	stop := c.listen(a)
	e := c.initialize("e")
	if code, _ := c.do(http.MethodPost, cc, statusCall); code != 404 {
		t.Fatal("c should have been evicted before the busy a")
	}
	if code, _ := c.do(http.MethodPost, a, statusCall); code != 200 {
		t.Fatal("a, busy with its stream, was evicted")
	}
	c.initialize("f")
	if code, _ := c.do(http.MethodPost, d, statusCall); code != 404 {
		t.Fatal("d should have been evicted")
	}
	if code, _ := c.do(http.MethodPost, e, statusCall); code != 200 {
		t.Fatal("e evicted out of order")
	}
	stop()

	// Every session busy: a new one is refused, not one in use dropped.
	one := newServer(t, fixture(t), Options{MaxSessions: 1})
	ts1 := httptest.NewServer(one.Handler())
	defer ts1.Close()
	c1 := rawMCP{t: t, url: ts1.URL + EndpointPath}
	busy := c1.initialize("busy")
	stop = c1.listen(busy)
	defer stop()
	resp, body := post(t, c1.url, initBodyAs("late"), nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "mcp.max_sessions") {
		t.Fatalf("initialize with every session busy: %d %s", resp.StatusCode, body)
	}
	if code, _ := c1.do(http.MethodPost, busy, statusCall); code != 200 {
		t.Fatal("the busy session was dropped")
	}
}

// TestAbandonedSessionsAreBounded opens many sessions and never closes
// them, as the audit's 3,000 did: the server keeps at most its cap, in
// mcp-go's registry and in its own bookkeeping.
func TestAbandonedSessionsAreBounded(t *testing.T) {
	s := newServer(t, fixture(t), Options{MaxSessions: 16})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}
	var last string
	for i := range 300 {
		last = c.initialize(fmt.Sprintf("abandoned-%d", i))
	}
	waitSessions(t, s, 16, "sessions registered past the cap")
	s.clients.mu.Lock()
	names := len(s.clients.names)
	s.clients.mu.Unlock()
	if names > 16 {
		t.Fatalf("%d client names kept for 16 sessions", names)
	}
	s.mu.Lock()
	reg := s.registers[0]
	s.mu.Unlock()
	if n := reg.len(); n != 16 {
		t.Fatalf("register holds %d ids", n)
	}
	if code, _ := c.do(http.MethodPost, last, statusCall); code != 200 {
		t.Fatal("the newest session was evicted")
	}
}

// TestSessionAudit: every tool call over HTTP is audited with its real
// session id and the client name its initialize gave, never mcp:unknown;
// and the entry's delivered says what the result says.
func TestSessionAudit(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}

	ids := map[string]string{}
	for _, name := range []string{"supervisor-claude", "second-client"} {
		ids[name] = c.initialize(name)
	}
	for name, id := range ids {
		if code, body := c.do(http.MethodPost, id, statusCall); code != 200 {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		inject := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inject_guidance","arguments":{"session":"orch-db","message":"from ` + name + `"}}}`
		if code, body := c.do(http.MethodPost, id, inject); code != 200 || !strings.Contains(body, `delivered`) {
			t.Fatalf("%s inject: %d %s", name, code, body)
		}
		bad := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"inject_guidance","arguments":{"session":"no-such","message":"x"}}}`
		if code, _ := c.do(http.MethodPost, id, bad); code != 200 {
			t.Fatalf("%s bad inject: %d", name, code)
		}
	}
	byTool := map[string]int{}
	for _, e := range f.AuditEntries() {
		if e.Action != "tool_call" {
			continue
		}
		byTool[e.Tool]++
		name := strings.TrimPrefix(e.Origin, "mcp:")
		id, ok := ids[name]
		if !ok || e.MCPSession != id {
			t.Errorf("entry %s: origin %q session %q; want a client name from initialize and its session id", e.Tool, e.Origin, e.MCPSession)
		}
		wantSent := e.Error == ""
		if e.Sent != wantSent {
			t.Errorf("entry %s: delivered %v with error %q and result %q", e.Tool, e.Sent, e.Error, e.Result)
		}
	}
	if byTool["status"] != 2 || byTool["inject_guidance"] != 4 {
		t.Fatalf("audited calls %v", byTool)
	}
}

// TestSessionExpiry: a session idle past SessionIdleTTL is forgotten and
// its id then gets 404.
func TestSessionExpiry(t *testing.T) {
	s := newServer(t, fixture(t), Options{SessionIdleTTL: time.Second})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}
	id := c.initialize("sleepy")
	waitSessions(t, s, 0, "an idle session was never forgotten")
	if code, _ := c.do(http.MethodPost, id, statusCall); code != 404 {
		t.Fatalf("expired session: %d, want 404", code)
	}
}
