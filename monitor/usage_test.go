package monitor

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/tmux"
)

var testPrices = api.PriceTable{
	{Model: "claude-opus-*", Price: api.Price{Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.5}},
	{Model: "claude-sonnet-*", Price: api.Price{Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.3}},
}

// Usage from a recorded transcript, to the token: a response written as
// three entries counts once, a second model is kept apart, Claude Code's
// synthetic API-error entry and an unfinished last line count nothing.
func TestUsageFromTranscript(t *testing.T) {
	tail := &transcriptTail{path: filepath.Join("testdata", "captures", "claude", "transcript_usage.jsonl")}
	if err := tail.poll(); err != nil {
		t.Fatal(err)
	}
	u := tail.usage.usage(testPrices.Lookup)
	opus := api.Tokens{Input: 12 + 8, Output: 340 + 95, CacheWrite: 18250 + 1200, CacheRead: 18250}
	haiku := api.Tokens{Input: 2100, Output: 60}
	if u == nil || u.Responses != 3 || u.ByModel["claude-opus-5-5"] != opus || u.ByModel["claude-haiku-5-1"] != haiku || len(u.ByModel) != 2 {
		t.Fatalf("usage = %+v", u)
	}
	if u.Tokens != opus.Plus(haiku) || u.Total() != 20+435+19450+18250+2160 {
		t.Fatalf("totals = %+v", u.Tokens)
	}
	// Opus at 15/75/18.75/1.5 per million; haiku has no price.
	want := (20*15 + 435*75 + 19450*18.75 + 18250*1.5) / 1e6
	if math.Abs(u.CostUSD-want) > 1e-6 || len(u.Unpriced) != 1 || u.Unpriced[0] != "claude-haiku-5-1" {
		t.Fatalf("cost %v (want %v), unpriced %v", u.CostUSD, want, u.Unpriced)
	}
	if u := tail.usage.usage(nil); u.CostUSD != 0 || len(u.Unpriced) != 2 {
		t.Fatalf("without prices: %+v", u)
	}
	// The real Claude Code transcript (fake API): five responses.
	real := &transcriptTail{path: filepath.Join("testdata", "captures", "claude", "transcript_tool_errors.jsonl")}
	if err := real.poll(); err != nil {
		t.Fatal(err)
	}
	if u := real.usage.usage(nil); u == nil || u.Responses != 5 || u.Input != 500 || u.Output != 93 {
		t.Fatalf("real transcript usage = %+v", u)
	}
}

func TestPriceTableFirstMatchWins(t *testing.T) {
	pt := api.PriceTable{{Model: "claude-opus-5-*", Price: api.Price{Input: 1}}, {Model: "claude-opus-*", Price: api.Price{Input: 2}}}
	if p, ok := pt.Lookup("claude-opus-5-5"); !ok || p.Input != 1 {
		t.Fatalf("opus 5: %+v %v", p, ok)
	}
	if p, ok := pt.Lookup("claude-opus-4-1"); !ok || p.Input != 2 {
		t.Fatalf("opus 4: %+v %v", p, ok)
	}
	if _, ok := pt.Lookup("gpt-5"); ok {
		t.Fatal("an unknown model has a price")
	}
}

// A session's usage follows its transcript; past its budget it raises one
// budget_exceeded wake, not one per capture.
func TestUsageAndBudgetWake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	h := newHarness(t, func(c *Config) {
		c.Probe = func(tmux.Pane, *agent.Probe) AgentInfo { return AgentInfo{Transcript: path} }
		c.Prices = testPrices.Lookup
		c.Budget = func(session string) (float64, bool) { return 0.40, true }
	})
	h.clock.now = time.Date(2026, 11, 24, 10, 1, 0, 0, time.UTC)
	data, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "transcript_usage.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The first response alone costs about $0.37, all three $0.42: the
	// budget of $0.40 is passed by the last one.
	first := data[:indexNth(data, '\n', 4)+1]
	if err := os.WriteFile(path, first, 0o600); err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	s := h.session("%1")
	if s.Usage == nil || s.Usage.Responses != 1 || s.Usage.CostUSD > 0.4 || s.State != api.Idle {
		t.Fatalf("session = %+v, usage %+v", s, s.Usage)
	}
	if w := h.unacked(api.ReasonBudgetExceeded); len(w) != 0 {
		t.Fatalf("budget wake under budget: %+v", w)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.tm.show(t, "%1", "claude", "claude/idle.txt")
		h.step()
	}
	s = h.session("%1")
	if s.Usage == nil || s.Usage.Responses != 3 || s.Usage.CostUSD < 0.4 {
		t.Fatalf("usage after the rest: %+v", s.Usage)
	}
	w := h.unacked(api.ReasonBudgetExceeded)
	if len(w) != 1 || w[0].Pane != "%1" || w[0].Details == "" {
		t.Fatalf("budget wakes = %+v", w)
	}
}

func indexNth(b []byte, c byte, n int) int {
	for i := range b {
		if b[i] == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}
