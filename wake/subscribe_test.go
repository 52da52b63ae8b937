package wake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// next reads one message or fails the test after a second.
func next(t *testing.T, sub *Subscription) api.WakeMessage {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		if !ok {
			t.Fatal("subscription closed")
		}
		return m
	case <-time.After(time.Second):
		t.Fatal("no message within 1s")
	}
	return api.WakeMessage{}
}

func expectNothing(t *testing.T, sub *Subscription) {
	t.Helper()
	select {
	case m, ok := <-sub.C:
		t.Fatalf("unexpected message %+v (open %v)", m, ok)
	default:
	}
}

func TestSubscribeReplayThenLive(t *testing.T) {
	s := open(t, Config{})
	a := raise(t, s, api.ReasonAwaitingInput, "a")
	b := raise(t, s, api.ReasonAPIError, "b")
	raise(t, s, api.ReasonAwaitingInput, "c")
	s.Ack(b.ID, "t")

	sub, err := s.Subscribe(t.Context(), api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput, api.ReasonAPIError}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, want := range []string{"a", "c"} {
		if m := next(t, sub); m.Kind != api.WakeRaised || !m.Replayed || m.Event.Key != want {
			t.Fatalf("replay: got %s %q replayed=%v, want raised %q", m.Kind, m.Event.Key, m.Replayed, want)
		}
	}
	expectNothing(t, sub)

	d := raise(t, s, api.ReasonAwaitingInput, "d")
	raise(t, s, api.ReasonValidationFailed, "") // filtered out
	s.Ack(a.ID, "cli")
	s.Resolve("d", "the test ended it")
	s.Resolve("b", "the test ended it") // acked wake: a subscriber to unacked wakes does not care
	want := []struct {
		kind api.WakeMessageKind
		key  string
	}{{api.WakeRaised, "d"}, {api.WakeAcked, "a"}, {api.WakeResolved, "d"}}
	for _, w := range want {
		m := next(t, sub)
		if m.Kind != w.kind || m.Event.Key != w.key || m.Replayed {
			t.Fatalf("live: got %s %q, want %s %q", m.Kind, m.Event.Key, w.kind, w.key)
		}
		if m.Kind == api.WakeAcked && (!m.Event.Acked || m.Event.AckedBy != "cli") {
			t.Fatalf("Acked message without the ack fields: %+v", m.Event)
		}
		if m.Kind == api.WakeRaised && m.Event.ID != d.ID {
			t.Fatalf("raised %q, want %q", m.Event.ID, d.ID)
		}
	}
	expectNothing(t, sub)
}

func TestSubscribeIncludeAckedReplaysHistory(t *testing.T) {
	s := open(t, Config{})
	a := raise(t, s, api.ReasonAwaitingInput, "a")
	raise(t, s, api.ReasonAwaitingInput, "b")
	s.Ack(a.ID, "t")
	sub, err := s.Subscribe(t.Context(), api.AllWakes())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if m := next(t, sub); m.Event.Key != "a" || !m.Event.Acked {
		t.Fatalf("first replayed = %+v", m)
	}
	if m := next(t, sub); m.Event.Key != "b" {
		t.Fatalf("second replayed = %+v", m)
	}
	s.Resolve("a", "the test ended it")
	if m := next(t, sub); m.Kind != api.WakeResolved || m.Event.Key != "a" {
		t.Fatalf("got %+v, want the acked wake's clear", m)
	}
}

