package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"github.com/system3-dev/system3/monitor/facade"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	s := newServer(t, f, Options{}, facade.Parts{Coach: coachFixture(t, f)})
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

	for i, tt := range []struct{ uri, why string }{
		{"system3://sessions/nope", `no watched session \"nope\"`},
		{"system3://sessions/", "no watched session"},
		{"system3://tasks/NOPE", `no task list \"NOPE\"`},
		{"system3://patterns/nope", `no pattern \"nope\"`},
		{"system3://nothing/here", "handler not found"},
	} {
		id := 10 + i
		c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"resources/read","params":{"uri":"` + tt.uri + `"}}`)
		r := c.reply(id)
		if r.Error == nil || r.Error.Code != -32002 || !strings.Contains(r.Error.Message, strings.ReplaceAll(tt.why, `\"`, `"`)) {
			t.Errorf("read %s: %+v %s; want -32002 saying %s", tt.uri, r.Error, r.Result, tt.why)
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

// TestHTTPResourceNotFound: the same -32002 over Streamable HTTP.
func TestHTTPResourceNotFound(t *testing.T) {
	s := newServer(t, fixture(t), Options{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := rawMCP{t: t, url: ts.URL + EndpointPath}
	sid := c.initialize("http-read")
	code, body := c.do(http.MethodPost, sid, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"system3://sessions/ghost"}}`)
	var r rpcReply
	if err := json.Unmarshal([]byte(body), &r); code != 200 || err != nil || r.Error == nil || r.Error.Code != -32002 || !strings.Contains(r.Error.Message, `no watched session "ghost"`) {
		t.Fatalf("%d %s", code, body)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
