package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

func TestAckOne(t *testing.T) {
	f := useFake(t)
	auth := f.Raise(t, monitortest.WakeAuth)
	docs := f.Raise(t, monitortest.WakeDocs)

	code, out, errOut := invoke(t, nil, "ack", auth.ID)
	if code != 0 || !strings.Contains(out, "acked "+auth.ID+" (awaiting_input, orch-auth %3) by cli at ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if ev, _ := f.Store.Get(auth.ID); !ev.Acked || ev.AckedBy != "cli" {
		t.Errorf("acked wake = %+v", ev)
	}
	if ev, _ := f.Store.Get(docs.ID); ev.Acked {
		t.Error("acked the other wake too")
	}
	if f.stops.Load() != 1 {
		t.Error("monitors not stopped")
	}

	// Twice is harmless and says who acked it first.
	f.Store.Ack(docs.ID, "tui")
	code, out, _ = invoke(t, nil, "ack", "--json", docs.ID)
	var ev api.Wake
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.ID != docs.ID || ev.AckedBy != "tui" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestAckAll(t *testing.T) {
	f := useFake(t)
	auth := f.Raise(t, monitortest.WakeAuth)
	docs := f.Raise(t, monitortest.WakeDocs)

	code, out, errOut := invoke(t, nil, "ack", "--all")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"acked " + auth.ID, "acked " + docs.ID + " (error_loop_detected, docs %5)", "acknowledged 2 wakes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := len(f.Store.Unacked()); n != 0 {
		t.Errorf("%d wakes still pending", n)
	}

	code, out, _ = invoke(t, nil, "ack", "--all")
	if code != 0 || out != "no pending wakes to acknowledge\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	code, out, _ = invoke(t, nil, "ack", "--all", "--json")
	if code != 0 || out != "[]\n" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestAckErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"w0000000099-zz"}, []string{`no wake "w0000000099-zz"`, "`system3 wakes`", "--all"}},
		{nil, []string{"give the ID of the wake to acknowledge", "--all"}},
		{[]string{"--all", "w1"}, []string{"not both"}},
		{[]string{"w1", "w2"}, []string{"give the ID"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			useFake(t)
			code, out, errOut := invoke(t, nil, append([]string{"ack"}, tt.args...)...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q", code, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q lacks %q", errOut, want)
				}
			}
		})
	}
}
