package learn

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

const goodReasoning = `The goal was to make logins survive restarts. First I read the handler, then I wrote failing tests, finally I moved the tokens. I chose the session store because it already handles expiry. The risk was logging everyone out, so I kept a fallback to the old cookie for a day. I verified it: the tests pass and a manual login worked.`

const poorReasoning = `Changed stuff around and it works now.`

var ref = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return ref }
	}
	s, err := OpenOptions(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func report(t *testing.T, s *Store, o api.Outcome) api.LearnReport {
	t.Helper()
	r, err := s.ReportOutcome(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckReasoning(t *testing.T) {
	crit, ok := CheckReasoning(goodReasoning)
	if !ok {
		t.Fatalf("good reasoning fails: %+v", crit)
	}
	want := map[string]string{
		"goal_defined":        "The goal was to make logins survive restarts",
		"steps_sequenced":     "First I read the handler, then I wrote failing tests, finally I moved the tokens",
		"decisions_justified": "I chose the session store because it already handles expiry",
		"risks_considered":    "The risk was logging everyone out, so I kept a fallback to the old cookie for a day",
		"outcome_verified":    "I verified it: the tests pass and a manual login worked",
	}
	for _, c := range crit {
		if !c.Evidenced || c.Evidence != want[c.Name] {
			t.Errorf("%s: evidenced %v, evidence %q; want %q", c.Name, c.Evidenced, c.Evidence, want[c.Name])
		}
	}
	tests := []struct {
		text   string
		passes bool
		has    []string
	}{
		{poorReasoning, false, nil},
		{"The goal: speed. Next, profile; then cache.", false, []string{"goal_defined", "steps_sequenced"}},
		{"", false, nil},
		// One "then" is not a sequence; two markers are.
		{"Then it worked.", false, nil},
		{"1. read the code\n2. fix it", false, []string{"steps_sequenced"}},
		{"We need to cut latency. Next, profile; then cache. Rather than a new service, reuse redis. Tested with a benchmark.", true,
			[]string{"goal_defined", "steps_sequenced", "decisions_justified", "outcome_verified"}},
		{"Objective: ship. First A, then B. Picked B because it is simpler. Edge cases: empty input. Confirmed in CI.", true,
			[]string{"goal_defined", "steps_sequenced", "decisions_justified", "risks_considered", "outcome_verified"}},
	}
	for _, tt := range tests {
		crit, ok := CheckReasoning(tt.text)
		if ok != tt.passes {
			t.Errorf("%q: passes %v, want %v", tt.text, ok, tt.passes)
		}
		var got []string
		for _, c := range crit {
			if c.Evidenced {
				got = append(got, c.Name)
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.has, ",") {
			t.Errorf("%q: evidenced %v, want %v", tt.text, got, tt.has)
		}
	}
	// A long sentence is cut around the cue.
	long := strings.Repeat("word ", 40) + "because " + strings.Repeat("more ", 40)
	crit, _ = CheckReasoning(long)
	if ev := crit[2].Evidence; !strings.Contains(ev, "because") || len([]rune(ev)) > 102 {
		t.Errorf("long evidence = %q", ev)
	}
}

// The outcome → pattern/anti-pattern → capability path.
func TestReportOutcome(t *testing.T) {
	s := openTest(t, Options{})
	r := report(t, s, api.Outcome{Initiative: "move tokens to the session store", Outcome: "success", ReasoningPath: goodReasoning,
		Learnings: []string{"Keep tokens in the session store", " ", "keep tokens in the session store!"}, Domain: " Auth "})
	if !r.Validated || !r.PatternStored || r.Kind != api.LearningPattern || !r.CapabilityUpdated || r.Domain != "auth" {
		t.Fatalf("report = %+v", r)
	}
	if len(r.Learnings) != 1 || r.Learnings[0].Merged {
		t.Fatalf("learnings = %+v (blank and duplicate learnings are dropped)", r.Learnings)
	}
	if r.Confidence != 0.67 || r.Evidence != "1 successful initiative out of 1" {
		t.Fatalf("confidence %v, evidence %q", r.Confidence, r.Evidence)
	}
	// Success with poor reasoning: the learnings are anti-patterns.
	r = report(t, s, api.Outcome{Initiative: "hotfix login", Outcome: "success", ReasoningPath: poorReasoning,
		Learnings: []string{"Pushed a hotfix without tests"}, Domain: "auth"})
	if r.Validated || r.PatternStored || r.Kind != api.LearningAntiPattern || r.Confidence != 0.75 {
		t.Fatalf("report = %+v", r)
	}
	// Failure with good reasoning: anti-patterns too.
	r = report(t, s, api.Outcome{Initiative: "add SSO", Outcome: "failure", ReasoningPath: goodReasoning,
		Learnings: []string{"SAML libraries need the clock in sync"}, Blockers: []string{"no test IdP"}, Domain: "auth"})
	if !r.Validated || r.PatternStored || r.Kind != api.LearningAntiPattern || r.Confidence != 0.6 {
		t.Fatalf("report = %+v", r)
	}
	r = report(t, s, api.Outcome{Initiative: "add SSO again", Outcome: "partial", ReasoningPath: goodReasoning, Domain: "auth"})
	if r.PatternStored || r.Evidence != "2 successful initiatives out of 4 (1 partial)" || r.Confidence != 0.5 {
		t.Fatalf("report = %+v", r)
	}
	// The same learning again is seen twice, not stored twice.
	r = report(t, s, api.Outcome{Initiative: "move admin tokens", Outcome: "success", ReasoningPath: goodReasoning,
		Learnings: []string{"keep tokens in the SESSION store."}, Domain: "auth"})
	if len(r.Learnings) != 1 || !r.Learnings[0].Merged {
		t.Fatalf("learnings = %+v", r.Learnings)
	}
	pats, err := s.Learnings(context.Background(), api.LearningPattern, 0)
	if err != nil || len(pats) != 1 || pats[0].Seen != 2 || pats[0].Text != "Keep tokens in the session store" {
		t.Fatalf("patterns = %+v, %v", pats, err)
	}
	anti, _ := s.Learnings(context.Background(), api.LearningAntiPattern, 0)
	if len(anti) != 2 {
		t.Fatalf("anti-patterns = %+v", anti)
	}
	caps, err := s.Capabilities(context.Background(), "", "")
	if err != nil || len(caps) != 1 {
		t.Fatalf("capabilities = %+v, %v", caps, err)
	}
	c := caps[0]
	if c.Domain != "auth" || c.Attempts != 5 || c.Successes != 3 || c.Partials != 1 || c.Failures != 1 || c.Confidence != 0.57 ||
		c.Evidence != "3 successful initiatives out of 5 (1 partial)" || !c.Updated.Equal(ref) {
		t.Fatalf("capability = %+v", c)
	}
	outs, err := s.Outcomes(context.Background(), api.OutcomeFilter{Domain: "AUTH", Limit: 2})
	if err != nil || len(outs) != 2 || outs[0].Initiative != "move admin tokens" || len(outs[0].Criteria) != 5 {
		t.Fatalf("outcomes = %+v, %v", outs, err)
	}
	all, _ := s.Outcomes(context.Background(), api.OutcomeFilter{})
	if sso := all[2]; sso.Blockers[0] != "no test IdP" || sso.Validated != true || sso.Outcome != "failure" {
		t.Fatalf("outcome = %+v", sso)
	}
}

func TestReportOutcomeRefusesBadInput(t *testing.T) {
	s := openTest(t, Options{})
	for _, tt := range []struct {
		o    api.Outcome
		want string
	}{
		{api.Outcome{Outcome: "success"}, "initiative is empty"},
		{api.Outcome{Initiative: "x", Outcome: "done"}, `outcome "done" is not one of success, partial, failure`},
		{api.Outcome{Initiative: "x", Outcome: "success", Learnings: []string{strings.Repeat("a", api.MaxLearning+1)}}, "keep each under"},
		{api.Outcome{Initiative: "x", Outcome: "success", Domain: strings.Repeat("d", 65)}, "use a short name"},
	} {
		_, err := s.ReportOutcome(context.Background(), tt.o)
		if !errors.Is(err, api.ErrLearnInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.o, err, tt.want)
		}
	}
	if outs, _ := s.Outcomes(context.Background(), api.OutcomeFilter{}); len(outs) != 0 {
		t.Fatalf("refused outcomes were stored: %+v", outs)
	}
}

func TestCapabilityMatching(t *testing.T) {
	s := openTest(t, Options{})
	for _, o := range []api.Outcome{
		{Initiative: "migrate the users table", Outcome: "success", Domain: "db"},
		{Initiative: "migrate the orders table", Outcome: "failure", Domain: "db"},
		{Initiative: "migrate the billing table", Outcome: "success", Domain: "billing"},
		{Initiative: "index the orders table", Outcome: "success", Domain: "db"},
	} {
		report(t, s, o)
	}
	caps, err := s.Capabilities(context.Background(), "table migrate", "")
	if err != nil || len(caps) != 2 {
		t.Fatalf("caps = %+v, %v", caps, err)
	}
	if c := caps[0]; c.Name != "table migrate" || c.Domain != "db" || c.Attempts != 2 || c.Evidence != "1 successful initiative out of 2" || c.Confidence != 0.5 {
		t.Fatalf("db = %+v", c)
	}
	caps, _ = s.Capabilities(context.Background(), "migrate", "billing")
	if len(caps) != 1 || caps[0].Confidence != 0.67 {
		t.Fatalf("billing = %+v", caps)
	}
	if _, err := s.Capabilities(context.Background(), "the of", ""); !errors.Is(err, api.ErrLearnInvalid) {
		t.Fatalf("stopwords only: %v", err)
	}
	caps, _ = s.Capabilities(context.Background(), "", "db")
	if len(caps) != 1 || caps[0].Attempts != 3 {
		t.Fatalf("domain db = %+v", caps)
	}
}

type fixtureFile struct {
	Outcomes []struct {
		DaysAgo    int      `json:"days_ago"`
		Initiative string   `json:"initiative"`
		Outcome    string   `json:"outcome"`
		Reasoning  string   `json:"reasoning"`
		Domain     string   `json:"domain"`
		Learnings  []string `json:"learnings"`
	} `json:"outcomes"`
	Queries []struct {
		Query        string   `json:"query"`
		Context      string   `json:"context"`
		Budget       string   `json:"budget"`
		Patterns     []string `json:"patterns"`
		AntiPatterns []string `json:"anti_patterns"`
		Capabilities []string `json:"capabilities"`
	} `json:"queries"`
}

// loadFixture reports testdata/reflect_fixture.json's outcomes into s,
// each at its own time before ref.
func loadFixture(t *testing.T, s *Store, now *time.Time) fixtureFile {
	t.Helper()
	raw, err := os.ReadFile("testdata/reflect_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixtureFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, o := range f.Outcomes {
		*now = ref.Add(-time.Duration(o.DaysAgo) * 24 * time.Hour)
		reasoning := poorReasoning
		if o.Reasoning == "good" {
			reasoning = goodReasoning
		}
		report(t, s, api.Outcome{Initiative: o.Initiative, Outcome: o.Outcome, ReasoningPath: reasoning, Domain: o.Domain, Learnings: o.Learnings})
	}
	*now = ref
	return f
}

func texts(items []api.LearnItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Text)
	}
	return out
}

func TestReflectRanking(t *testing.T) {
	now := ref
	s := openTest(t, Options{Clock: func() time.Time { return now }})
	f := loadFixture(t, s, &now)
	for _, q := range f.Queries {
		r, err := s.Reflect(context.Background(), q.Query, q.Context, api.Budget(q.Budget))
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(r.Patterns); strings.Join(got, "|") != strings.Join(q.Patterns, "|") {
			t.Errorf("%q patterns:\n got %q\nwant %q", q.Query, got, q.Patterns)
		}
		if got := texts(r.AntiPatterns); strings.Join(got, "|") != strings.Join(q.AntiPatterns, "|") {
			t.Errorf("%q anti-patterns:\n got %q\nwant %q", q.Query, got, q.AntiPatterns)
		}
		var caps []string
		for _, c := range r.Capabilities {
			caps = append(caps, c.Domain)
			if !strings.HasPrefix(c.Note, c.Domain+": confidence ") {
				t.Errorf("note %q", c.Note)
			}
		}
		if strings.Join(caps, ",") != strings.Join(q.Capabilities, ",") {
			t.Errorf("%q capabilities %v, want %v", q.Query, caps, q.Capabilities)
		}
		n := len(r.Patterns) + len(r.AntiPatterns)
		if want := round2(float64(n) / float64(n+3)); r.Confidence != want || r.Mode != "retrieval" || !strings.Contains(r.Note, "retrieval only") {
			t.Errorf("%q: confidence %v (want %v), mode %s, note %q", q.Query, r.Confidence, want, r.Mode, r.Note)
		}
	}
	r, err := s.Reflect(context.Background(), "kubernetes", "", api.BudgetHigh)
	if err != nil || r.Confidence != 0 || len(r.Patterns) != 0 || !strings.Contains(r.Note, "nothing learnt yet") {
		t.Fatalf("no match: %+v, %v", r, err)
	}
	if _, err := s.Reflect(context.Background(), "the", "", api.BudgetLow); !errors.Is(err, api.ErrLearnInvalid) {
		t.Fatalf("empty query: %v", err)
	}
	if _, err := s.Reflect(context.Background(), "oauth", "", "huge"); !errors.Is(err, api.ErrLearnInvalid) {
		t.Fatalf("bad budget: %v", err)
	}
	// Recency: the same relevance decays to half weight, never below.
	if a, b := Score(-2, 0, 1), Score(-2, 30*24*time.Hour, 1); a != 2 || b != 1.5 {
		t.Fatalf("score fresh %v, one half-life %v", a, b)
	}
	if old := Score(-2, 10*365*24*time.Hour, 1); old < 1 || old > 1.01 {
		t.Fatalf("score old %v", old)
	}
}

func TestWisdomAndInjected(t *testing.T) {
	now := ref
	s := openTest(t, Options{Clock: func() time.Time { return now }})
	loadFixture(t, s, &now)
	items, err := s.Wisdom(context.Background(), "add OAuth login", 3)
	if err != nil || len(items) != 3 {
		t.Fatalf("wisdom = %+v, %v", items, err)
	}
	kinds := map[string]bool{}
	for i, it := range items {
		kinds[it.Kind] = true
		if i > 0 && it.Score > items[i-1].Score {
			t.Fatalf("not ranked: %+v", items)
		}
	}
	if !kinds[api.LearningPattern] || !kinds[api.LearningAntiPattern] {
		t.Fatalf("wisdom mixes both kinds by score: %+v", items)
	}
	ids := []int64{items[0].ID, items[1].ID}
	if err := s.RecordInjected(context.Background(), "PRD-OAUTH", ids); err != nil {
		t.Fatal(err)
	}
	again, _ := s.Wisdom(context.Background(), "add OAuth login", 3)
	if again[0].Injected != 1 {
		t.Fatalf("injected = %+v", again[0])
	}
	if err := s.RecordInjected(context.Background(), "PRD-OAUTH", []int64{9999}); !errors.Is(err, api.ErrLearnInvalid) {
		t.Fatalf("unknown id: %v", err)
	}
	if items, _ := s.Wisdom(context.Background(), "the", 3); len(items) != 0 {
		t.Fatalf("no words: %+v", items)
	}
}

func TestReflectCommand(t *testing.T) {
	dir := t.TempDir()
	now := ref
	// The command gets the material on stdin; keep a copy to check it.
	s := openTest(t, Options{Clock: func() time.Time { return now }, ReflectCommand: "cat > " + dir + "/in; echo 'Repeat: session store. Avoid: refreshing in handlers.'"})
	loadFixture(t, s, &now)
	r, err := s.Reflect(context.Background(), "OAuth tokens", "a new admin app", api.BudgetHigh)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "written" || r.Reflection != "Repeat: session store. Avoid: refreshing in handlers." {
		t.Fatalf("reflection = %+v", r)
	}
	in, _ := os.ReadFile(dir + "/in")
	for _, want := range []string{"Question: OAuth tokens", "Context: a new admin app", "- [auth, seen 2×] Store OAuth tokens in the session store", "auth: confidence"} {
		if !strings.Contains(string(in), want) {
			t.Errorf("material lacks %q:\n%s", want, in)
		}
	}
	// Budget mid does not run it.
	r, _ = s.Reflect(context.Background(), "OAuth tokens", "", api.BudgetMid)
	if r.Mode != "retrieval" || !strings.Contains(r.Note, "budget high") {
		t.Fatalf("mid = %+v", r)
	}
	// A failing command leaves retrieval, and says why.
	s.opts.ReflectCommand = "echo 'no API key' >&2; exit 3"
	r, _ = s.Reflect(context.Background(), "OAuth tokens", "", api.BudgetHigh)
	if r.Mode != "retrieval" || r.Note != "retrieval only: the reflect command failed: exit status 3: no API key" || len(r.Patterns) == 0 {
		t.Fatalf("failing = %+v", r)
	}
	// A hung command (and its children) is killed at the timeout.
	s.opts.ReflectCommand, s.opts.ReflectTimeout = "sleep 60 & sleep 60", 200*time.Millisecond
	r, _ = s.Reflect(context.Background(), "OAuth tokens", "", api.BudgetHigh)
	if r.Mode != "retrieval" || !strings.Contains(r.Note, "no answer in time (learn.reflect_timeout is 200ms)") {
		t.Fatalf("hung = %+v", r)
	}
	s.opts.ReflectCommand = ""
	r, _ = s.Reflect(context.Background(), "OAuth tokens", "", api.BudgetHigh)
	if r.Mode != "retrieval" || !strings.Contains(r.Note, "no learn.reflect_command is configured") {
		t.Fatalf("none = %+v", r)
	}
}
