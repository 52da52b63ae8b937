// Package fakehttp is the plumbing of the fake HTTP APIs that real agent
// CLIs are pointed at, offline: a server on 127.0.0.1 that records what it
// receives and cuts off slow streams when closed, and server-sent events.
// The tests' harnesses and system3's demo serve their fakes with it; it
// imports no test package, so the system3 binary can carry a fake.
package fakehttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// HTTPFake is the plumbing of a fake HTTP API: a server on 127.0.0.1 at a
// random port, the requests it received, recorded as the harness's type R,
// and a Close that cuts off streams still being sent. The harness's handler
// decides the answers.
type HTTPFake[R any] struct {
	// URL is the base URL, e.g. "http://127.0.0.1:40123", without a trailing slash.
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	requests []R
	closed   chan struct{}
}

// Serve serves h on 127.0.0.1 at a random port until Close. errorLog gets
// the server's own errors (nil: the log package's standard logger, which
// writes to stderr).
func Serve[R any](h http.Handler, errorLog *log.Logger) (*HTTPFake[R], error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Config.ErrorLog = errorLog
	srv.Start()
	return &HTTPFake[R]{URL: srv.URL, srv: srv, closed: make(chan struct{})}, nil
}

// record appends a request and returns its index, for update. Recording a
// request when it arrives keeps arrival order: a slow stream is listed
// before the requests that came while it was sent.
func (f *HTTPFake[R]) record(r R) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r)
	return len(f.requests) - 1
}

// update replaces the request record numbered i.
func (f *HTTPFake[R]) update(i int, r R) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[i] = r
}

// Answer records rec when a request arrives, has answer write the reply
// (filling in rec as it learns what the request is) and records rec again
// when it is done. It records rec as it stands also at the first byte or
// header of the reply: a client that has read the answer can never find the
// request on record without the kind, prompt or rule the answer came from.
func (f *HTTPFake[R]) Answer(w http.ResponseWriter, rec *R, answer func(w http.ResponseWriter)) {
	i := f.record(*rec)
	tw := &trackedWriter{ResponseWriter: w, commit: func() { f.update(i, *rec) }}
	answer(tw)
	f.update(i, *rec)
}

// trackedWriter calls commit before the first header or byte it passes on.
type trackedWriter struct {
	http.ResponseWriter
	commit func()
	done   bool
}

func (w *trackedWriter) first() {
	if !w.done {
		w.done = true
		w.commit()
	}
}

func (w *trackedWriter) WriteHeader(code int) {
	w.first()
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackedWriter) Write(b []byte) (int, error) {
	w.first()
	return w.ResponseWriter.Write(b)
}

// Flush passes on a flush, for streamed answers.
func (w *trackedWriter) Flush() {
	w.first()
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *trackedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Requests returns a copy of every request recorded so far, oldest first.
func (f *HTTPFake[R]) Requests() []R {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]R(nil), f.requests...)
}

// Close stops the server, cutting off streams that are still being sent.
// Calling it again does nothing.
func (f *HTTPFake[R]) Close() {
	f.mu.Lock()
	select {
	case <-f.closed:
		f.mu.Unlock()
		return
	default:
		close(f.closed)
	}
	f.mu.Unlock()
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Closed is closed when Close is called.
func (f *HTTPFake[R]) Closed() <-chan struct{} { return f.closed }

// Sleep waits d, or reports false if the fake is closing.
func (f *HTTPFake[R]) Sleep(d time.Duration) bool {
	return SSE{Closed: f.closed}.Sleep(d)
}

// RequestLine is what Summary shows of one request.
type RequestLine struct {
	Time               time.Time
	Method, Path       string
	Status             int
	Kind, Rule, Prompt string
}

// Summary lists requests one a line, prompts cut at 60 runes, for failure
// messages.
func Summary[R any](reqs []R, line func(R) RequestLine) string {
	var b strings.Builder
	for i, req := range reqs {
		r := line(req)
		p := r.Prompt
		if rs := []rune(p); len(rs) > 60 {
			p = string(rs[:60]) + "…"
		}
		fmt.Fprintf(&b, "%3d %s %s %s %d kind=%s rule=%q prompt=%q\n",
			i, r.Time.Format("15:04:05.000"), r.Method, r.Path, r.Status, r.Kind, r.Rule, p)
	}
	return b.String()
}

// SSE writes server-sent events to W. Its waits end early when Closed (the
// fake is closing) or Gone (the client left, e.g. the request's context) is
// closed; either may be nil.
type SSE struct {
	W      http.ResponseWriter
	Closed <-chan struct{}
	Gone   <-chan struct{}
}

// Event writes one event named name with data as JSON, and flushes it.
func (s SSE) Event(name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(s.W, "event: %s\ndata: %s\n\n", name, b)
	if fl, ok := s.W.(http.Flusher); ok {
		fl.Flush()
	}
}

// Sleep waits d, or reports false if the fake is closing or the client left.
func (s SSE) Sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.Closed:
		return false
	case <-s.Gone:
		return false
	}
}

// SplitChunks cuts s into n pieces of about equal length, on rune
// boundaries; n below 2, or s of one rune or none, gives s whole.
func SplitChunks(s string, n int) []string {
	r := []rune(s)
	if n <= 1 || len(r) <= 1 {
		return []string{s}
	}
	n = min(n, len(r))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

// WriteJSON answers status with v as JSON and returns status.
func WriteJSON(w http.ResponseWriter, status int, v any) int {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return status
}
