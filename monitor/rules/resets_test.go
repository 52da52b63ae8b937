package rules

import (
	"testing"
	"time"
)

func TestParseReset(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	utc := time.UTC
	// Seen at 18:05 UTC on Saturday 28 November 2026.
	seen := time.Date(2026, 11, 28, 18, 5, 30, 0, utc)
	at := func(loc *time.Location, y int, mo time.Month, d, h, m int) time.Time {
		return time.Date(y, mo, d, h, m, 0, 0, loc)
	}
	for _, tc := range []struct {
		text string
		seen time.Time
		loc  *time.Location
		want time.Time // zero: not a reset
	}{
		// Claude Code, within a day: 12-hour, the minute left out on the hour.
		{"8:10pm", seen, utc, at(utc, 2026, 11, 28, 20, 10)},
		{"8:10pm (UTC)", seen, ny, at(utc, 2026, 11, 28, 20, 10)},
		{"12am (UTC)", seen, utc, at(utc, 2026, 11, 29, 0, 0)},
		{"12pm", seen, utc, at(utc, 2026, 11, 29, 12, 0)},
		{"11:44pm (UTC)", seen, utc, at(utc, 2026, 11, 28, 23, 44)},
		{"3pm (America/Los_Angeles)", seen, utc, at(mustZone(t, "America/Los_Angeles"), 2026, 11, 28, 15, 0)},
		// The screen's minute may have begun before the limit was seen.
		{"6:05pm", seen, utc, at(utc, 2026, 11, 28, 18, 5)},
		{"6:01pm", seen, utc, at(utc, 2026, 11, 28, 18, 1)},
		// Further back, it is tomorrow's: across midnight.
		{"5:55pm", seen, utc, at(utc, 2026, 11, 29, 17, 55)},
		{"1:30am", time.Date(2026, 12, 31, 23, 50, 0, 0, utc), utc, at(utc, 2027, 1, 1, 1, 30)},
		// Codex: 12-hour with a space, in the CLI's zone, which it does not name.
		{"9:52 PM", seen, ny, at(ny, 2026, 11, 28, 21, 52)},
		{"9:52 PM.", seen, ny, at(ny, 2026, 11, 28, 21, 52)},
		{"1:05 PM", seen, ny, at(ny, 2026, 11, 28, 13, 5)}, // 18:05 UTC is 13:05 in New York
		{"Nov 30th, 2026 12:53 AM", seen, ny, at(ny, 2026, 11, 30, 0, 53)},
		{"Dec 1st, 2026 9:05 PM.", seen, ny, at(ny, 2026, 12, 1, 21, 5)},
		// Claude Code, more than a day ahead, with the year when it is not this one.
		{"Dec 3, 5pm (UTC)", seen, utc, at(utc, 2026, 12, 3, 17, 0)},
		{"Dec 3, 5:30pm", seen, paris, at(paris, 2026, 12, 3, 17, 30)},
		{"Jan 2, 2027, 3pm (Europe/Paris)", seen, utc, at(paris, 2027, 1, 2, 15, 0)},
		{"Jan 2, 3pm", seen, utc, at(utc, 2027, 1, 2, 15, 0)}, // next year's
		// 24-hour clocks and ISO dates.
		{"20:10", seen, utc, at(utc, 2026, 11, 28, 20, 10)},
		{"00:15", seen, utc, at(utc, 2026, 11, 29, 0, 15)},
		{"2026-11-30 20:10", seen, paris, at(paris, 2026, 11, 30, 20, 10)},
		{"2026-11-30T20:10:00Z", seen, paris, at(utc, 2026, 11, 30, 20, 10)},
		// Durations from when it was seen.
		{"in 2h 5m", seen, utc, seen.Add(2*time.Hour + 5*time.Minute)},
		{"in 2h5m", seen, utc, seen.Add(2*time.Hour + 5*time.Minute)},
		{"in 2 hours, 5 minutes", seen, utc, seen.Add(2*time.Hour + 5*time.Minute)},
		{"in 1 day and 3 hours", seen, utc, seen.Add(27 * time.Hour)},
		{"in 45s", seen, utc, seen.Add(45 * time.Second)},
		{"in 20 mins", seen, utc, seen.Add(20 * time.Minute)},
		// The duration alone (the Gemini CLI's "Suggested retry after 3600s").
		{"3600s", seen, utc, seen.Add(time.Hour)},
		{"1h0m0s", seen, utc, seen.Add(time.Hour)},
		// Seconds, and the zone named by its abbreviation.
		{"2026-11-30 00:00:00 UTC", seen, paris, at(utc, 2026, 11, 30, 0, 0)},
		{"2026-11-30 00:00:00", seen, paris, at(paris, 2026, 11, 30, 0, 0)},
		{"2026-11-30 20:10 GMT.", seen, ny, at(utc, 2026, 11, 30, 20, 10)},
		{"5:35 AM UTC", seen, ny, at(utc, 2026, 11, 29, 5, 35)},
		// Not resets.
		{"", seen, utc, time.Time{}},
		{"soon", seen, utc, time.Time{}},
		{"3", seen, utc, time.Time{}},
		{"13pm", seen, utc, time.Time{}},
		{"0am", seen, utc, time.Time{}},
		{"24:00", seen, utc, time.Time{}},
		{"8:61pm", seen, utc, time.Time{}},
		{"Feb 30, 3pm", seen, utc, time.Time{}},
		{"Foo 3, 3pm", seen, utc, time.Time{}},
		{"in 2 months", seen, utc, time.Time{}},
		{"in", seen, utc, time.Time{}},
		{"utc", seen, utc, time.Time{}},
		{"2 apples", seen, utc, time.Time{}},
	} {
		got, ok := ParseReset(tc.text, tc.seen, tc.loc)
		if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
			t.Errorf("ParseReset(%q, %s, %s) = %s, %v; want %s", tc.text, tc.seen.Format(time.RFC3339), tc.loc, got, ok, tc.want)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// A time of day read from the same screen means the same moment in
// every zone the monitors may run in: the one the screen names.
func TestParseResetNamedZoneWins(t *testing.T) {
	seen := time.Date(2026, 11, 28, 18, 5, 0, 0, time.UTC)
	a, _ := ParseReset("8:10pm (UTC)", seen, mustZone(t, "Asia/Tokyo"))
	b, _ := ParseReset("8:10pm (UTC)", seen, mustZone(t, "America/New_York"))
	if !a.Equal(b) || a.UTC().Hour() != 20 {
		t.Errorf("8:10pm (UTC) read as %s and %s", a, b)
	}
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"8:10pm (UTC)", "12am", "Nov 30th, 2026 12:53 AM.", "Jan 2, 2027, 3pm (Europe/Paris)", "in 2h 5m", "20:10", "2026-11-30 20:10", "in 1 day and 3 hours"} {
		f.Add(s)
	}
	seen := time.Date(2026, 11, 28, 18, 5, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		at, ok := ParseReset(s, seen, time.UTC)
		if !ok {
			if !at.IsZero() {
				t.Fatalf("ParseReset(%q) failed with a time %s", s, at)
			}
			return
		}
		if at.IsZero() {
			t.Fatalf("ParseReset(%q) = the zero time", s)
		}
	})
}
