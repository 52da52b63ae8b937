package api

import (
	"fmt"
	"time"
)

// ResetText says when a usage limit resets, for people, in the zone of
// at: "resets 20:10 (in 2h 5m)", "resets Mon 30 Nov 00:53 (in 1d 6h)",
// "reset at 20:10 (3m ago)", or "resets at a time it did not say" for a
// zero at. Every view (the dashboard, wakes, briefs, notifications) says
// it this way.
func ResetText(at, now time.Time) string {
	if at.IsZero() {
		return "resets at a time it did not say"
	}
	when := at.Format("15:04")
	y1, m1, d1 := at.Date()
	if y2, m2, d2 := now.In(at.Location()).Date(); y1 != y2 || m1 != m2 || d1 != d2 {
		when = at.Format("Mon 2 Jan 15:04")
	}
	if d := at.Sub(now); d > 0 {
		return fmt.Sprintf("resets %s (in %s)", when, span(d))
	}
	return fmt.Sprintf("reset at %s (%s ago)", when, span(now.Sub(at)))
}

// span is a duration in the words of a countdown: "2h 5m", "1d 6h",
// "45s".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		if m := int(d%time.Hour) / int(time.Minute); m > 0 {
			return fmt.Sprintf("%dh %dm", int(d/time.Hour), m)
		}
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	if h := int(d%(24*time.Hour)) / int(time.Hour); h > 0 {
		return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), h)
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
