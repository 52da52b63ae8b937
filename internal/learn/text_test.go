package learn

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// What the learning store keeps is text: a learning, blocker, initiative,
// reasoning path or domain holding an escape sequence or another control
// byte is refused when reported, and nothing is stored.
func TestReportRefusesControlBytes(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	for _, o := range []api.Outcome{
		{Initiative: "login tests", Outcome: api.OutcomeSuccess, Learnings: []string{"run \x1b[2J the tests"}},
		{Initiative: "login tests", Outcome: api.OutcomeSuccess, Blockers: []string{"\x1b]52;c;ZXZpbA==\x07"}},
		{Initiative: "login \x07tests", Outcome: api.OutcomeSuccess},
		{Initiative: "login tests", Outcome: api.OutcomeSuccess, ReasoningPath: "goal\rstep"},
	} {
		_, err := s.ReportOutcome(ctx, o)
		if !errors.Is(err, api.ErrLearnInvalid) || !strings.Contains(err.Error(), "byte offset") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	outs, err := s.Outcomes(ctx, api.OutcomeFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 0 {
		t.Fatalf("stored %d outcomes", len(outs))
	}
	if _, err := s.ReportOutcome(ctx, api.Outcome{Initiative: "login tests", Outcome: api.OutcomeSuccess, Learnings: []string{"Run the tests\tfirst"}}); err != nil {
		t.Fatalf("plain text refused: %v", err)
	}
}
