package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/mcp"
)

// stdioSession speaks raw JSON-RPC lines to ServeStdio.
type stdioSession struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
}

func (c stdioSession) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// reply reads lines until the answer to id, skipping notifications.
func (c stdioSession) reply(id int) rpcReply {
	c.t.Helper()
	for c.out.Scan() {
		var r rpcReply
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
			c.t.Fatalf("not JSON: %s", c.out.Text())
		}
		if r.ID != nil && *r.ID == id {
			return r
		}
	}
	c.t.Fatalf("no answer to %d: %v", id, c.out.Err())
	return rpcReply{}
}

type rpcReply struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestStdioResources: over stdio, resources/list right after initialize
// already lists every watched tmux session, even when the session watch
// is not up yet; and resources/read of a system3 URI naming nothing is
// "resource not found" (-32002), not an internal error.
func TestStdioResources(t *testing.T) {
	f := fixture(t)
	// The watch fails: only the snapshot taken before serving lists them.
	f.Fail("watch", errors.New("not yet"))
	s := newServer(t, f, Options{}, backend.Parts{Coach: coachFixture(t, f)})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not stop")
		}
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	c := stdioSession{t: t, in: inW, out: sc}
	c.send(initBodyAs("stdio-race"))
	if r := c.reply(1); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/list"}`)
	r := c.reply(2)
	for _, name := range []string{"orch-auth", "orch-db", "build", "orch-old", "orch-crash"} {
		if !strings.Contains(string(r.Result), `"uri":"system3://sessions/`+name+`"`) {
			t.Errorf("resources/list right after initialize lacks %s: %s", name, r.Result)
		}
	}

	// The message is the URI as asked, then why it names nothing.
	for i, tt := range []struct{ uri, want string }{
		{"system3://sessions/nope", `system3://sessions/nope: no watched session "nope"; read system3://sessions for the names`},
		{"system3://sessions/", `system3://sessions/: no watched session ""; read system3://sessions for the names`},
		{"system3://sessions/it's%20me", `system3://sessions/it's%20me: no watched session "it's me"; read system3://sessions for the names`},
		{"system3://tasks/NOPE", `system3://tasks/NOPE: no task list "NOPE"; call list_tasks for the ids`},
		{"system3://patterns/nope", `system3://patterns/nope: no pattern "nope"; read system3://patterns for the ids`},
		{"system3://nothing/here", `handler not found for resource URI 'system3://nothing/here': resource not found`},
	} {
		id := 10 + i
		uri, _ := json.Marshal(tt.uri)
		c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"resources/read","params":{"uri":` + string(uri) + `}}`)
		r := c.reply(id)
		if r.Error == nil || r.Error.Code != -32002 || r.Error.Message != tt.want {
			t.Errorf("read %s: %+v %s; want -32002 saying %s", tt.uri, r.Error, r.Result, tt.want)
		}
	}
	// What exists still reads.
	c.send(`{"jsonrpc":"2.0","id":30,"method":"resources/read","params":{"uri":"system3://sessions/orch-auth"}}`)
	if r := c.reply(30); r.Error != nil || !strings.Contains(string(r.Result), "Do you want to proceed?") {
		t.Fatalf("read orch-auth: %+v %s", r.Error, r.Result)
	}
	c.send(`{"jsonrpc":"2.0","id":31,"method":"resources/read","params":{"uri":"system3://tasks/PRD-AUTH"}}`)
	if r := c.reply(31); r.Error != nil || !strings.Contains(string(r.Result), "Build the form") {
		t.Fatalf("read PRD-AUTH: %+v %s", r.Error, r.Result)
	}
}

// TestHTTPResourceNotFound: the same -32002 over Streamable HTTP, as
// mcp-go's client shows it: the URI intact, then why.
func TestHTTPResourceNotFound(t *testing.T) {
	s := newServer(t, fixture(t), Options{})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	c, _ := httpClient(t, ts.URL+EndpointPath, "http-read")
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "system3://sessions/ghost"
	_, err := c.ReadResource(context.Background(), req)
	const want = `resource not found: system3://sessions/ghost: no watched session "ghost"; read system3://sessions for the names`
	if !errors.Is(err, mcp.ErrResourceNotFound) || err.Error() != want {
		t.Fatalf("read: %v; want %s", err, want)
	}
	req.Params.URI = "system3://sessions/orch-auth"
	if res, err := c.ReadResource(context.Background(), req); err != nil || len(res.Contents) != 1 {
		t.Fatalf("read orch-auth: %v %v", res, err)
	}
}

// TestExplainNotFound: the rewrite of mcp-go's -32002 answer finds the
// URI and the reason in every framing the transports write, whatever the
// URI holds, and leaves every other message as it was.
func TestExplainNotFound(t *testing.T) {
	msg := func(code int, uri string) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "error": map[string]any{
			"code": code, "message": "handler not found for resource URI '" + uri + "': resource not found"}})
		return string(b)
	}
	why := `no watched session "x"; read system3://sessions for the names`
	for _, tt := range []struct{ name, in, want string }{
		{"stdio line", msg(-32002, "system3://sessions/x"+missingMark+why) + "\n",
			`{"error":{"code":-32002,"message":"system3://sessions/x: no watched session \"x\"; read system3://sessions for the names"},"id":3,"jsonrpc":"2.0"}` + "\n"},
		{"sse event", "event: message\ndata: " + msg(-32602, "system3://sessions/x"+missingMark+why) + "\n\n",
			"event: message\ndata: " + `{"error":{"code":-32602,"message":"system3://sessions/x: no watched session \"x\"; read system3://sessions for the names"},"id":3,"jsonrpc":"2.0"}` + "\n\n"},
		{"marks and quotes in the uri", msg(-32002, "system3://sessions/a'"+missingMark+"b\"c"+missingMark+why),
			`{"error":{"code":-32002,"message":"system3://sessions/a'\u001fb\"c: no watched session \"x\"; read system3://sessions for the names"},"id":3,"jsonrpc":"2.0"}`},
		{"no mark", msg(-32002, "system3://nothing/here"), msg(-32002, "system3://nothing/here")},
		{"screen text", `{"result":{"text":"\"code\":-32002,\"message\":\"handler not found for resource URI 'a\u001fb': resource not found\""}}`,
			`{"result":{"text":"\"code\":-32002,\"message\":\"handler not found for resource URI 'a\u001fb': resource not found\""}}`},
	} {
		if got := string(explainNotFound([]byte(tt.in))); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
