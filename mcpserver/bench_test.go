package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// auditedService is the fake service writing its audit entries to a real
// audit log, as system3 serve does.
type auditedService struct {
	*monitortest.Service
	log *audit.Log
}

func (a auditedService) Audit(ctx context.Context, e api.AuditEntry) error { return a.log.Write(e) }

// benchFleet is a registry of 50 agent panes in the mix system3 bench
// runs: a quarter streaming, a quarter on a permission prompt, half idle,
// most with task progress, plus a few shells.
func benchFleet() []api.Session {
	var out []api.Session
	for i := range 50 {
		s := api.Session{
			Pane: fmt.Sprintf("%%%d", i+1), Session: fmt.Sprintf("agent-%02d", i), Window: "main",
			Target: fmt.Sprintf("agent-%02d:0.0", i), Agent: "claude", Command: "claude",
			Since: t0, Updated: t0.Add(time.Duration(i) * time.Second), Options: []string{}, Height: 40, Width: 160,
			State: api.Idle,
		}
		switch i % 4 {
		case 0:
			s.State = api.Working
			s.Evidence = api.Evidence{Source: "screen", Rule: "claude.spinner", Lines: []string{"✢ Running… (esc to interrupt)"}}
		case 1:
			s.State, s.Kind, s.Question = api.AwaitingInput, "permission", "Do you want to proceed?"
			s.Options = []string{"Yes", "Yes, and don't ask again for this command", "No, and tell Claude what to do differently"}
			s.Evidence = api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{" Bash command", "   ./stream.sh", " Do you want to proceed?"}}
		default:
			s.Evidence = api.Evidence{Source: "screen", Rule: "claude.idle", Lines: []string{"> "}}
		}
		if i%3 != 2 {
			s.TaskList = fmt.Sprintf("PRD-%02d", i)
			s.Tasks = &api.TaskProgress{Completed: i % 5, Total: 5, InProgress: []string{"Implement the feature"}}
		}
		out = append(out, s)
	}
	for i := range 3 {
		out = append(out, api.Session{Pane: fmt.Sprintf("%%%d", 100+i), Session: "shells", Window: "w", Target: fmt.Sprintf("shells:%d.0", i),
			Agent: "shell", Command: "bash", State: api.Unknown, Since: t0, Updated: t0, Options: []string{}})
	}
	api.SortSessions(out)
	return out
}

// fleetKind is the registry a benchmark's server watches.
type fleetKind int

const (
	// fleetStill is benchFleet, the same at every call.
	fleetStill fleetKind = iota
	// fleetPrinting is benchFleet whose working agents were captured
	// between any two calls: their last line and capture time moved on,
	// as in a fleet whose agents print.
	fleetPrinting
	// fleetEmpty has no pane at all: what a call costs with an answer of
	// a few hundred bytes.
	fleetEmpty
)

// printingService is the fake service whose every snapshot shows the
// working panes captured since the last one.
type printingService struct {
	auditedService
	captures atomic.Int64
}

func (p *printingService) Snapshot(ctx context.Context) (api.Snapshot, error) {
	snap, err := p.auditedService.Snapshot(ctx)
	n := p.captures.Add(1)
	snap.Sessions = slices.Clone(snap.Sessions)
	for i, s := range snap.Sessions {
		if s.State == api.Working {
			snap.Sessions[i].Updated = s.Updated.Add(time.Duration(n) * 80 * time.Millisecond)
			snap.Sessions[i].LastLine = fmt.Sprintf("⎿ line %d of the build's output", n)
		}
	}
	return snap, err
}

func benchServer(b *testing.B) *Server { return benchServerOf(b, fleetStill) }

func benchServerOf(b *testing.B, kind fleetKind) *Server {
	b.Helper()
	f := monitortest.NewService(b, monitortest.Ticking(t0))
	f.SetTaskLists([]api.TaskListDoc{})
	if kind == fleetEmpty {
		f.SetSnapshot(api.Snapshot{Server: "tmux -S /tmp/bench/tmux.sock", Running: true, Taken: t0, Sessions: []api.Session{}})
	} else {
		f.SetSnapshot(api.Snapshot{Server: "tmux -S /tmp/bench/tmux.sock", Running: true, Taken: t0, Sessions: benchFleet()})
		for i := range 12 {
			raise(b, f, fmt.Sprintf("%%%d", 4*i+2), fmt.Sprintf("agent-%02d", 4*i+1), "awaiting_input")
		}
	}
	var svc api.Service = auditedService{Service: f, log: audit.Open(b.TempDir())}
	if kind == fleetPrinting {
		svc = &printingService{auditedService: svc.(auditedService)}
	}
	s, err := New(backend.New(svc, backend.Parts{}), Options{Version: "v0.0.0-bench", Started: t0})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// reportCPU, deferred at a benchmark's start, reports the process's CPU
// time (user and system, every goroutine: an in-process client's and the
// garbage collector's too) per operation as cpu-ns/op.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() { b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op") }
}

