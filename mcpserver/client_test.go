package mcpserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// notes collects a client's notifications.
type notes struct {
	mu  sync.Mutex
	all []mcp.JSONRPCNotification
}

func (n *notes) add(m mcp.JSONRPCNotification) {
	n.mu.Lock()
	n.all = append(n.all, m)
	n.mu.Unlock()
}

func (n *notes) of(method string) []mcp.JSONRPCNotification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, m := range n.all {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func httpClient(t *testing.T, url, name string, opts ...transport.StreamableHTTPCOption) (*client.Client, *notes) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	n := &notes{}
	c.OnNotification(n.add)
	initialize(t, c, name)
	return c, n
}

// TestHTTPClient drives the real HTTP handler with mcp-go's Streamable HTTP
// client: tools, a wait with progress whose last notification arrives
// before the answer, an injection carrying the client's name, resources and
// their list_changed announcements.
func TestHTTPClient(t *testing.T) {
	f := fixture(t)
	const token = "tok-0123456789abcdef-0123"
	s := newServer(t, f, Options{Token: token, ProgressEvery: 100 * time.Millisecond})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	hdr := transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})
	c, n := httpClient(t, ts.URL+EndpointPath, "http-test", hdr)

	ctx := context.Background()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 15 {
		t.Fatalf("tools: %v, %v", len(tools.Tools), err)
	}
	if st := s.Status(); st.Sessions != 1 {
		t.Errorf("status sessions = %d, want 1", st.Sessions)
	}
	if _, out := call(t, c, "status", nil); out["version"] != "v0.0.0-test" {
		t.Fatalf("status = %v", out)
	}

	// wait_for_wake with a progress token: a wake raised while waiting ends
	// it, and every notification, the last included, precedes the answer.
	go func() {
		time.Sleep(600 * time.Millisecond)
		raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
	}()
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for_wake"
	req.Params.Arguments = map[string]any{"max_wait_seconds": 5}
	req.Params.Meta = &mcp.Meta{ProgressToken: "wait-1"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("wait_for_wake: %v %v", err, res)
	}
	out := decode(t, res)
	if out["status"] != "wake" {
		t.Fatalf("wait = %v", out)
	}
	prog := n.of(string(mcp.MethodNotificationProgress))
	if len(prog) < 3 {
		t.Fatalf("%d progress notifications, want at least 3", len(prog))
	}
	last := prog[len(prog)-1].Params.AdditionalFields
	if last["progress"] != 5.0 || last["total"] != 5.0 || !strings.HasPrefix(last["message"].(string), "wake w") || last["progressToken"] != "wait-1" {
		t.Fatalf("last progress = %v", last)
	}
	prev := -1.0
	for _, p := range prog {
		v := p.Params.AdditionalFields["progress"].(float64)
		if v <= prev {
			t.Fatalf("progress not increasing: %v", prog)
		}
		prev = v
	}

	// The injection names the client.
	if res, _ := call(t, c, "inject_guidance", map[string]any{"session": "orch-db", "message": "hello"}); res.IsError {
		t.Fatal(text(res))
	}
	if calls := f.Calls(); len(calls) != 1 || calls[0].Origin != "mcp:http-test" {
		t.Fatalf("calls = %+v", calls)
	}

	// The supervise prompt.
	pr := mcp.GetPromptRequest{}
	pr.Params.Name = SupervisePrompt
	pr.Params.Arguments = map[string]string{"sessions": "orch-*"}
	if got, err := c.GetPrompt(ctx, pr); err != nil || len(got.Messages) != 1 ||
		!strings.Contains(got.Messages[0].Content.(mcp.TextContent).Text, `wait_for_wake(reasons=["awaiting_input", "error_loop_detected", "worker_failed", "api_error", "session_idle", "validation_failed", "budget_exceeded", "usage_limit"], session="orch-*")`) {
		t.Fatalf("prompt: %+v %v", got, err)
	}

	// Resources.
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "system3://sessions/orch-auth"
	got, err := c.ReadResource(ctx, rr)
	if err != nil || len(got.Contents) != 1 || !strings.Contains(got.Contents[0].(mcp.TextResourceContents).Text, "Do you want to proceed?") {
		t.Fatalf("read session resource: %v %v", got, err)
	}
	rr.Params.URI = "system3://tasks/PRD-AUTH"
	if got, err = c.ReadResource(ctx, rr); err != nil || !strings.Contains(got.Contents[0].(mcp.TextResourceContents).Text, "Build the form") {
		t.Fatalf("read task resource: %v %v", got, err)
	}
	rr.Params.URI = "system3://sessions/nope"
	if _, err = c.ReadResource(ctx, rr); err == nil || !strings.Contains(err.Error(), "no watched session") {
		t.Fatalf("unknown session resource: %v", err)
	}
	rr.Params.URI = ActiveWakesURI
	if got, err = c.ReadResource(ctx, rr); err != nil || !strings.Contains(got.Contents[0].(mcp.TextResourceContents).Text, `"count": 1`) {
		t.Fatalf("active wakes: %v %v", got, err)
	}
}