// TestSubscribeNoGapNoDuplicate subscribes while several goroutines raise.
// Nothing is acked, so every subscriber must see every wake exactly once, in
// seq order: the replay up to its start, then the live ones.
func TestSubscribeNoGapNoDuplicate(t *testing.T) {
	for _, dir := range []string{"memory", "journal"} {
		t.Run(dir, func(t *testing.T) {
			cfg := Config{Buffer: 4096}
			if dir == "journal" {
				cfg.Dir = t.TempDir()
			}
			s := open(t, cfg)
			const raisers, perRaiser, subscribers = 4, 50, 20
			total := raisers * perRaiser

			var wg sync.WaitGroup
			start := make(chan struct{})
			for r := range raisers {
				wg.Go(func() {
					<-start
					for i := range perRaiser {
						if _, _, err := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: fmt.Sprintf("%d/%d", r, i)}); err != nil {
							t.Error(err)
						}
					}
				})
			}
			errs := make(chan error, subscribers)
			for range subscribers {
				wg.Go(func() {
					<-start
					sub, err := s.Subscribe(t.Context(), api.WakeFilter{})
					if err != nil {
						errs <- err
						return
					}
					defer sub.Close()
					want := uint64(1)
					timeout := time.After(10 * time.Second)
					for want <= uint64(total) {
						select {
						case m := <-sub.C:
							if m.Kind != api.WakeRaised || m.Event.Seq != want {
								errs <- fmt.Errorf("got %s seq %d, want raised seq %d", m.Kind, m.Event.Seq, want)
								return
							}
							want++
						case <-timeout:
							errs <- fmt.Errorf("stuck waiting for seq %d", want)
							return
						}
					}
					select {
					case m := <-sub.C:
						errs <- fmt.Errorf("extra message after the last wake: %+v", m)
					default:
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestSlowSubscriberGetsResync(t *testing.T) {
	s := open(t, Config{Buffer: 4})
	slow, err := s.Subscribe(t.Context(), api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	fast, err := s.Subscribe(t.Context(), api.WakeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()

	// A reading subscriber may still fall behind a burst (a buffer of 4 is
	// tiny), but every wake is either delivered or counted as missed.
	fastRaised := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range fast.C {
			if m.Kind == api.WakeRaised {
				fastRaised++
			}
		}
	}()

	// The publisher must finish although nobody reads slow.
	raised := make(chan struct{})
	go func() {
		defer close(raised)
		for range 20 {
			raise(t, s, api.ReasonValidationFailed, "")
		}
	}()
	select {
	case <-raised:
	case <-time.After(5 * time.Second):
		t.Fatal("Raise blocked on a slow subscriber")
	}

	if got := slow.Missed(); got != 16 {
		t.Fatalf("Missed = %d, want 16", got)
	}
	for want := uint64(1); want <= 4; want++ {
		if m := next(t, slow); m.Kind != api.WakeRaised || m.Event.Seq != want {
			t.Fatalf("got %s seq %d, want raised %d", m.Kind, m.Event.Seq, want)
		}
	}
	m := next(t, slow)
	if m.Kind != api.WakeResync || m.Missed != 1 {
		t.Fatalf("got %+v, want a resync after the first drop", m)
	}
	// The reader is told to re-read, and that read has everything.
	if n := len(s.Unacked()); n != 20 {
		t.Fatalf("Unacked has %d wakes, want 20", n)
	}
	expectNothing(t, slow)
	// Having caught up, the reader gets live messages again.
	ev := raise(t, s, api.ReasonValidationFailed, "")
	if m := next(t, slow); m.Kind != api.WakeRaised || m.Event.ID != ev.ID {
		t.Fatalf("after resync got %+v", m)
	}

	fast.Close()
	<-done
	if got := uint64(fastRaised) + fast.Missed(); got != 21 {
		t.Fatalf("reading subscriber: %d delivered + %d missed, want 21", fastRaised, fast.Missed())
	}
}

func TestResyncWhenBufferFullAgain(t *testing.T) {
	s := open(t, Config{Buffer: 2})
	sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
	defer sub.Close()
	for round := range 3 {
		for range 5 {
			raise(t, s, api.ReasonValidationFailed, "")
		}
		next(t, sub)
		next(t, sub)
		if m := next(t, sub); m.Kind != api.WakeResync {
			t.Fatalf("round %d: got %s, want resync", round, m.Kind)
		}
		expectNothing(t, sub)
	}
	if got := sub.Missed(); got != 9 {
		t.Fatalf("Missed = %d, want 9", got)
	}
}

func TestReplayLargerThanBuffer(t *testing.T) {
	s := open(t, Config{Buffer: 2})
	for range 10 {
		raise(t, s, api.ReasonValidationFailed, "")
	}
	sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
	defer sub.Close()
	raise(t, s, api.ReasonValidationFailed, "")
	for want := uint64(1); want <= 11; want++ {
		if m := next(t, sub); m.Kind != api.WakeRaised || m.Event.Seq != want {
			t.Fatalf("got %s %d, want raised %d", m.Kind, m.Event.Seq, want)
		}
	}
}

func TestSubscriptionEnds(t *testing.T) {
	drained := func(t *testing.T, sub *Subscription) {
		t.Helper()
		timeout := time.After(time.Second)
		for {
			select {
			case _, ok := <-sub.C:
				if !ok {
					return
				}
			case <-timeout:
				t.Fatal("C not closed")
			}
		}
	}
	t.Run("Close", func(t *testing.T) {
		s := open(t, Config{})
		sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
		sub.Close()
		sub.Close()
		drained(t, sub)
		raise(t, s, api.ReasonValidationFailed, "") // no send on a closed channel
	})
	t.Run("context", func(t *testing.T) {
		s := open(t, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		sub, _ := s.Subscribe(ctx, api.WakeFilter{})
		cancel()
		drained(t, sub)
		sub.Close()
	})
	t.Run("context already done", func(t *testing.T) {
		s := open(t, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		sub, err := s.Subscribe(ctx, api.WakeFilter{})
		if err != nil {
			t.Fatal(err)
		}
		drained(t, sub)
	})
	t.Run("store Close", func(t *testing.T) {
		s := open(t, Config{})
		sub, _ := s.Subscribe(t.Context(), api.WakeFilter{})
		s.Close()
		drained(t, sub)
		sub.Close()
	})
	t.Run("bad filter", func(t *testing.T) {
		s := open(t, Config{})
		if _, err := s.Subscribe(t.Context(), api.WakeFilter{Session: "["}); err == nil {
			t.Fatal("Subscribe accepted a bad glob")
		}
	})
}

func TestWait(t *testing.T) {
	t.Run("existing", func(t *testing.T) {
		s := open(t, Config{})
		a := raise(t, s, api.ReasonValidationFailed, "a")
		raise(t, s, api.ReasonAwaitingInput, "b")
		raise(t, s, api.ReasonAwaitingInput, "c")
		s.Ack(a.ID, "t")
		ev, err := s.Wait(t.Context(), api.WakeFilter{})
		if err != nil || ev.Key != "b" {
			t.Fatalf("Wait = %q, %v; want the oldest unacked, b", ev.Key, err)
		}
	})
	t.Run("cursor", func(t *testing.T) {
		s := open(t, Config{})
		a := raise(t, s, api.ReasonValidationFailed, "a")
		b := raise(t, s, api.ReasonAwaitingInput, "b")
		if ev, err := s.Wait(t.Context(), api.WakeFilter{SinceSeq: a.Seq}); err != nil || ev.ID != b.ID {
			t.Fatalf("Wait after a = %q, %v; want b", ev.Key, err)
		}
		// A cursor this journal never issued comes from another one (a
		// state dir started afresh): it skips nothing.
		if ev, err := s.Wait(t.Context(), api.WakeFilter{SinceSeq: b.Seq + 40}); err != nil || ev.ID != a.ID {
			t.Fatalf("Wait after a cursor of another journal = %q, %v; want a", ev.Key, err)
		}
	})
	t.Run("future", func(t *testing.T) {
		s := open(t, Config{})
		raise(t, s, api.ReasonValidationFailed, "other")
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		got := make(chan api.Wake)
		go func() {
			ev, err := s.Wait(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonAwaitingInput}, Session: "api*"})
			if err != nil {
				t.Error(err)
			}
			got <- ev
		}()
		time.Sleep(20 * time.Millisecond) // let Wait subscribe; correct either way
		raise(t, s, api.ReasonAwaitingInput, "wrong-session")
		want, _, _ := s.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "right", Session: "api-3"})
		if ev := <-got; ev.ID != want.ID {
			t.Fatalf("Wait = %+v, want %s", ev, want.ID)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		s := open(t, Config{})
		raise(t, s, api.ReasonValidationFailed, "h")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		if _, err := s.Wait(ctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonWorkerFailed}}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want deadline exceeded", err)
		}
	})
	t.Run("store closed", func(t *testing.T) {
		s := open(t, Config{})
		errc := make(chan error)
		go func() {
			_, err := s.Wait(context.Background(), api.WakeFilter{})
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond)
		s.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait = %v, want ErrClosed", err)
		}
	})
	t.Run("after resync", func(t *testing.T) {
		// Wait holds a subscription with a tiny buffer; a burst overflows it
		// and the wake is found by the re-read.
		s := open(t, Config{Buffer: 1})
		for range 5 {
			raise(t, s, api.ReasonValidationFailed, "")
		}
		ev, err := s.Wait(t.Context(), api.WakeFilter{Reasons: []api.Reason{api.ReasonValidationFailed}})
		if err != nil || ev.Seq != 1 {
			t.Fatalf("Wait = %d, %v", ev.Seq, err)
		}
	})
}
