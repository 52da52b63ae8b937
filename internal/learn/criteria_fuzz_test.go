package learn

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// FuzzCheckReasoning: any text is checked without panicking, evidence is
// quoted from the text, and validation follows the evidenced count.
func FuzzCheckReasoning(f *testing.F) {
	f.Add(goodReasoning)
	f.Add(poorReasoning)
	f.Add("1. first\n2) then → next; because risk. verified")
	f.Add(strings.Repeat("x", 300) + " because " + strings.Repeat("y", 300))
	f.Fuzz(func(t *testing.T, text string) {
		crit, ok := CheckReasoning(text)
		if len(crit) != 5 {
			t.Fatalf("%d criteria", len(crit))
		}
		n := 0
		for _, c := range crit {
			if !c.Evidenced {
				if c.Evidence != "" {
					t.Fatalf("%s: evidence without evidenced", c.Name)
				}
				continue
			}
			n++
			if utf8.ValidString(text) {
				ev := strings.TrimSuffix(strings.TrimPrefix(c.Evidence, "…"), "…")
				if !strings.Contains(text, ev) {
					t.Fatalf("%s: evidence %q is not from the text", c.Name, c.Evidence)
				}
				if utf8.RuneCountInString(c.Evidence) > 102 {
					t.Fatalf("%s: evidence too long: %q", c.Name, c.Evidence)
				}
			}
		}
		if ok != (n >= PassMin) {
			t.Fatalf("validated %v with %d evidenced", ok, n)
		}
	})
}

// FuzzReflectQuery: whatever the query, reflect answers or refuses it as
// invalid input; it never sends the index a query it cannot parse.
func FuzzReflectQuery(f *testing.F) {
	s, err := OpenOptions(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	if _, err := s.ReportOutcome(f.Context(), api.Outcome{Initiative: "seed", Outcome: api.OutcomeSuccess, ReasoningPath: goodReasoning,
		Learnings: []string{"Quote \"FTS\" queries: AND OR NOT NEAR * ^ are operators"}}); err != nil {
		f.Fatal(err)
	}
	for _, q := range []string{`"unterminated`, "AND OR NOT", "NEAR(a b)", "a* ^b", "col:value", "ünïcode ✓", "-x +y"} {
		f.Add(q, "")
	}
	f.Fuzz(func(t *testing.T, query, about string) {
		if _, err := s.Reflect(t.Context(), query, about, api.BudgetLow); err != nil && !errors.Is(err, api.ErrLearnInvalid) {
			t.Fatalf("reflect %q %q: %v", query, about, err)
		}
		if _, err := s.Capabilities(t.Context(), query, ""); err != nil && !errors.Is(err, api.ErrLearnInvalid) {
			t.Fatalf("capabilities %q: %v", query, err)
		}
	})
}
