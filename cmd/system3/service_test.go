package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/wake"
)

// fakeService is the shared fake service, counting the in-process starts
// and stops that go through TestStartMonitors.
type fakeService struct {
	*monitortest.Service
	starts, stops  atomic.Int32
	startMonitorsE error // returned by the hook instead of the service
}

var testEpoch = time.Date(2025, 11, 21, 9, 0, 0, 0, time.UTC)

func newFakeService(t *testing.T) *fakeService {
	t.Helper()
	return &fakeService{Service: monitortest.NewService(t, nil)}
}

// useFake makes commands that find no running system3 use a fake service.
func useFake(t *testing.T) *fakeService {
	t.Helper()
	f := newFakeService(t)
	old := core.TestStartMonitors
	core.TestStartMonitors = func(a *core.App, ctx context.Context) (api.Service, func() error, error) {
		if f.startMonitorsE != nil {
			return nil, nil, f.startMonitorsE
		}
		f.starts.Add(1)
		return f, func() error { f.stops.Add(1); return nil }, nil
	}
	t.Cleanup(func() { core.TestStartMonitors = old })
	return f
}

// With a system3 serving the state dir, commands use it and start no
// monitors of their own.
func TestCommandsUseRunningSystem3(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hooked := useFake(t)
	daemon := newFakeService(t)
	state := testkit.ShortDir(t)
	ln, err := ipc.Listen(filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ipc.NewServer(ln, backend.New(daemon, backend.Parts{}), nil).Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	raised := daemon.Raise(t, monitortest.WakeAuth)
	env := map[string]string{"SYSTEM3_STATE_DIR": state}

	// status shows the daemon's states (which remember error loops) over
	// the panes tmux lists.
	srv := tmuxtest.NewServer(t, "sleep", "600")
	daemon.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{{Pane: "%0", Agent: "claude",
		State: api.ErrorLoop, Evidence: api.Evidence{Source: "history", Rule: "monitor.error_loop", Lines: []string{"x"}}, Options: []string{}}}})
	code, out, errOut := invoke(t, env, append(socketArgs(srv), "status", "--json")...)
	var doc statusDoc
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("status: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if doc.Source != "daemon" || doc.NeedsPerson != 1 || len(doc.Panes) != 1 || doc.Panes[0].State != "error_loop" || doc.Panes[0].Evidence.Rule != "monitor.error_loop" {
		t.Fatalf("status from the daemon = %+v", doc)
	}

	code, out, errOut = invoke(t, env, "wait", "--json", "--timeout", "5s")
	var got api.Wake
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.ID != raised.ID {
		t.Fatalf("wait: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = invoke(t, env, "ack", raised.ID)
	if code != 0 || !strings.Contains(out, "acked "+raised.ID) {
		t.Fatalf("ack: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// The daemon records who acked as its word about its peer: the CLI's
	// process, claiming cli.
	if ev, _ := daemon.Store.Get(raised.ID); !ev.Acked || api.ShortOrigin(ev.AckedBy) == ev.AckedBy || !strings.HasPrefix(api.ShortOrigin(ev.AckedBy), "cli (pid ") {
		t.Errorf("the daemon's wake = %+v, want acked by the CLI's process", ev)
	}
	if n := hooked.starts.Load(); n != 0 {
		t.Errorf("started monitors in-process %d times beside a running system3", n)
	}
}

// Something that answers on the socket but is not a system3 must not make
// the CLI start a second set of monitors.
func TestCommandsRefuseStrangeSocket(t *testing.T) {
	hooked := useFake(t)
	state := testkit.ShortDir(t)
	ln, err := net.Listen("unix", filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("220 smtp ready\r\n"))
			bufio.NewReader(conn).ReadString('\n')
			conn.Close()
		}
	})
	code, _, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "ack", "--all")
	if code != 1 || !strings.Contains(errOut, "does not answer like a system3 daemon") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if hooked.starts.Load() != 0 {
		t.Error("started monitors in-process")
	}
}

func TestStartMonitorsFailure(t *testing.T) {
	f := useFake(t)
	f.startMonitorsE = errors.New("another system3 (pid 7) is already using /s")
	for _, args := range [][]string{{"wait"}, {"watch"}, {"ack", "--all"}} {
		code, _, errOut := invoke(t, nil, args...)
		if code != 1 || !strings.Contains(errOut, "pid 7") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestClientRetriesWhileTheLockIsBusy(t *testing.T) {
	f := newFakeService(t)
	var tries atomic.Int32
	old := core.TestStartMonitors
	core.TestStartMonitors = func(a *core.App, ctx context.Context) (api.Service, func() error, error) {
		if tries.Add(1) <= 3 {
			return nil, nil, &wake.LockedError{Path: "/s/system3.lock", PID: 7}
		}
		return f, func() error { return nil }, nil
	}
	t.Cleanup(func() { core.TestStartMonitors = old })
	ev := f.Raise(t, monitortest.WakeAuth)
	code, out, errOut := invoke(t, nil, "wait", "--json")
	if code != 0 || !strings.Contains(out, ev.ID) || tries.Load() != 4 {
		t.Fatalf("exit %d after %d tries, out %q, stderr %q", code, tries.Load(), out, errOut)
	}

	// A lock that stays taken ends in its error, not in a nil service.
	tries.Store(-1000)
	code, _, errOut = invoke(t, nil, "wait", "--json")
	if code != 1 || !strings.Contains(errOut, "pid 7") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// sessions used by the watch tests.
var (
	sessAuth = api.Session{Pane: "%3", Session: "orch-auth", Target: "orch-auth:0.1", Agent: "claude",
		State: api.AwaitingInput, Kind: "permission", Since: testEpoch,
		Evidence: api.Evidence{Source: "screen", Rule: "claude.permission"}}
	sessDocs = api.Session{Pane: "%5", Session: "docs", Target: "docs:0.0", Agent: "codex",
		State: api.Working, Kind: "tool", Since: testEpoch, Evidence: api.Evidence{Source: "screen", Rule: "codex.working"}}
)
