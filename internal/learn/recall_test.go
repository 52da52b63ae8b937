package learn

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// README's example: a learning reported for one initiative is recalled by
// a question about a related one, through the initiative's words, stems
// ("tokens"/"token") and parts of words ("auth" in "OAuth").
func TestRecallByInitiativeStemAndPart(t *testing.T) {
	s := openTest(t, Options{})
	report(t, s, api.Outcome{Initiative: "add OAuth login", Outcome: api.OutcomeSuccess, ReasoningPath: goodReasoning,
		Learnings: []string{"Keep tokens in the session store"}})
	report(t, s, api.Outcome{Initiative: "speed up the CI pipeline", Outcome: api.OutcomeFailure, ReasoningPath: poorReasoning,
		Learnings: []string{"Caching node_modules broke the lockfile check"}})
	for _, tt := range []struct {
		query string
		want  []string // patterns
	}{
		{"add OAuth to the admin app", []string{"Keep tokens in the session store"}}, // the initiative's word
		{"where does the token live", []string{"Keep tokens in the session store"}},  // a stem of the text
		{"auth", []string{"Keep tokens in the session store"}},                       // a part of OAuth
		{"login flow", []string{"Keep tokens in the session store"}},
		{"kubernetes", nil},
	} {
		r, err := s.Reflect(context.Background(), tt.query, "", api.BudgetMid)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(r.Patterns); !slices.Equal(got, tt.want) {
			t.Errorf("%q: patterns %q, want %q", tt.query, got, tt.want)
		}
	}
	r, err := s.Reflect(context.Background(), "pipeline caching", "", api.BudgetMid)
	if err != nil || !slices.Equal(texts(r.AntiPatterns), []string{"Caching node_modules broke the lockfile check"}) {
		t.Fatalf("anti-pattern by initiative: %+v, %v", r.AntiPatterns, err)
	}
}

// A learning seen again in another initiative is recalled by either, and
// a near-duplicate merged into it brings its initiatives along.
func TestRecallKeepsEveryInitiative(t *testing.T) {
	s := openTest(t, Options{})
	l := "Run the migrations in a transaction"
	report(t, s, api.Outcome{Initiative: "billing schema", Outcome: api.OutcomeSuccess, ReasoningPath: goodReasoning, Learnings: []string{l}})
	report(t, s, api.Outcome{Initiative: "inventory rewrite", Outcome: api.OutcomeSuccess, ReasoningPath: goodReasoning, Learnings: []string{l}})
	for _, q := range []string{"billing", "inventory"} {
		r, err := s.Reflect(context.Background(), q, "", api.BudgetMid)
		if err != nil || !slices.Equal(texts(r.Patterns), []string{l}) {
			t.Fatalf("%q: %q, %v", q, texts(r.Patterns), err)
		}
	}
}

// A store created before the recall index (version 1) gets every earlier
// learning indexed with its initiative when it is opened.
func TestRecallMigrationIndexesEarlierLearnings(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := Migrate(ctx, db, Component, migrations[:1]); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `INSERT INTO outcomes(id, at, initiative, outcome, reasoning, domain, validated, criteria, learnings, blockers)
		VALUES (1, 0, 'add OAuth login', 'success', '', 'general', 1, '[]', '[]', '[]')`)
	mustExec(t, db, `INSERT INTO learnings(kind, text, norm, domain, outcome_id, created, last_seen)
		VALUES ('pattern', 'Keep tokens in the session store', 'keep tokens session store', 'general', 1, 0, 0)`)
	db.Close()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Reflect(ctx, "add OAuth to the admin app", "", api.BudgetMid)
	if err != nil || !slices.Equal(texts(r.Patterns), []string{"Keep tokens in the session store"}) {
		t.Fatalf("after migration: %q, %v", texts(r.Patterns), err)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
}
