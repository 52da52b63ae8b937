package api

import (
	"testing"
	"time"
)

func TestResetText(t *testing.T) {
	now := time.Date(2026, 11, 28, 18, 5, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "resets at a time it did not say"},
		{now.Add(2*time.Hour + 5*time.Minute), "resets 20:10 (in 2h 5m)"},
		{now.Add(2 * time.Hour), "resets 20:05 (in 2h)"},
		{now.Add(45 * time.Second), "resets 18:05 (in 45s)"},
		{now.Add(30 * time.Hour), "resets Mon 30 Nov 00:05 (in 1d 6h)"},
		{now.Add(48 * time.Hour), "resets Mon 30 Nov 18:05 (in 2d)"},
		{now.Add(-3 * time.Minute), "reset at 18:02 (3m ago)"},
	} {
		if got := ResetText(tc.at, now); got != tc.want {
			t.Errorf("ResetText(%s) = %q, want %q", tc.at, got, tc.want)
		}
	}
}
