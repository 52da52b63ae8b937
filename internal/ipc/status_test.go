package ipc

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// A watch's status updates go only to clients that say they take them
// (every Client does); a client older than them, which would take one for
// a session's change with an empty session, gets the sessions' changes
// alone.
func TestWatchStatusesOnlyToClientsThatTakeThem(t *testing.T) {
	f := newFake(t)
	srv := serve(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates, err := dial(t, srv.path).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := rawDial(t, srv.path)
	old.conn.Write([]byte(`{"v":2,"method":"watch"}` + "\n"))
	if r := old.reply(); !r.OK {
		t.Fatalf("the old client's watch: %+v", r)
	}
	testkit.WaitFor(t, 5*time.Second, "both watches to reach the service", func() bool { return f.InFlight() == 2 })
	f.Publish(api.Update{Kind: api.StatusChanged, Status: &api.Status{Server: "s", Problem: "journal full"}})
	f.Publish(api.Update{Kind: api.SessionChanged, Session: api.Session{Pane: "%1", State: api.Idle}})

	if u := recv(t, updates); u.Kind != api.StatusChanged || u.Status == nil || u.Status.Problem != "journal full" {
		t.Fatalf("the client's first update: %+v", u)
	}
	if u := recv(t, updates); u.Kind != api.SessionChanged || u.Session.Pane != "%1" {
		t.Fatalf("the client's second update: %+v", u)
	}
	var item struct {
		Result api.Update `json:"result"`
	}
	if err := json.Unmarshal(old.line(), &item); err != nil {
		t.Fatal(err)
	}
	if item.Result.Kind != api.SessionChanged || item.Result.Session.Pane != "%1" {
		t.Fatalf("the old client got %+v first, want the session's change", item.Result)
	}
}
