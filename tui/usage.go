package tui

import (
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// usageText is a session's usage in one line: "48.2k tokens (in 1.2k · out
// 3.1k · cache read 40.1k · cache write 3.8k) · ≈ $0.42".
func usageText(u *api.Usage) string {
	t := humanCount(u.Total()) + " tokens (in " + humanCount(u.Input) + " · out " + humanCount(u.Output)
	if u.CacheRead > 0 {
		t += " · cache read " + humanCount(u.CacheRead)
	}
	if u.CacheWrite > 0 {
		t += " · cache write " + humanCount(u.CacheWrite)
	}
	t += ")"
	switch {
	case len(u.Unpriced) == 0:
		t += " · ≈ " + dollars(u.CostUSD)
	case len(u.Unpriced) < len(u.ByModel):
		t += " · ≈ " + dollars(u.CostUSD) + " + unpriced " + clean(strings.Join(u.Unpriced, ", "))
	default:
		t += " · no price for " + clean(strings.Join(u.Unpriced, ", ")) + " (usage.prices)"
	}
	return t
}

// humanCount is 950, 48.2k or 1.3M.
func humanCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
}

// dollars is $0.42, or $0.0031 below a cent.
func dollars(v float64) string {
	if v > 0 && v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}
