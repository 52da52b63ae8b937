package mcpserver

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// TestStatusFollowsChanges: status answers again with the same bytes only
// while nothing it reports changed; a new state, a wake, an ack or a
// second of uptime shows at the next call.
func TestStatusFollowsChanges(t *testing.T) {
	f := fixture(t)
	var secs atomic.Int64
	clock := func() time.Time { return t0.Add(90*time.Minute + time.Duration(secs.Load())*time.Second) }
	s := newServer(t, f, Options{Clock: clock})
	c := inProcess(t, s, "cache-test")

	status := func() (string, map[string]any) {
		t.Helper()
		res, out := call(t, c, "status", nil)
		if res.IsError {
			t.Fatalf("status: %s", text(res))
		}
		return text(res), out
	}
	first, out := status()
	if again, _ := status(); again != first {
		t.Fatalf("nothing changed, yet status differs:\n%s\n%s", first, again)
	}
	if out["needs_person"] != 0.0 || out["uptime_seconds"] != 5400.0 {
		t.Fatalf("unexpected first status: %s", first)
	}

	ss := fixtureSessions()
	ss[1].State = api.AwaitingInput
	ss[1].Kind, ss[1].Question = "permission", "Run the migration?"
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Taken: t0, Sessions: ss})
	_, out = status()
	if bs := out["by_status"].(map[string]any); bs["blocked"] != 2.0 {
		t.Fatalf("state change not reported: by_status %v", bs)
	}
	if !slices.ContainsFunc(out["orchestrators"].([]any), func(o any) bool {
		return o.(map[string]any)["question"] == "Run the migration?"
	}) {
		t.Fatalf("new question not reported: %v", out["orchestrators"])
	}

	ev := raise(t, f, "%2", "orch-db", "awaiting_input")
	if _, out = status(); out["needs_person"] != 1.0 {
		t.Fatalf("wake not counted: %v", out["needs_person"])
	}
	if _, err := f.Ack(t.Context(), ev.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, out = status(); out["needs_person"] != 0.0 {
		t.Fatalf("ack not seen: %v", out["needs_person"])
	}

	secs.Add(1)
	if _, out = status(); out["uptime_seconds"] != 5401.0 {
		t.Fatalf("uptime not advanced: %v", out["uptime_seconds"])
	}
}

// TestReadsAreEncodedOncePerChange: status and list_sessions encode an
// answer once per change of what it reports, and the calls in between
// answer with the very same bytes. A capture that only moved an agent's
// last line and capture time changes nothing status reports; it does
// change list_sessions' rows.
func TestReadsAreEncodedOncePerChange(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{Clock: func() time.Time { return t0.Add(time.Hour) }})
	handlers := map[string]server.ToolHandlerFunc{}
	for _, d := range s.AllTools() {
		handlers[d.Tool.Name] = d.Handler
	}
	ctx := WithOrigin(t.Context(), "test")
	read := func(tool string) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		res, err := handlers[tool](ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, text(res))
		}
		return res
	}
	// reused: b's JSON is a's, not an equal encoding made again.
	reused := func(a, b *mcp.CallToolResult) bool {
		return len(a.RawStructuredContent) > 0 && &a.RawStructuredContent[0] == &b.RawStructuredContent[0] && text(a) == text(b)
	}

	status, sessions := read("status"), read("list_sessions")
	if !reused(status, read("status")) || !reused(sessions, read("list_sessions")) {
		t.Fatal("nothing changed, yet an answer was encoded again")
	}

	ss := fixtureSessions()
	ss[1].LastLine, ss[1].Updated = "✢ Compiling the world", ss[1].Updated.Add(time.Second)
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Taken: t0, Sessions: ss})
	if again := read("status"); !reused(status, again) {
		t.Errorf("a capture that changed nothing status reports made a new answer:\n%s\n%s", text(status), text(again))
	}
	if again := read("list_sessions"); reused(sessions, again) || !strings.Contains(text(again), "✢ Compiling the world") {
		t.Errorf("list_sessions does not show the new last line: %s", text(again))
	}

	ss[1].State, ss[1].Since = api.Idle, ss[1].Updated
	f.SetSnapshot(api.Snapshot{Server: "tmux -L test", Running: true, Taken: t0, Sessions: ss})
	if again := read("status"); reused(status, again) || !strings.Contains(text(again), `"idle":1`) {
		t.Errorf("status does not show the new state: %s", text(again))
	}
}

