package notify

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/system3-dev/system3/wake"
)

// privateBus starts a private D-Bus session bus and returns its address.
func privateBus(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is not installed (Debian package dbus; .ci/run installs it)")
	}
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// fdoServer is a test org.freedesktop.Notifications.
type fdoServer struct {
	mu   sync.Mutex
	got  []fdoNote
	seen chan struct{}
}

type fdoNote struct {
	App, Summary, Body string
	Actions            []string
	Urgency            byte
}

func (f *fdoServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, _ := hints["urgency"].Value().(byte)
	f.got = append(f.got, fdoNote{App: app, Summary: summary, Body: body, Actions: actions, Urgency: u})
	f.seen <- struct{}{}
	return uint32(40 + len(f.got)), nil
}

func (f *fdoServer) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"body", "actions"}, nil
}

func (f *fdoServer) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "test", "system3", "1", "1.2", nil
}

func (f *fdoServer) CloseNotification(id uint32) *dbus.Error { return nil }

func TestDesktopOverDBus(t *testing.T) {
	addr := privateBus(t)
	srvConn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer srvConn.Close()
	srv := &fdoServer{seen: make(chan struct{}, 4)}
	if err := srvConn.Export(srv, fdoPath, fdoIface); err != nil {
		t.Fatal(err)
	}
	if r, err := srvConn.RequestName(fdoName, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", r, err)
	}

	focused := make(chan string, 1)
	d := &Desktop{BusAddress: addr, GOOS: "linux", Focus: func(_ context.Context, pane string) error { focused <- pane; return nil }}
	defer d.Close()
	ev := wake.Event{ID: "w1", Reason: wake.ReasonAwaitingInput, Session: "orch-billing", Pane: "%7",
		Question: "Do you want to proceed? <rm -rf & go>", Options: []string{"Yes", "No"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Send(ctx, ForWake(ev)); err != nil {
		t.Fatal(err)
	}
	<-srv.seen
	srv.mu.Lock()
	n := srv.got[0]
	srv.mu.Unlock()
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
	if err := srvConn.Emit(fdoPath, fdoIface+".ActionInvoked", uint32(41), "focus"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-focused:
		if p != "%7" {
			t.Errorf("focused %q, want %%7", p)
		}
	case <-ctx.Done():
		t.Fatal("the focus action did not reach Focus")
	}
	// A digest has no focus action.
	if err := d.Send(ctx, ForDigest([]wake.Event{ev, {ID: "w2", Reason: wake.ReasonAPIError, Session: "x"}})); err != nil {
		t.Fatal(err)
	}
	<-srv.seen
	srv.mu.Lock()
	n = srv.got[1]
	srv.mu.Unlock()
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
