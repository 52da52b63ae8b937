package coach

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// BenchmarkHandle measures one observed tool call against the built-in
// patterns: an ordinary call that matches no trigger, and a failing test
// run that is an occurrence (database reads and an alert update).
func BenchmarkHandle(b *testing.B) {
	for _, bc := range []struct {
		name string
		tc   api.ToolCall
	}{
		{"no_match", api.ToolCall{Tool: "Read", File: "/src/app/main.go"}},
		{"occurrence", api.ToolCall{Tool: "Bash", Command: "go test ./...", Failed: true, Error: "FAIL"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, "")
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				tc := bc.tc
				tc.Pane, tc.ID = "%1", fmt.Sprint("toolu_", i)
				tc.Time = h.clock.advance(time.Millisecond)
				if _, err := h.c.Handle(ctx, tc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
