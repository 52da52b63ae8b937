package mcpserver

import (
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/rules"
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
	ss[1].State = rules.AwaitingInput
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

// TestStatusDocEqualSeesEveryField: a change of any field of the status
// document, or of any orchestrator in it, makes statusDoc.equal false, so
// status never answers with the bytes of an older document.
func TestStatusDocEqualSeesEveryField(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	base := statusDoc{
		Version: "v1", Started: at, Uptime: "1s", UptimeSeconds: 1, TmuxServer: "tmux", Problem: "p",
		NeedsPerson: 1, ByStatus: map[string]int{"active": 1}, ByState: map[string]int{"idle": 1}, OtherPanes: 1,
		Orchestrators: []orchestrator{{Name: "a", Target: "a:0.0", Pane: "%1", Agent: "claude", Status: "active", State: "idle",
			Kind: "k", Question: "q", Tasks: "1/2", NeedsPerson: 1, Since: at, Updated: at}},
		Hosts: []hostRow{{Name: "web1", State: "connected", LastSeen: at, Error: "e", Sessions: 1, NeedsPerson: 1}},
		Next:  "n",
	}
	copyDoc := func() statusDoc {
		d := base
		d.ByStatus, d.ByState = maps.Clone(base.ByStatus), maps.Clone(base.ByState)
		d.Orchestrators = slices.Clone(base.Orchestrators)
		d.Hosts = slices.Clone(base.Hosts)
		return d
	}
	if d := copyDoc(); !base.equal(&d) {
		t.Fatal("a copy is not equal")
	}
	typ := reflect.TypeFor[statusDoc]()
	for i := range typ.NumField() {
		d := copyDoc()
		v := reflect.ValueOf(&d).Elem().Field(i)
		if v.Kind() == reflect.Slice {
			et := v.Type().Elem()
			for j := range et.NumField() {
				d := copyDoc()
				mutate(t, typ.Field(i).Name+"."+et.Field(j).Name, reflect.ValueOf(&d).Elem().Field(i).Index(0).Field(j))
				if base.equal(&d) {
					t.Errorf("equal misses a change of %s.%s", typ.Field(i).Name, et.Field(j).Name)
				}
			}
			d.Orchestrators = append(d.Orchestrators, orchestrator{})
		} else {
			mutate(t, typ.Field(i).Name, v)
		}
		if base.equal(&d) {
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
	default:
		tm, ok := v.Interface().(time.Time)
		if !ok {
			t.Fatalf("%s is a %s: teach statusDoc.equal and this test about it", name, v.Type())
		}
		v.Set(reflect.ValueOf(tm.Add(time.Second)))
	}
}
