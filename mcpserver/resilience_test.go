package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// Over stdio, lines that are not JSON-RPC (garbage, truncated JSON, a
// megabyte of it, a wrong version) get error answers and leave the
// session usable; and a client that goes away in the middle of
// wait_for_wake (stdin closed) ends the server at once, not when the wait
// would have timed out.
func TestResilienceStdioGarbageAndHangUp(t *testing.T) {
	s := newServer(t, fixture(t), Options{ProgressEvery: 100 * time.Millisecond})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- s.ServeStdio(ctx, inR, outW)
		outW.Close()
	}()
	replies := make(chan map[string]any, 100)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			replies <- m
		}
	}()
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next reply that is not a notification.
	next := func(what string) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case m, ok := <-replies:
				if !ok {
					t.Fatalf("the server stopped before answering %s", what)
				}
				if _, isNote := m["method"]; isNote {
					continue
				}
				return m
			case <-timeout:
				t.Fatalf("no answer to %s", what)
			}
		}
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"garbage-test","version":"1"}}}`)
	if r := next("initialize"); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, bad := range []string{
		"\x00\xff not json \x1b[2J",
		`{"jsonrpc":"2.0","id":2,"method":`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"status","arguments":"not an object"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_session","arguments":{"session":"` + strings.Repeat("x", 1<<20) + `"}}}`,
	} {
		send(bad)
		r := next("a bad line")
		_, isErr := r["error"]
		res, _ := r["result"].(map[string]any)
		if !isErr && (res == nil || res["isError"] != true) {
			t.Fatalf("bad line %.60q answered %.300v", bad, r)
		}
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"status"}}`)
	if r := next("status after the garbage"); r["result"] == nil || r["id"] != 6.0 {
		t.Fatalf("status after the garbage: %v", r)
	}

	// Hang up in the middle of a long wait.
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_for_wake","arguments":{"max_wait_seconds":25,"reasons":["summary"]}}}`)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio still runs 10s after its client hung up mid-wait")
	}
	t.Logf("ServeStdio returned %s after the client hung up mid-wait", time.Since(start).Round(time.Millisecond))
}
