package claudetest

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

var saveLimit = flag.Bool("update-limit-capture", false, "save the usage-limit screen to monitor/testdata/captures/claude/rate_limited_5h.txt")

// TestRealClaudeUsageLimit: with a subscription (an OAuth token) and the
// response headers of a spent 5-hour allowance, the real CLI says "You've
// hit your 5-hour limit · resets …" and waits to continue by itself at the
// reset ("Continuing automatically at …", then "Continuing shortly" once
// the reset has passed: it did not within 45 s of it). That is
// error/rate_limited with the reset as its detail.
func TestRealClaudeUsageLimit(t *testing.T) {
	t.Parallel()
	api := NewFakeAPI(t, Rule{Contains: "hello there", Steps: []Step{{Text: "Hello again."}}})
	reset := time.Now().Add(2 * time.Hour)
	api.FailNext(1000, SpentAllowance(reset))
	home := ""
	if *saveLimit {
		home = "/tmp/system3-claude-limit-capture"
		os.RemoveAll(home)
		t.Cleanup(func() { os.RemoveAll(home) })
	}
	s := Start(t, Options{API: api, Home: home, Env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=" + FakeOAuthToken}})
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	s.Send("hello there")
	var r rules.Result
	screen := s.WaitFor("the usage limit classified", 0, func(sc string) bool {
		r = e.Classify(rules.Input{Screen: sc, Processes: []string{"claude"}})
		return r.State == rules.Error
	})
	if r.Kind != "rate_limited" || r.Rule != "claude.rate_limited" || !strings.Contains(r.Detail, "hit your 5-hour limit · resets ") {
		t.Fatalf("usage limit = %+v\n%s", r, screen)
	}
	if *saveLimit {
		if err := os.WriteFile("../testdata/captures/claude/rate_limited_5h.txt", []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FakeOAuthToken makes the CLI take the account for a subscription.
const FakeOAuthToken = "sk-ant-oat01-claudetest00000000000000000000000000000000"

// SpentAllowance is the 429 a subscription's spent 5-hour allowance gets,
// with the unified rate-limit headers that say when it resets.
func SpentAllowance(reset time.Time) APIError {
	h := http.Header{}
	at := fmt.Sprint(reset.Unix())
	h.Set("anthropic-ratelimit-unified-status", "rejected")
	h.Set("anthropic-ratelimit-unified-reset", at)
	h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
	h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
	h.Set("anthropic-ratelimit-unified-5h-reset", at)
	h.Set("anthropic-ratelimit-unified-5h-utilization", "1.0")
	h.Set("anthropic-ratelimit-unified-overage-status", "rejected")
	h.Set("anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled")
	return APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error",
		Message: "This request would exceed your account's rate limit. Please try again later.", Header: h}
}
