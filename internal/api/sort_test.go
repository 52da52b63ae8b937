package api

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomFleet is n sessions in random order with few distinct keys, so
// that the sort's stability matters.
func randomFleet(r *rand.Rand, n int) []Session {
	states := []State{Idle, Working, AwaitingInput, Error, ErrorLoop, Exited}
	ss := make([]Session, n)
	for i := range ss {
		ss[i] = Session{
			Session: fmt.Sprintf("s%d", r.IntN(4)), WindowIndex: r.IntN(2), PaneIndex: r.IntN(2),
			Pane: fmt.Sprintf("%%%d", r.IntN(3)), State: states[r.IntN(len(states))], Target: fmt.Sprint(i),
			Evidence: Evidence{Lines: []string{"line"}}, Options: []string{"Yes", "No"},
		}
	}
	return ss
}

// TestSortSessionsMatchesStableSort: SortSessions orders like a stable sort
// of the sessions themselves by the display order, equal keys keeping
// their relative order.
func TestSortSessionsMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ss := randomFleet(r, r.IntN(60))
		want := slices.Clone(ss)
		slices.SortStableFunc(want, func(a, b Session) int {
			if a.NeedsPerson() != b.NeedsPerson() {
				if a.NeedsPerson() {
					return -1
				}
				return 1
			}
			if c := strings.Compare(a.Session, b.Session); c != 0 {
				return c
			}
			if a.WindowIndex != b.WindowIndex {
				return a.WindowIndex - b.WindowIndex
			}
			if a.PaneIndex != b.PaneIndex {
				return a.PaneIndex - b.PaneIndex
			}
			return strings.Compare(a.Pane, b.Pane)
		})
		SortSessions(ss)
		if !slices.EqualFunc(ss, want, func(a, b Session) bool { return a.Target == b.Target }) {
			t.Fatalf("order differs from a stable sort")
		}
	}
}

// BenchmarkSortSessions is the sort every Snapshot does, on 50 panes.
func BenchmarkSortSessions(b *testing.B) {
	fleet := randomFleet(rand.New(rand.NewPCG(1, 2)), 50)
	ss := make([]Session, len(fleet))
	b.ReportAllocs()
	for b.Loop() {
		copy(ss, fleet)
		SortSessions(ss)
	}
}
