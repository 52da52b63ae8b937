package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/notifytest"
)

func TestDesktopOverDBus(t *testing.T) {
	addr := notifytest.PrivateBus(t)
	srv := notifytest.NewServer(t, addr)

	focused := make(chan string, 1)
	d := &Desktop{BusAddress: addr, GOOS: "linux", Focus: func(_ context.Context, pane string) error { focused <- pane; return nil }}
	defer d.Close()
	ev := api.Wake{ID: "w1", Reason: api.ReasonAwaitingInput, Session: "orch-billing", Pane: "%7",
		Question: "Do you want to proceed? <rm -rf & go>", Options: []string{"Yes", "No"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Send(ctx, ForWake(ev)); err != nil {
		t.Fatal(err)
	}
	n := srv.Next(t)
	if n.App != "system3" || n.Summary != "orch-billing %7: waiting for you" || n.Urgency != 2 {
		t.Errorf("notification = %+v", n)
	}
	if want := "Do you want to proceed? &lt;rm -rf &amp; go&gt;\n1. Yes\n2. No"; n.Body != want {
		t.Errorf("body = %q, want %q", n.Body, want)
	}
	if strings.Join(n.Actions, "|") != "default|Focus pane|focus|Focus pane" {
		t.Errorf("actions = %q", n.Actions)
	}
	// Clicking Focus switches the operator's client to the pane.
	srv.Click(t, n.ID, "focus")
	select {
	case p := <-focused:
		if p != "%7" {
			t.Errorf("focused %q, want %%7", p)
		}
	case <-ctx.Done():
		t.Fatal("the focus action did not reach Focus")
	}
	// A digest has no focus action.
	if err := d.Send(ctx, ForDigest([]api.Wake{ev, {ID: "w2", Reason: api.ReasonAPIError, Session: "x"}})); err != nil {
		t.Fatal(err)
	}
	n = srv.Next(t)
	if n.Summary != "system3: 2 wakes" || len(n.Actions) != 0 {
		t.Errorf("digest = %+v", n)
	}
}

func TestDesktopWithoutBusFails(t *testing.T) {
	d := &Desktop{BusAddress: "unix:path=/nonexistent/bus", GOOS: "linux"}
	t.Setenv("PATH", t.TempDir()) // no notify-send
	if err := d.Send(context.Background(), Sample()); err == nil || !strings.Contains(err.Error(), "notify-send is not installed") {
		t.Fatalf("err = %v", err)
	}
}

func TestOSCSequence(t *testing.T) {
	for _, tc := range []struct {
		kind  OSC
		tmux  bool
		title string
		body  string
		want  string
	}{
		{OSC9, false, "a: b", "q\x07\x1b]evil", "\x1b]9;a: b: q  ]evil\x07"},
		{OSC777, false, "t;x", "l1\nl2", "\x1b]777;notify;t,x;l1 · l2\x07"},
		{OSC9, true, "t", "", "\x1bPtmux;\x1b\x1b]9;t\x07\x1b\\"},
	} {
		if got := OSCSequence(tc.kind, tc.title, tc.body, tc.tmux); got != tc.want {
			t.Errorf("OSCSequence(%d, %q, %q, %v) = %q, want %q", tc.kind, tc.title, tc.body, tc.tmux, got, tc.want)
		}
	}
}
