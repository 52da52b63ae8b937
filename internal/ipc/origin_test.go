//go:build linux

package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

// selfOrigin is the verified part of the origin the server derives for
// this test process.
func selfOrigin(t *testing.T) string {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("socket:pid=%d,exe=%s", os.Getpid(), exe)
}

// A client cannot choose the origin the service records: the server puts
// the peer's pid and executable first, and keeps what the client claimed
// only as its quoted claim.
func TestSocketOriginIsThePeers(t *testing.T) {
	f := newFake(t)
	f.SetSnapshot(testSnapshot)
	c := dial(t, serve(t, f).path)
	ctx := context.Background()
	me := selfOrigin(t)
	target := api.Target{Session: "orch-auth"}
	calls := []struct {
		method string
		call   func(origin string) error
	}{
		{"inject", func(o string) error {
			_, err := c.Inject(ctx, api.InjectRequest{Target: target, Text: "hi", Origin: o})
			return err
		}},
		{"keys", func(o string) error {
			_, err := c.SendKeys(ctx, api.KeysRequest{Target: target, Keys: []string{"Enter"}, Origin: o})
			return err
		}},
		{"interrupt", func(o string) error {
			_, err := c.Interrupt(ctx, api.InterruptRequest{Target: target, Origin: o})
			return err
		}},
		{"link", func(o string) error {
			_, err := c.Link(ctx, api.LinkRequest{Target: target, TaskList: "PRD-AUTH", Origin: o})
			return err
		}},
	}
	for _, claim := range []struct{ sent, want string }{
		{"mcp:supervisor-claude", me + ` claims "mcp:supervisor-claude"`},
		{"", me},
		{"tui\x1b[2J\n", me + ` claims "tui[2J"`},
		{strings.Repeat("x", 300), me + ` claims "` + strings.Repeat("x", maxClaim) + `…"`},
	} {
		for _, tt := range calls {
			before := len(f.Calls())
			if err := tt.call(claim.sent); err != nil {
				t.Fatalf("%s: %v", tt.method, err)
			}
			got := f.Calls()[before:]
			if len(got) != 1 || got[0].Method != tt.method || got[0].Origin != claim.want {
				t.Fatalf("%s claiming %q: recorded %+v, want origin %q", tt.method, claim.sent, got, claim.want)
			}
		}
	}
}

// The audit cannot be written over the socket, except a client's record
// of what it did itself (an MCP tool call, a spawn, a stop), and that
// under the origin and time the server gives it.
func TestSocketAuditIsRestricted(t *testing.T) {
	f := newFake(t)
	c := dial(t, serve(t, f).path)
	ctx := context.Background()
	for _, action := range []string{"inject", "keys", "answer", "interrupt", "link", "hook", "", "made-up"} {
		err := c.Audit(ctx, api.AuditEntry{Origin: "tui", Action: action, Target: "orch-auth", Text: "rm -rf /", Sent: true, Checked: true})
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "records what it sends into panes itself") {
			t.Fatalf("audit %q over the socket: %v, want refused", action, err)
		}
	}
	if got := f.AuditEntries(); len(got) != 0 {
		t.Fatalf("refused entries were recorded: %+v", got)
	}
	before := time.Now()
	if err := c.Audit(ctx, api.AuditEntry{Time: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), Origin: "mcp:supervisor-claude", Action: "tool_call", Tool: "status"}); err != nil {
		t.Fatal(err)
	}
	got := f.AuditEntries()
	if len(got) != 1 || got[0].Origin != selfOrigin(t)+` claims "mcp:supervisor-claude"` || got[0].Time.Before(before) || got[0].Tool != "status" {
		t.Fatalf("recorded %+v", got)
	}
}

// A hook event carries the peer's pid as the kernel told it, whatever the
// client sent: Sender never travels in JSON.
func TestSocketHookCarriesThePeer(t *testing.T) {
	f := newFake(t)
	c := dial(t, serve(t, f).path)
	ev := api.HookEvent{Name: api.Stop, Pane: "%1", Sender: api.HookSender{Via: "", PID: 1, Exe: "/claimed"}}
	if _, err := c.Hook(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Readlink("/proc/self/exe")
	got := f.Hooks()
	if len(got) != 1 || got[0].Sender != (api.HookSender{Via: api.ViaSocket, PID: os.Getpid(), Exe: exe}) {
		t.Fatalf("received %+v", got)
	}
}

// A refused hook is told as such across the socket, so `system3 hook`
// does not spool it.
func TestHookRefusedCrossesTheSocket(t *testing.T) {
	f := newFake(t)
	f.Fail("hook", fmt.Errorf("%w: process 1 does not run in pane %%1", api.ErrHookRefused))
	c := dial(t, serve(t, f).path)
	_, err := c.Hook(context.Background(), api.HookEvent{Name: api.Stop, Pane: "%1"})
	if !errors.Is(err, api.ErrHookRefused) {
		t.Fatalf("err = %v", err)
	}
}

// Deleting learnings over the socket is asked as the peer, the client's
// name kept only as its claim: the policy judges, and the audit names, the
// process that asked.
func TestSocketDeleteLearningsIsThePeers(t *testing.T) {
	b := facadetest.Over(newFake(t))
	c := dial(t, serve(t, b).path)
	items, err := c.DeleteLearnings(context.Background(), api.LearnDeleteRequest{IDs: []int64{3, 7}, By: "cli"})
	if err != nil || len(items) != 2 || items[1].ID != 7 {
		t.Fatalf("delete = %+v, %v", items, err)
	}
	if got := b.Learn.Deleted(); len(got) != 1 || !slices.Equal(got[0], []int64{3, 7}) {
		t.Fatalf("the store was asked to delete %v", got)
	}
	peer := selfOrigin(t) + ` claims "cli"`
	if got := b.Fake.AuditEntries(); len(got) != 2 || got[0].Origin != peer || got[1].Origin != peer {
		t.Errorf("audited %+v, want two deletions by %s", got, peer)
	}
}
