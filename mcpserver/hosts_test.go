package mcpserver

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// fakeHosts is host web1 (a fake service) and host down (disconnected,
// last seen at t0).
type fakeHosts struct {
	web1 *monitortest.Service
}

func (h fakeHosts) Report(ctx context.Context) []api.HostReport {
	snap, _ := h.web1.Snapshot(ctx)
	evs, _ := h.web1.Wakes(ctx, api.WakeFilter{})
	return []api.HostReport{
		{Name: "web1", Connected: true, LastSeen: time.Now(), Snapshot: snap, Unacked: evs},
		{Name: "down", LastSeen: t0, Err: errors.New("host down is down or unreachable: Connection refused")},
	}
}

func (h fakeHosts) WaitWake(ctx context.Context, f api.WakeFilter, since map[string]uint64, match func(string) bool) (api.HostWake, error) {
	if !match("web1") {
		<-ctx.Done()
		return api.HostWake{}, ctx.Err()
	}
	f.SinceSeq = since["web1"]
	ev, err := h.web1.WaitWake(ctx, f)
	return api.HostWake{Host: "web1", Wake: ev}, err
}

func (h fakeHosts) Ack(ctx context.Context, host, id, by string) (api.Wake, error) {
	if host != "web1" {
		return api.Wake{}, errors.New("no host " + host)
	}
	return h.web1.Ack(ctx, id, by)
}

// With hosts configured, status and list_sessions include the other
// hosts' sessions as HOST:SESSION and every host's connection (a
// disconnected one with when it was last seen); wait_for_wake returns
// another host's wake with a host_cursor that skips it next time, and
// ack_wake HOST:ID acknowledges it on that host.
func TestHostsInStatusListAndWait(t *testing.T) {
	local, web1 := fixture(t), fixture(t)
	s := newServer(t, local, Options{Hosts: fakeHosts{web1}})
	c := inProcess(t, s, "hosts-test")

	res, out := call(t, c, "status", nil)
	if res.IsError {
		t.Fatalf("status: %s", text(res))
	}
	hosts := out["hosts"].([]any)
	if len(hosts) != 3 {
		t.Fatalf("status hosts = %v", hosts)
	}
	down := hosts[2].(map[string]any)
	if hosts[0].(map[string]any)["name"] != "local" || down["name"] != "down" || down["state"] != "disconnected" ||
		down["last_seen"] != t0.Format(time.RFC3339) || !strings.Contains(down["error"].(string), "unreachable") {
		t.Errorf("status hosts = %v", hosts)
	}
	var names []string
	for _, o := range out["orchestrators"].([]any) {
		names = append(names, o.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "web1:orch-auth") || !slices.Contains(names, "orch-auth") || names[0] != "orch-auth" && names[0] != "web1:orch-auth" {
		t.Errorf("status orchestrators = %v; want both hosts', the blocked first", names)
	}
	if bs := out["by_status"].(map[string]any); bs["blocked"] != 2.0 {
		t.Errorf("by_status = %v; want both hosts' blocked agents counted", bs)
	}

	_, out = call(t, c, "list_sessions", map[string]any{"name": "web1:orch-*"})
	rows := out["sessions"].([]any)
	for _, r := range rows {
		if m := r.(map[string]any); m["host"] != "web1" || !strings.HasPrefix(m["name"].(string), "web1:orch-") || !strings.HasPrefix(m["target"].(string), "web1:") {
			t.Errorf("list_sessions web1:orch-* row %v", m)
		}
	}
	if len(rows) != 4 {
		t.Errorf("list_sessions web1:orch-* = %d rows, want 4", len(rows))
	}

	ev := raise(t, web1, "%1", "orch-auth", "awaiting_input")
	res, out = call(t, c, "wait_for_wake", map[string]any{"max_wait_seconds": 5})
	w, _ := out["wake"].(map[string]any)
	if res.IsError || out["status"] != "wake" || out["host"] != "web1" || w["session"] != "web1:orch-auth" {
		t.Fatalf("wait_for_wake: %s", text(res))
	}
	hc := out["host_cursor"].(string)
	if want := "web1:" + strconv.FormatUint(ev.Seq, 10); hc != want {
		t.Errorf("host_cursor %q, want %q", hc, want)
	}
	// The host cursor skips it.
	res, out = call(t, c, "wait_for_wake", map[string]any{"max_wait_seconds": 1, "host_cursor": hc})
	if res.IsError || out["status"] != "waiting" || out["host_cursor"] != hc {
		t.Fatalf("wait_for_wake past it: %s", text(res))
	}
	// A session glob of another host does not wait on this one.
	res, out = call(t, c, "wait_for_wake", map[string]any{"max_wait_seconds": 1, "session": "nohost:*"})
	if res.IsError || out["status"] != "waiting" {
		t.Fatalf("wait_for_wake nohost:*: %s", text(res))
	}
	res, out = call(t, c, "ack_wake", map[string]any{"id": "web1:" + ev.ID})
	if res.IsError || out["count"] != 1.0 {
		t.Fatalf("ack_wake web1:ID: %s", text(res))
	}
	if left, _ := web1.Wakes(t.Context(), api.WakeFilter{}); len(left) != 0 {
		t.Errorf("web1 still has unacked wakes %v", left)
	}
	if res, _ := callErr(c, "wait_for_wake", map[string]any{"max_wait_seconds": 1, "host_cursor": "web1"}); res == nil || !res.IsError {
		t.Errorf("a malformed host_cursor was accepted")
	}
}
