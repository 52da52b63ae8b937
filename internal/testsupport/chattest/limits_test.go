package chattest

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// TestRealLimits drives each CLI into the limits of its provider, as the
// fake answers them with what OpenAI sends (a 429 whose message and
// Retry-After name the wait of a spent daily allowance; a spent quota that
// names none; a quota whose message names its reset), and checks what
// system3's rules make of the real screens: a usage limit (rate_limited,
// with the reset as the screen words it) only where the screen says a wait
// or a reset, else the rate limit's error, or working while the CLI waits
// without saying so. With -update-captures it saves the screens.
func TestRealLimits(t *testing.T) {
	for _, cli := range []CLI{Opencode, Qwen, Cline, Copilot} {
		t.Run(string(cli), func(t *testing.T) {
			t.Parallel()
			fakeAPI := NewFakeAPI(t)
			s := Start(t, cli, Options{API: fakeAPI, Home: home(t, cli)})
			c := newChecker(t, s)
			c.state("", api.Idle, "", string(cli)+".idle")
			limits[cli](t, s, c)
		})
	}
}

// limits are the scripts of TestRealLimits.
var limits = map[CLI]func(*testing.T, *Session, *checker){
	// Cline retries five times, 2 to 32 s apart, whatever Retry-After
	// says, then ends the turn with the API's message.
	Cline: func(t *testing.T, s *Session, c *checker) {
		s.API.FailNext(1000, UsageLimit(time.Hour))
		s.Send("usage-limit now")
		s.WaitForText("Please try again in", 150*time.Second)
		r := c.state("rate_limited_usage", api.RateLimited, "", "cline.usage_limit")
		if r.Resets != "in 1h0m0s" || !strings.Contains(r.Detail, "requests per day (RPD)") {
			t.Errorf("usage limit: resets %q, detail %q", r.Resets, r.Detail)
		}
		s.API.FailNext(1000, QuotaExceeded())
		s.Send("quota-spent now")
		s.WaitForText("exceeded your current quota", 150*time.Second)
		c.state("rate_limited_quota", api.Error, "rate_limited", "cline.rate_limited")
	},
	// Copilot does not retry a 429 whose Retry-After is long: it ends the
	// turn with the provider's message at once. Other 429s it retries five
	// times behind its Working footer (about a minute), then ends the turn
	// with the last error.
	Copilot: func(t *testing.T, s *Session, c *checker) {
		s.API.FailNext(1000, UsageLimit(time.Hour))
		s.Send("usage-limit now")
		s.WaitForText("Please try again in", 60*time.Second)
		r := c.state("rate_limited_usage", api.RateLimited, "", "copilot.usage_limit")
		if r.Resets != "in 1h0m0s" || !strings.Contains(r.Detail, "requests per day (RPD)") {
			t.Errorf("usage limit: resets %q, detail %q", r.Resets, r.Detail)
		}
		s.API.FailNext(1000, QuotaExceeded())
		s.Send("quota-spent now")
		s.WaitForText("Last error: 429", 180*time.Second)
		c.state("rate_limited_quota", api.Error, "rate_limited", "copilot.rate_limited")
	},
	// Qwen Code gives up at once on a quota whose message names its reset,
	// in words of its own; a long Retry-After it waits out behind its
	// spinner, saying nothing.
	Qwen: func(t *testing.T, s *Session, c *checker) {
		reset := time.Now().UTC().Add(24 * time.Hour).Truncate(24 * time.Hour)
		s.API.FailNext(1000, QuotaResets(reset))
		s.Send("quota-resets now")
		s.WaitForText("Quota exhausted", 60*time.Second)
		r := c.state("rate_limited_usage", api.RateLimited, "", "qwen.usage_limit")
		if want := reset.Format("2006-01-02 15:04:05") + " UTC"; r.Resets != want || !strings.HasPrefix(r.Detail, "Quota exhausted: ") {
			t.Errorf("usage limit: resets %q (want %q), detail %q", r.Resets, want, r.Detail)
		}
		s.Send("/clear")
		s.WaitFor("the input box", 0, func(sc string) bool { return !strings.Contains(sc, "Quota exhausted") && s.Ready(sc) })

		before := len(s.API.Requests())
		s.API.FailNext(1000, UsageLimit(time.Hour))
		s.Send("usage-limit now")
		s.WaitFor("its own retries", 60*time.Second, func(string) bool { return failed(s.API.Requests()[before:]) >= 4 })
		time.Sleep(5 * time.Second)
		c.state("working_rate_limited", api.Working, "", "qwen.working")
		s.API.FailNext(0, APIError{})
		s.Keys("Escape")
	},
	// opencode honours Retry-After: it counts down to its next attempt in
	// the footer and makes it by itself.
	Opencode: func(t *testing.T, s *Session, c *checker) {
		s.API.FailNext(1000, UsageLimit(time.Hour))
		s.Send("usage-limit now")
		s.WaitForText("retrying in", 90*time.Second)
		r := c.state("rate_limited_waiting", api.RateLimited, api.KindAutoResume, "opencode.usage_limit_waiting")
		if !strings.HasPrefix(r.Resets, "in 59m ") && r.Resets != "in 1h" {
			t.Errorf("usage limit: resets %q, want about an hour", r.Resets)
		}
		s.API.FailNext(0, APIError{})
		s.Keys("Escape")
		time.Sleep(300 * time.Millisecond)
		s.Keys("Escape")
	},
}

// failed counts the requests answered 429.
func failed(reqs []Request) int {
	n := 0
	for _, r := range reqs {
		if r.Status == 429 {
			n++
		}
	}
	return n
}
