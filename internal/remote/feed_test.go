package remote

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// fakeHost is a host's daemon: the real socket server over a scripted
// service, which the link reaches by dialling its socket instead of ssh.
type fakeHost struct {
	t     *testing.T
	sock  string
	svc   *monitortest.Service
	stop  context.CancelFunc
	done  chan struct{}
	dials atomic.Int64
}

func startFakeHost(t *testing.T, sock string, svc *monitortest.Service) *fakeHost {
	t.Helper()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &fakeHost{t: t, sock: sock, svc: svc, stop: cancel, done: make(chan struct{})}
	srv := ipc.NewServer(ln, backend.New(svc, backend.Parts{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	go func() {
		defer close(h.done)
		_ = srv.Run(ctx)
	}()
	t.Cleanup(h.kill)
	return h
}

// kill stops the daemon: its socket closes, and so does every stream.
func (h *fakeHost) kill() {
	h.stop()
	<-h.done
}

// link returns a link to the fake host named name whose every call dials
// the socket, counting the dials (each stands for one ssh process).
func (h *fakeHost) link(name string, counter *atomic.Int64) *Link {
	l := &Link{Host: Host{Name: name, SSH: name}, now: time.Now, feed: newFeed()}
	l.Client = ipc.NewClient("host "+name, func(ctx context.Context) (io.ReadWriteCloser, error) {
		counter.Add(1)
		var d net.Dialer
		c, err := d.DialContext(ctx, "unix", h.sock)
		if err != nil {
			return nil, &LinkError{Host: name, Kind: ErrUnreachable, msg: "host " + name + " is down or unreachable: " + err.Error()}
		}
		l.seen()
		return c, nil
	})
	return l
}

func session(pane, name string, st api.State, at time.Time) api.Session {
	return api.Session{Pane: pane, Session: name, Target: name + ":0.0", Agent: "claude", State: st, Updated: at}
}

// TestFollowedSetReportsFromItsStreams: once started, a set answers every
// report from the streams it follows, with no call to the host; updates,
// wakes raised and acknowledged, a host going down (reported disconnected
// with why, at once) and coming back (followed again after the backoff)
// all show in the next report.
func TestFollowedSetReportsFromItsStreams(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	svc := monitortest.NewService(t, nil)
	t0 := time.Now()
	svc.SetSnapshot(api.Snapshot{Server: "tmux", Running: true, Sessions: []api.Session{
		session("%1", "orch-a", api.Working, t0), session("%2", "orch-b", api.Idle, t0)}})
	first := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch-b", Pane: "%2", Question: "asks"})
	host := startFakeHost(t, sock, svc)

	var dials atomic.Int64
	l := host.link("web1", &dials)
	changes := make(chan string, 100)
	s := &Set{Deadline: 2 * time.Second, links: []*Link{l}}
	defer s.Subscribe(func(h string, c Change) {
		if c.Update != nil || c.Wake != nil {
			select {
			case changes <- h:
			default:
			}
		}
	})()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer s.Close()
	s.Start(ctx)

	rs := s.Report(ctx)
	if len(rs) != 1 || !rs[0].Connected || len(rs[0].Snapshot.Sessions) != 2 || len(rs[0].Unacked) != 1 || rs[0].Unacked[0].ID != first.ID {
		t.Fatalf("first report = %+v", rs)
	}
	if rs[0].Snapshot.Sessions[0].Session != "orch-a" || rs[0].LastSeen.IsZero() {
		t.Fatalf("sessions out of order or never seen: %+v", rs[0])
	}
	settled := dials.Load()
	for range 100 {
		s.Report(ctx)
	}
	if n := dials.Load(); n != settled {
		t.Fatalf("100 reports made %d calls to the host, want none", n-settled)
	}

	// An update, an older copy of it (it must not win), a new wake, an ack.
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: session("%1", "orch-a", api.AwaitingInput, t0.Add(time.Second))})
	svc.Publish(api.Update{Kind: api.SessionChanged, Session: session("%1", "orch-a", api.Working, t0)})
	svc.Publish(api.Update{Kind: api.SessionAdded, Session: session("%3", "orch-c", api.Idle, t0)})
	second := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Session: "orch-a", Pane: "%1", Question: "asks too"})
	if _, err := svc.Ack(ctx, first.ID, "test"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the report shows the updates and wakes", func() bool {
		r := s.Report(ctx)[0]
		return len(r.Snapshot.Sessions) == 3 && r.Snapshot.Sessions[0].State == api.AwaitingInput &&
			len(r.Unacked) == 1 && r.Unacked[0].ID == second.ID
	})
	select {
	case h := <-changes:
		if h != "web1" {
			t.Fatalf("a change of host %q", h)
		}
	default:
		t.Fatal("no update or wake message reached a subscriber")
	}

	// Down: reported disconnected, with why, and no longer waited for.
	host.kill()
	testkit.WaitFor(t, 10*time.Second, "the host is reported disconnected", func() bool {
		r := s.Report(ctx)[0]
		return !r.Connected && r.Err != nil
	})
	r := s.Report(ctx)[0]
	if len(r.Snapshot.Sessions) != 0 || len(r.Unacked) != 0 || r.LastSeen.IsZero() {
		t.Fatalf("a disconnected host reported %+v", r)
	}
	t.Logf("disconnected: %v", r.Err)

	// Back: followed again, with what it says now.
	svc.SetSnapshot(api.Snapshot{Server: "tmux", Running: true, Sessions: []api.Session{session("%9", "orch-z", api.Idle, t0)}})
	startFakeHost(t, sock, svc)
	testkit.WaitFor(t, 10*time.Second, "the host is followed again", func() bool {
		r := s.Report(ctx)[0]
		return r.Connected && len(r.Snapshot.Sessions) == 1 && r.Snapshot.Sessions[0].Session == "orch-z" && len(r.Unacked) == 1
	})
}

// TestFollowedSetDoesNotWaitForADeadHost: a host that never answers is
// reported disconnected within the deadline, with its reason.
func TestFollowedSetDoesNotWaitForADeadHost(t *testing.T) {
	dead := &fakeHost{sock: filepath.Join(t.TempDir(), "none.sock")}
	var dials atomic.Int64
	s := &Set{Deadline: 2 * time.Second, links: []*Link{dead.link("gone", &dials)}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer s.Close()
	s.Start(ctx)
	start := time.Now()
	r := s.Report(ctx)[0]
	if r.Connected || r.Err == nil || time.Since(start) > s.Deadline+time.Second {
		t.Fatalf("report %+v after %v", r, time.Since(start))
	}
	if got := r.Err.Error(); got == "" {
		t.Fatal("no reason given")
	}
}