// TestResourceListChanged: a client listening on the GET stream hears
// notifications/resources/list_changed when a tmux session appears, and
// the new session is listed. Serve runs the resource watcher. (The stream
// is read raw: mcp-go v1.2.1's client ends its own listening GET at once.)
func TestResourceListChanged(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{})
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	url := s.Status().URL
	c, _ := httpClient(t, url, "listener")
	testkit.WaitFor(t, 10*time.Second, "the initial resources", func() bool {
		l, err := c.ListResources(context.Background(), mcp.ListResourcesRequest{})
		return err == nil && hasURI(l.Resources, "system3://sessions/orch-auth")
	})

	resp, _ := post(t, url, initBody, nil)
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()

	sessions := append(fixtureSessions(), api.Session{Pane: "%7", Session: "orch new", Target: "orch new:0.0", Agent: "claude", State: api.Idle})
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Sessions: sessions})
	f.Publish(api.Update{Kind: api.SessionAdded, Session: sessions[len(sessions)-1]})
	timeout := time.After(10 * time.Second)
	for heard := false; !heard; {
		select {
		case e := <-events:
			heard = strings.Contains(e, `"method":"notifications/resources/list_changed"`)
		case <-timeout:
			t.Fatal("no notifications/resources/list_changed on the GET stream")
		}
	}
	l, err := c.ListResources(context.Background(), mcp.ListResourcesRequest{})
	if err != nil || !hasURI(l.Resources, "system3://sessions/orch%20new") {
		t.Fatalf("resources = %+v, %v", l, err)
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "system3://sessions/orch%20new"
	if got, err := c.ReadResource(context.Background(), rr); err != nil || !strings.Contains(got.Contents[0].(mcp.TextResourceContents).Text, `"pane": "%7"`) {
		t.Fatalf("read new session: %v %v", got, err)
	}

	// The session vanishing is announced too.
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Sessions: fixtureSessions()})
	f.Publish(api.Update{Kind: api.SessionRemoved, Session: sessions[len(sessions)-1]})
	for heard := false; !heard; {
		select {
		case e := <-events:
			heard = strings.Contains(e, `"method":"notifications/resources/list_changed"`)
		case <-timeout:
			t.Fatal("no list_changed when the session vanished")
		}
	}
}

func hasURI(rs []mcp.Resource, uri string) bool {
	for _, r := range rs {
		if r.URI == uri {
			return true
		}
	}
	return false
}

// TestStdio speaks MCP over a pipe pair, as `system3 mcp` does on its
// standard streams: progress notifications are written before the answer
// they belong to.
func TestStdio(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{ProgressEvery: 100 * time.Millisecond, ReadOnly: true})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	n := &notes{}
	c.OnNotification(n.add)
	initialize(t, c, "stdio-test")
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("read-only tools over stdio: %d, %v", len(tools.Tools), err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "wait_for_wake"
	req.Params.Arguments = map[string]any{"max_wait_seconds": 1}
	req.Params.Meta = &mcp.Meta{ProgressToken: 7}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError || decode(t, res)["status"] != "waiting" {
		t.Fatalf("wait: %v %v", res, err)
	}
	prog := n.of(string(mcp.MethodNotificationProgress))
	if len(prog) < 2 {
		t.Fatalf("%d progress notifications", len(prog))
	}
	if last := prog[len(prog)-1].Params.AdditionalFields; last["progress"] != 1.0 || last["message"] != "no wake yet" {
		t.Fatalf("last progress %v", last)
	}
	if _, out := call(t, c, "status", nil); out["read_only"] != true {
		t.Fatalf("status = %v", out)
	}
	c.Close()
	inW.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not stop")
	}
	var sawCall bool
	for _, e := range f.AuditEntries() {
		sawCall = sawCall || (e.Tool == "wait_for_wake" && e.Origin == "mcp:stdio-test" && e.MCPSession == "stdio" && e.Sent)
	}
	if !sawCall {
		t.Fatalf("audit = %+v", f.AuditEntries())
	}
}
