package learn

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// The maintainer waits for a quiet minute, then passes every 30 s; real
// work (Touch) restarts the wait and stops a pass under way. Time is
// synctest's: minutes pass in microseconds.
func TestMaintainerIdleWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx := context.Background()
		report(t, s, api.Outcome{Initiative: "a", Outcome: "success", ReasoningPath: goodReasoning, Domain: "db",
			Learnings: []string{"always run the unit tests before committing"}})
		report(t, s, api.Outcome{Initiative: "b", Outcome: "success", ReasoningPath: goodReasoning, Domain: "db",
			Learnings: []string{"Always run unit tests before committing changes", "keep migrations small"}})
		// A count out of step with the outcomes, as an older writer
		// could leave it.
		if _, err := s.db.Exec(`UPDATE capabilities SET attempts = 7`); err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		var passes []PassResult
		healthStarted := make(chan struct{}, 10)
		blockHealth := false
		m := NewMaintainer(s)
		m.Health = func(ctx context.Context) error {
			healthStarted <- struct{}{}
			mu.Lock()
			block := blockHealth
			mu.Unlock()
			if block {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		m.OnPass = func(r PassResult) {
			mu.Lock()
			passes = append(passes, r)
			mu.Unlock()
		}
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(passes)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- m.Run(rctx) }()

		time.Sleep(59 * time.Second)
		synctest.Wait()
		if count() != 0 {
			t.Fatal("a pass ran before a quiet minute")
		}
		m.Touch() // real work at 59 s: the minute starts again
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if count() != 0 {
			t.Fatal("a pass ran less than a minute after real work")
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if count() != 1 {
			t.Fatalf("%d passes after a quiet minute, want 1", count())
		}
		p := passes[0]
		if p.Err != nil || p.Merged != 1 || p.Updated != 1 || p.Yielded || !p.HealthOK {
			t.Fatalf("pass = %+v", p)
		}
		pats, _ := s.Learnings(ctx, api.LearningPattern, 0)
		if len(pats) != 2 || pats[0].Seen != 2 {
			t.Fatalf("after merge: %+v", pats)
		}
		if c, _ := s.Capabilities(ctx, "", "db"); c[0].Attempts != 2 {
			t.Fatalf("capability not recomputed: %+v", c)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if count() != 2 || passes[1].Merged != 0 {
			t.Fatalf("passes = %+v; want a second, idle, pass 30 s later", passes)
		}

		// A pass under way stops at once for real work.
		mu.Lock()
		blockHealth = true
		mu.Unlock()
		time.Sleep(30 * time.Second)
		<-healthStarted
		<-healthStarted
		<-healthStarted // the third pass is blocked in Health
		m.Touch()
		synctest.Wait()
		if count() != 3 || !passes[2].Yielded || passes[2].Err != nil || passes[2].HealthOK {
			t.Fatalf("passes = %+v; want the third to yield", passes)
		}
		// Writing an outcome is real work too.
		mu.Lock()
		blockHealth = false
		mu.Unlock()
		time.Sleep(50 * time.Second)
		report(t, s, api.Outcome{Initiative: "c", Outcome: "failure", Domain: "db"})
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if count() != 3 {
			t.Fatalf("a pass ran 50 s after an outcome was written: %+v", passes)
		}
		time.Sleep(11 * time.Second)
		synctest.Wait()
		if count() != 4 {
			t.Fatalf("%d passes, want 4", count())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestAgeOut(t *testing.T) {
	now := ref
	s := openTest(t, Options{Clock: func() time.Time { return now }})
	report(t, s, api.Outcome{Initiative: "old", Outcome: "success", ReasoningPath: goodReasoning, Learnings: []string{"vendor the protobuf plugin"}})
	now = ref.Add(DefaultStaleAfter + time.Hour)
	report(t, s, api.Outcome{Initiative: "new", Outcome: "success", ReasoningPath: goodReasoning, Learnings: []string{"pin the protobuf compiler"}})
	r, err := s.MaintainOnce(context.Background())
	if err != nil || r.Aged != 1 {
		t.Fatalf("pass = %+v, %v", r, err)
	}
	ref2, _ := s.Reflect(context.Background(), "protobuf", "", api.BudgetHigh)
	if got := texts(ref2.Patterns); len(got) != 1 || got[0] != "pin the protobuf compiler" {
		t.Fatalf("stale learning still reflected: %v", got)
	}
	// Reported again, it is live again.
	report(t, s, api.Outcome{Initiative: "again", Outcome: "success", ReasoningPath: goodReasoning, Learnings: []string{"Vendor the protobuf plugin."}})
	ref2, _ = s.Reflect(context.Background(), "protobuf", "", api.BudgetHigh)
	if len(ref2.Patterns) != 2 {
		t.Fatalf("revived learning missing: %v", texts(ref2.Patterns))
	}
	var stale int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM learnings WHERE stale = 1`).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("stale = %d, %v", stale, err)
	}
}
