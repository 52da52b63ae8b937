package remote

import (
	"context"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// The first wake of any host comes back named HOST:SESSION, with a cursor
// that moves that host's seq on and keeps the others'; a session pattern
// HOST:GLOB selects the hosts.
func TestWaitAnyLocal(t *testing.T) {
	var asked api.WakeFilter
	w := WaitAny{
		Local: func(ctx context.Context, f api.WakeFilter) (api.Wake, error) {
			asked = f
			return api.Wake{ID: "7", Seq: 13, Session: "orch", Reason: api.ReasonAwaitingInput}, nil
		},
		Hosts: []Host{{Name: api.LocalHost}},
	}
	hw, links, err := w.Wait(context.Background(), api.WakeFilter{Session: "loc*:orch"}, api.HostCursor{api.LocalHost: 12, "web1": 40})
	if err != nil || len(links) != 0 {
		t.Fatalf("Wait: %v, %d links", err, len(links))
	}
	if hw.Host != api.LocalHost || hw.Session != "local:orch" || hw.Cursor != "local:13,web1:40" {
		t.Fatalf("wake %+v", hw)
	}
	if asked.Session != "orch" || asked.SinceSeq != 12 {
		t.Fatalf("local asked with %+v, want session orch from seq 12", asked)
	}
	if _, _, err := w.Wait(context.Background(), api.WakeFilter{Session: "web*:orch"}, nil); err == nil || !strings.Contains(err.Error(), "no host matches") {
		t.Fatalf("a pattern matching no host: %v", err)
	}
}
