package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// wakes lists the open wakes with id, status, age, reason and session,
// and says how many need a person in the words every view uses; --all adds
// the resolved and acknowledged ones, saying how each was resolved.
func TestWakesCommand(t *testing.T) {
	f := useFake(t)
	auth := f.Raise(t, monitortest.WakeAuth)
	docs := f.Raise(t, monitortest.WakeDocs)
	hb := f.Raise(t, api.Wake{Reason: api.ReasonHeartbeat, SuggestedAction: "Nothing needed attention."})
	if err := f.Store.Resolve(docs.Key, "the agent moved on (now working)"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := invoke(t, nil, "wakes")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"ID", "STATUS", auth.ID + "  open", "awaiting_input", "orch-auth %3", hb.ID, "1 wake needs a person"} {
		if !strings.Contains(out, want) {
			t.Errorf("wakes lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, docs.ID) {
		t.Errorf("wakes lists the resolved wake:\n%s", out)
	}
	code, out, _ = invoke(t, nil, "wakes", "--all")
	if code != 0 || !strings.Contains(out, docs.ID+"  resolved") || !strings.Contains(out, "(the agent moved on (now working))") || !strings.Contains(out, "1 wake needs a person") {
		t.Fatalf("wakes --all: exit %d\n%s", code, out)
	}
	code, out, _ = invoke(t, nil, "wakes", "--all", "--json", "--reason", "error_loop_detected")
	var evs []api.Wake
	if code != 0 || json.Unmarshal([]byte(out), &evs) != nil || len(evs) != 1 || evs[0].ID != docs.ID || !evs[0].Resolved {
		t.Fatalf("wakes --json: exit %d\n%s", code, out)
	}
	f.Store.AckAll("cli")
	code, out, _ = invoke(t, nil, "wakes")
	if code != 0 || !strings.Contains(out, "no wakes;") {
		t.Fatalf("no wakes: exit %d\n%s", code, out)
	}
}
