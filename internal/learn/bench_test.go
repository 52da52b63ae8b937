package learn

import (
	"context"
	"fmt"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

var benchWords = []string{"oauth", "tokens", "session", "migration", "index", "cache", "retry", "deploy", "rollback", "tests",
	"handler", "schema", "queue", "worker", "timeout", "login", "cookie", "redis", "postgres", "lint"}

func benchStore(b *testing.B, outcomes int) *Store {
	b.Helper()
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := range outcomes {
		w := func(k int) string { return benchWords[(i*7+k*3)%len(benchWords)] }
		if _, err := s.ReportOutcome(context.Background(), api.Outcome{Initiative: fmt.Sprintf("initiative %d %s", i, w(0)), Outcome: []string{api.OutcomeSuccess, api.OutcomeFailure, api.OutcomePartial}[i%3],
			ReasoningPath: goodReasoning, Domain: w(1), Learnings: []string{
				fmt.Sprintf("lesson %d: %s before %s, then %s", i, w(2), w(3), w(4)),
				fmt.Sprintf("lesson %d: avoid %s with %s", i, w(5), w(6))}}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkReportOutcome: one outcome with two learnings, in a store of
// 1,000 outcomes (one transaction, on disk, WAL).
func BenchmarkReportOutcome(b *testing.B) {
	s := benchStore(b, 1000)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := s.ReportOutcome(context.Background(), api.Outcome{Initiative: fmt.Sprintf("bench %d", i), Outcome: api.OutcomeSuccess,
			ReasoningPath: goodReasoning, Domain: "bench", Learnings: []string{fmt.Sprintf("bench lesson %d", i), "shared bench lesson"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReflect: a mid-budget reflection over 2,000 outcomes (4,000
// learnings).
func BenchmarkReflect(b *testing.B) {
	s := benchStore(b, 2000)
	b.ResetTimer()
	for b.Loop() {
		r, err := s.Reflect(context.Background(), "oauth tokens in the session handler", "redis cache", api.BudgetMid)
		if err != nil || len(r.Patterns) == 0 {
			b.Fatal(r, err)
		}
	}
}
