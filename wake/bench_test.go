package wake

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// ackEvery keeps the store at a steady state, as operators do: without acks
// the benchmark would measure a store holding millions of unacked wakes.
const ackEvery = 512

func benchRaise(b *testing.B, cfg Config) {
	s := open(b, cfg)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed, Session: "s", Pane: "%1"}); err != nil {
			b.Fatal(err)
		}
		if n++; n%ackEvery == 0 {
			b.StopTimer()
			s.AckAll("bench")
			b.StartTimer()
		}
	}
}

// BenchmarkRaiseFsync is one writer: every Raise waits for its own fsync.
func BenchmarkRaiseFsync(b *testing.B) { benchRaise(b, Config{Dir: b.TempDir()}) }

// BenchmarkRaiseFsyncParallel shows group commit: concurrent Raises share fsyncs.
func BenchmarkRaiseFsyncParallel(b *testing.B) {
	s := open(b, Config{Dir: b.TempDir()})
	b.SetParallelism(8)
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed}); err != nil {
				b.Error(err)
				return
			}
			if n.Add(1)%ackEvery == 0 {
				s.AckAll("bench") // one more fsync per ackEvery raises
			}
		}
	})
}

func BenchmarkRaiseMemory(b *testing.B) { benchRaise(b, Config{}) }

// BenchmarkFanout100 delivers each wake to 100 subscribers that read as fast
// as they can.
func BenchmarkFanout100(b *testing.B) {
	s := open(b, Config{})
	var wg sync.WaitGroup
	subs := make([]*Subscription, 100)
	for i := range subs {
		sub, err := s.Subscribe(b.Context(), api.WakeFilter{})
		if err != nil {
			b.Fatal(err)
		}
		subs[i] = sub
		wg.Go(func() {
			for range sub.C {
			}
		})
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, _, err := s.Raise(api.Wake{Reason: api.ReasonValidationFailed}); err != nil {
			b.Fatal(err)
		}
		if n++; n%ackEvery == 0 {
			b.StopTimer()
			s.AckAll("bench")
			b.StartTimer()
		}
	}
	b.StopTimer()
	var missed uint64
	for _, sub := range subs {
		missed += sub.Missed()
		sub.Close()
	}
	wg.Wait()
	b.ReportMetric(float64(missed)/float64(b.N), "missed/op")
}