// TestStatusDocEqualSeesEveryField: a change of any field of the status
// document, or of any orchestrator in it, makes statusDoc.equal false, so
// status never answers with the bytes of an older document.
func TestStatusDocEqualSeesEveryField(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	base := statusDoc{
		Version: "v1", Started: at, Uptime: "1s", UptimeSeconds: 1, TmuxServer: "tmux", Problem: "p",
		NeedsPerson: 1, ByStatus: map[string]int{"active": 1}, ByState: map[string]int{"idle": 1}, OtherPanes: 1,
		Orchestrators: []orchestrator{{Name: "a", Target: "a:0.0", Pane: "%1", Agent: "claude", Status: "active", State: "idle",
			Kind: "k", Question: "q", ResetsAt: at, Tasks: "1/2", NeedsPerson: 1, Since: at}},
		Hosts: []hostRow{{Name: "web1", State: "connected", LastSeen: at, Error: "e", Sessions: 1, NeedsPerson: 1}},
		Next:  "n", Untrusted: "u",
	}
	equalSeesEveryField(t, base, func(d statusDoc) statusDoc {
		d.ByStatus, d.ByState = maps.Clone(d.ByStatus), maps.Clone(d.ByState)
		d.Orchestrators, d.Hosts = slices.Clone(d.Orchestrators), slices.Clone(d.Hosts)
		return d
	}, (*statusDoc).equal)
}

// TestSessionsDocEqualSeesEveryField: list_sessions never answers with
// the bytes of an older list either, whichever field of it or of a row
// changed.
func TestSessionsDocEqualSeesEveryField(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	base := sessionsDoc{
		Count: 1, Hosts: []hostRow{{Name: "web1", State: "connected", LastSeen: at, Error: "e", Sessions: 1, NeedsPerson: 1}},
		Sessions: []sessionRow{{Host: "h", Name: "a", Target: "a:0.0", Pane: "%1", Agent: "claude", Status: "blocked", State: "awaiting_input",
			Kind: "k", Question: "q", About: "ab", Options: []string{"Yes", "No"}, Prompt: "p", ResetsAt: at, Tasks: "1/2", TaskList: "L",
			LastLine: "l", Hint: "h", Tokens: 1, CostUSD: 0.5, Since: at, Updated: at}},
		Untrusted: "u", Watched: 2,
	}
	equalSeesEveryField(t, base, func(d sessionsDoc) sessionsDoc {
		d.Hosts, d.Sessions = slices.Clone(d.Hosts), slices.Clone(d.Sessions)
		d.Sessions[0].Options = slices.Clone(d.Sessions[0].Options)
		return d
	}, (*sessionsDoc).equal)
}

// equalSeesEveryField checks that equal tells base from a copy of it
// (clone copies what the change would share) in which one field changed:
// any field of the document, and any field of the first element of each
// of its slices of structs, which then gets an element more too.
func equalSeesEveryField[D any](t *testing.T, base D, clone func(D) D, equal func(a, b *D) bool) {
	t.Helper()
	if d := clone(base); !equal(&base, &d) {
		t.Fatal("a copy is not equal")
	}
	typ := reflect.TypeFor[D]()
	for i := range typ.NumField() {
		d := clone(base)
		v := reflect.ValueOf(&d).Elem().Field(i)
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
			et := v.Type().Elem()
			for j := range et.NumField() {
				d := clone(base)
				mutate(t, typ.Field(i).Name+"."+et.Field(j).Name, reflect.ValueOf(&d).Elem().Field(i).Index(0).Field(j))
				if equal(&base, &d) {
					t.Errorf("equal misses a change of %s.%s", typ.Field(i).Name, et.Field(j).Name)
				}
			}
			v.Set(reflect.Append(v, reflect.Zero(et)))
		} else {
			mutate(t, typ.Field(i).Name, v)
		}
		if equal(&base, &d) {
			t.Errorf("equal misses a change of %s", typ.Field(i).Name)
		}
	}
}

// mutate changes v to another value of its type.
func mutate(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.5)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("other"), reflect.ValueOf(1))
		v.Set(m)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	default:
		tm, ok := v.Interface().(time.Time)
		if !ok {
			t.Fatalf("%s is a %s: teach statusDoc.equal and this test about it", name, v.Type())
		}
		v.Set(reflect.ValueOf(tm.Add(time.Second)))
	}
}
