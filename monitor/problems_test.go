package monitor

import (
	"context"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// Problems other parts of the process report (notification deliveries)
// show in the snapshot, beside the monitor's own, until they clear.
func TestSetProblemShowsInSnapshot(t *testing.T) {
	h := newHarness(t, nil)
	problem := func() string {
		snap, err := h.sup.Snapshot(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return snap.Problem
	}
	if p := problem(); p != "" {
		t.Fatalf("problem = %q", p)
	}
	h.sup.SetProblem("notify", "notifications: ntfy delivery failing")
	h.sup.SetProblem("a-other", "other trouble")
	if p := problem(); p != "other trouble; notifications: ntfy delivery failing" {
		t.Fatalf("problem = %q", p)
	}
	h.sup.SetProblem("notify", "")
	h.sup.SetProblem("a-other", "")
	if p := problem(); p != "" {
		t.Fatalf("problem after clearing = %q", p)
	}
}

// The registry's status (the server's state and the problem) reaches
// watchers as StatusChanged updates when it changes, never otherwise: the
// server going away is told before its panes leave, and a problem set or
// cleared is told at once. No such update carries a session.
func TestStatusIsPushedWhenItChanges(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	ctx, cancel := context.WithCancel(context.Background())
	updates, _ := h.sup.Watch(ctx)
	defer func() {
		cancel()
		for range updates {
		}
	}()
	// drain returns the updates published so far.
	drain := func() []api.Update {
		var out []api.Update
		for len(updates) > 0 {
			out = append(out, <-updates)
		}
		return out
	}
	// statuses returns the statuses published so far, checking that they
	// carry no session.
	statuses := func() []api.Status {
		t.Helper()
		var out []api.Status
		for _, u := range drain() {
			if u.Kind != api.StatusChanged {
				continue
			}
			if u.Status == nil || u.Session.Pane != "" {
				t.Fatalf("status update %+v", u)
			}
			out = append(out, *u.Status)
		}
		return out
	}
	one := func(what string) api.Status {
		t.Helper()
		got := statuses()
		if len(got) != 1 {
			t.Fatalf("%s: statuses %+v, want one", what, got)
		}
		return got[0]
	}
	h.step()
	if got := statuses(); len(got) != 0 {
		t.Fatalf("nothing changed: %+v", got)
	}

	h.tm.err = tmux.ErrNoServer
	h.step()
	got := drain()
	if len(got) != 2 || got[0].Kind != api.StatusChanged || got[1].Kind != api.SessionRemoved || got[1].Session.Pane != "%1" {
		t.Fatalf("server gone: %+v, want its status, then its pane removed", got)
	}
	if st := *got[0].Status; st.Running || st.Server != "test" || !strings.Contains(st.Problem, "no tmux server is running") {
		t.Fatalf("server gone: %+v", st)
	}
	h.step()
	if got := statuses(); len(got) != 0 {
		t.Fatalf("the server still gone: %+v", got)
	}

	h.sup.SetProblem("notify", "notifications: ntfy delivery failing")
	if st := one("a problem added"); !strings.Contains(st.Problem, "no tmux server") || !strings.Contains(st.Problem, "ntfy delivery failing") {
		t.Fatalf("a problem added: %+v", st)
	}
	h.sup.SetRulesProblem("rules.yaml: line 3: bad pattern")
	if st := one("a rules problem"); !strings.Contains(st.Problem, "rules.yaml") {
		t.Fatalf("a rules problem: %+v", st)
	}
	h.tm.err = nil
	h.step()
	st := one("server back")
	if !st.Running || strings.Contains(st.Problem, "no tmux server") || !strings.Contains(st.Problem, "ntfy") {
		t.Fatalf("server back: %+v", st)
	}
	if snap, _ := h.sup.Snapshot(ctx); snap.Status() != st {
		t.Fatalf("the snapshot says %+v, the last update %+v", snap.Status(), st)
	}
	h.sup.SetProblem("notify", "")
	h.sup.SetRulesProblem("")
	if got := statuses(); len(got) != 2 || got[1] != (api.Status{Server: "test", Running: true}) {
		t.Fatalf("all clear: %+v", got)
	}
	h.step()
	if got := statuses(); len(got) != 0 {
		t.Fatalf("nothing changed again: %+v", got)
	}
}
