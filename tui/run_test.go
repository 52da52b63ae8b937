package tui

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// startRun runs the dashboard on svc with keys from a pipe and output to
// a buffer, and returns the key writer, the output and Run's result.
func startRun(t *testing.T, ctx context.Context, svc *monitortest.Service, opts Options) (io.WriteCloser, *testkit.SyncBuffer, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	out := &testkit.SyncBuffer{}
	done := make(chan error, 1)
	if opts.Clock == nil {
		opts.Clock = fixedClock
	}
	go func() { done <- Run(ctx, bare(svc), opts, inR, out) }()
	return inW, out, done
}

func waitOutput(t *testing.T, out *testkit.SyncBuffer, want string) {
	t.Helper()
	// The output is shown quoted: it is full of escape sequences.
	testkit.WaitForValue(t, 10*time.Second, fmt.Sprintf("%q in the output", want), func() (string, bool) {
		s := out.String()
		return strconv.Quote(s), strings.Contains(s, want)
	})
}

func waitDone(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestRunQuitsOnQ(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	in, out, done := startRun(t, context.Background(), svc, Options{})
	waitOutput(t, out, "3 wakes need a person")
	if _, err := in.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	in.Close()
	if s := out.String(); !strings.Contains(s, "\x1b[?1049h") || !strings.Contains(s, "\x1b[?1049l") {
		t.Error("the alternate screen was not entered and left")
	}
	if n := svc.InFlight(); n != 0 {
		t.Errorf("%d service calls still waiting after quit", n)
	}
}

func TestRunEndsWithItsContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := newFixtureService(t)
	ctx, cancel := context.WithCancel(context.Background())
	in, out, done := startRun(t, ctx, svc, Options{})
	waitOutput(t, out, "7 panes")
	cancel()
	waitDone(t, done)
	in.Close()
}

// TestRunRingsTheBell: a new wake writes the bell to the output, between
// frames.
func TestRunRingsTheBell(t *testing.T) {
	svc := newFixtureService(t)
	in, out, done := startRun(t, context.Background(), svc, Options{Bell: true})
	waitOutput(t, out, "7 panes")
	svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%1", Pane: "%1", Session: "orch-auth",
		Question: "Proceed?", SuggestedAction: "Answer it."})
	waitOutput(t, out, "\a")
	waitOutput(t, out, "new wake: awaiting_input")
	if _, err := in.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
}

// TestRunShowsReconnecting: a service that cannot be reached at start is
// reported, and the dashboard keeps trying.
func TestRunShowsReconnecting(t *testing.T) {
	svc := newFixtureService(t)
	svc.Fail("watch", io.ErrUnexpectedEOF)
	in, out, done := startRun(t, context.Background(), svc, Options{})
	waitOutput(t, out, "Cannot reach system3: unexpected EOF")
	waitOutput(t, out, "reconnecting (attempt 2")
	svc.Fail("watch", nil)
	waitOutput(t, out, "7 panes")
	if _, err := in.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
}
