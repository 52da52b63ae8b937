package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Progress notifications and a race in mcp-go.
//
// mcp-go queues a notification on the session's channel and a separate
// goroutine writes it: on Streamable HTTP, the request's forwarder; on
// stdio, a notification writer. Neither is ordered with the response:
//
//   - HTTP: when the handler returns, the response path takes the
//     forwarder's mutex, drains the channel and closes the request's done
//     channel. A notification the forwarder has already taken off the
//     channel but not yet written (it waits for the same mutex) sees done
//     closed and is dropped: the last progress notification is lost.
//   - stdio: the response can be written before the notification, and a
//     strict client treats progress for a finished request as an error.
//
// The guard: every transport's writer is wrapped so it reports each
// progress notification it actually writes, and a handler that sent one
// waits (bounded) until it has been written before returning.

// progressWait bounds how long a handler waits for its notifications to be
// written; past it the response goes out anyway.
const progressWait = 5 * time.Second

// progressTracker matches the progress notifications handlers send with the
// ones the transports write.
type progressTracker struct {
	mu      sync.Mutex
	pending map[string]chan struct{}
}

func newProgressTracker() *progressTracker {
	return &progressTracker{pending: map[string]chan struct{}{}}
}

// trackedKey marks a context whose transport reports written notifications.
type trackedKey struct{}

// withTracking marks ctx as served by a transport whose writer reports
// written progress notifications, so handlers may wait for them.
func withTracking(ctx context.Context) context.Context {
	return context.WithValue(ctx, trackedKey{}, true)
}

func tracked(ctx context.Context) bool {
	v, _ := ctx.Value(trackedKey{}).(bool)
	return v
}

func progressKey(token json.RawMessage, progress float64) string {
	var b bytes.Buffer
	if json.Compact(&b, token) != nil {
		b.Reset()
		b.Write(token)
	}
	return b.String() + "|" + strconv.FormatFloat(progress, 'g', -1, 64)
}

// expect registers a notification about to be sent and returns a channel
// closed once a transport has written it.
func (t *progressTracker) expect(token any, progress float64) (string, chan struct{}) {
	raw, _ := json.Marshal(token)
	key := progressKey(raw, progress)
	ch := make(chan struct{})
	t.mu.Lock()
	t.pending[key] = ch
	t.mu.Unlock()
	return key, ch
}

func (t *progressTracker) forget(keys ...string) {
	t.mu.Lock()
	for _, k := range keys {
		delete(t.pending, k)
	}
	t.mu.Unlock()
}

// observe looks for progress notifications in bytes a transport wrote: one
// JSON-RPC message per line (stdio) or SSE events ("data: {...}").
func (t *progressTracker) observe(p []byte) {
	if !bytes.Contains(p, []byte(`notifications/progress`)) {
		return
	}
	for _, line := range bytes.Split(p, []byte("\n")) {
		line = bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:"))
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Token    json.RawMessage `json:"progressToken"`
				Progress float64         `json:"progress"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.Method != string(mcp.MethodNotificationProgress) {
			continue
		}
		key := progressKey(msg.Params.Token, msg.Params.Progress)
		t.mu.Lock()
		if ch, ok := t.pending[key]; ok {
			close(ch)
			delete(t.pending, key)
		}
		t.mu.Unlock()
	}
}

// trackingWriter reports the notifications written through it (stdio).
type trackingWriter struct {
	w io.Writer
	t *progressTracker
}

func (w trackingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err == nil {
		w.t.observe(p)
	}
	return n, err
}

// trackingResponseWriter reports the notifications written through it
// (Streamable HTTP); it keeps Flush and the ResponseController working.
type trackingResponseWriter struct {
	http.ResponseWriter
	t *progressTracker
}

func (w trackingResponseWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err == nil {
		w.t.observe(p)
	}
	return n, err
}

func (w trackingResponseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w trackingResponseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// progressReporter sends one call's progress notifications and, before the
// call returns, waits until they have been written.
type progressReporter struct {
	ctx     context.Context
	srv     *server.MCPServer
	token   mcp.ProgressToken
	total   float64
	tracker *progressTracker
	last    float64
	keys    []string
	waits   []chan struct{}
}

// newProgressReporter returns nil when the client gave no progress token
// (or the call did not come through a server).
func newProgressReporter(ctx context.Context, req mcp.CallToolRequest, total float64, t *progressTracker) *progressReporter {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	return &progressReporter{ctx: ctx, srv: srv, token: req.Params.Meta.ProgressToken, total: total, tracker: t, last: -1}
}

// send reports progress (which must increase) with a message.
func (p *progressReporter) send(progress float64, message string) {
	if p == nil || progress <= p.last {
		return
	}
	p.last = progress
	params := map[string]any{"progressToken": p.token, "progress": progress, "message": message}
	if p.total > 0 {
		params["total"] = p.total
	}
	var key string
	var ch chan struct{}
	if tracked(p.ctx) && p.tracker != nil {
		key, ch = p.tracker.expect(p.token, progress)
	}
	if err := p.srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params); err != nil {
		if ch != nil {
			p.tracker.forget(key)
		}
		return
	}
	if ch != nil {
		p.keys = append(p.keys, key)
		p.waits = append(p.waits, ch)
	}
}

// flush waits until every notification sent has been written, or
// progressWait passes.
func (p *progressReporter) flush() {
	if p == nil || len(p.waits) == 0 {
		return
	}
	defer p.tracker.forget(p.keys...)
	timer := time.NewTimer(progressWait)
	defer timer.Stop()
	for _, ch := range p.waits {
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-p.ctx.Done():
			return
		}
	}
}