// benchHandler calls tool's handler alone with args.
func benchHandler(b *testing.B, kind fleetKind, tool string, args map[string]any) {
	s := benchServerOf(b, kind)
	h := toolHandler(b, s, tool)
	ctx := WithOrigin(context.Background(), "bench")
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		res, err := h(ctx, req)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkStatusResponseEncoding is what mcp-go does with a status
// answer that is already encoded (the same bytes as the last call's):
// the JSON-RPC response around it, encoded as its Streamable HTTP
// transport writes a plain JSON response (json.NewEncoder(w).Encode).
// CallToolResult.MarshalJSON builds a map and marshals it, and
// encoding/json checks and compacts what every MarshalJSON returns, so
// each byte of the answer is scanned again at each level. No call can
// cost less than this.
func BenchmarkStatusResponseEncoding(b *testing.B) {
	h := toolHandler(b, benchServerOf(b, fleetStill), "status")
	req := mcp.CallToolRequest{}
	req.Params.Name = "status"
	res, err := h(WithOrigin(context.Background(), "bench"), req)
	if err != nil || res.IsError {
		b.Fatal(err, res)
	}
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(int64(7)), res)
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(resp); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		buf.Reset()
		if err := json.NewEncoder(&buf).Encode(resp); err != nil {
			b.Fatal(err)
		}
	}
}

// toolHandler is the handler of s's tool named name.
func toolHandler(b *testing.B, s *Server, name string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for _, d := range s.AllTools() {
		if d.Tool.Name == name {
			return d.Handler
		}
	}
	b.Fatalf("no tool %q", name)
	return nil
}

// BenchmarkStatusHandler is the status tool's handler alone.
func BenchmarkStatusHandler(b *testing.B) { benchHandler(b, fleetStill, "status", nil) }

// BenchmarkStatusHandlerPrinting is the status handler while the
// working agents print between calls.
func BenchmarkStatusHandlerPrinting(b *testing.B) { benchHandler(b, fleetPrinting, "status", nil) }

// BenchmarkListSessionsHandler is the list_sessions handler alone.
func BenchmarkListSessionsHandler(b *testing.B) { benchHandler(b, fleetStill, "list_sessions", nil) }

// BenchmarkStatusHTTP is one status call as an MCP client makes it: a
// JSON-RPC POST on an initialized Streamable HTTP session, through the
// guard, mcp-go's dispatch, hooks, the handler and the audit log.
func BenchmarkStatusHTTP(b *testing.B) { benchHTTP(b, fleetStill, "status", `orchestrators`) }

// BenchmarkStatusHTTPPrinting is BenchmarkStatusHTTP while the working
// agents print between calls.
func BenchmarkStatusHTTPPrinting(b *testing.B) {
	benchHTTP(b, fleetPrinting, "status", `orchestrators`)
}

// BenchmarkStatusHTTPNoPanes is BenchmarkStatusHTTP with no pane watched:
// the cost of a call apart from its answer's size.
func BenchmarkStatusHTTPNoPanes(b *testing.B) { benchHTTP(b, fleetEmpty, "status", `orchestrators`) }

// BenchmarkListSessionsHTTP is one list_sessions call, as
// BenchmarkStatusHTTP.
func BenchmarkListSessionsHTTP(b *testing.B) { benchHTTP(b, fleetStill, "list_sessions", `sessions`) }

// BenchmarkListSessionsHTTPPrinting is BenchmarkListSessionsHTTP while
// the working agents print between calls (their last lines change).
func BenchmarkListSessionsHTTPPrinting(b *testing.B) {
	benchHTTP(b, fleetPrinting, "list_sessions", `sessions`)
}

// benchHTTP calls tool with no arguments over Streamable HTTP; every
// answer must contain want.
func benchHTTP(b *testing.B, kind fleetKind, tool, want string) {
	s := benchServerOf(b, kind)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + EndpointPath
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	do := func(body, session string) (*http.Response, string, error) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp, string(data), err
	}
	resp, _, err := do(initBody, "")
	if err != nil {
		b.Fatal(err)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		b.Fatal("no session id")
	}
	if _, _, err := do(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); err != nil {
		b.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		resp, body, err := do(call, session)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, `"isError":true`) {
			b.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
	}
}
