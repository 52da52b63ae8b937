package claudetest

import (
	"fmt"
	"net/http"
	"time"
)

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
