package rules

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// resetSlack is how far before the moment it was seen a reset read as a
// time of day (or a date without a year) may lie and still be that time
// today (this year), not tomorrow (next year). A screen shows the minute
// the reset falls in, and a limit may be seen a little late (monitors
// started after it was drawn); a time of day further back is the next
// day's.
const resetSlack = 5 * time.Minute

// ParseReset reads when a usage limit resets from the words a screen
// uses for it (a rule's extract.resets), as seen at the time seen, in loc
// unless the text names its zone:
//
//   - a time of day: "8:10pm", "8:10 PM", "12am", "20:10", its next
//     occurrence (see resetSlack), the minute it names;
//   - a date and time: "Nov 30, 3pm", "Nov 30, 2027, 3:30pm" (Claude
//     Code, more than a day ahead), "Nov 30th, 2026 12:53 AM" (Codex),
//     "2026-11-30 20:10", "2026-11-30 20:10:00", RFC 3339;
//   - a duration from seen: "in 2h 5m", "in 2 hours, 5 minutes", "in 45s",
//     or the duration alone, "3600s" (the Gemini CLI's "Suggested retry
//     after 3600s").
//
// Either of the first two may end with the zone in parentheses, as Claude
// Code writes it ("8:10pm (UTC)", "3pm (America/Los_Angeles)"), or with
// UTC or GMT ("2026-11-30 00:00:00 UTC"); a zone Go does not know is taken
// for loc. A trailing full stop does not count. ok is false for anything
// else.
func ParseReset(text string, seen time.Time, loc *time.Location) (t time.Time, ok bool) {
	s := strings.TrimSpace(text)
	s = strings.TrimSpace(strings.TrimRight(s, ".。"))
	if loc == nil {
		loc = time.Local
	}
	if len(s) == 0 || len(s) > 80 {
		return time.Time{}, false
	}
	if at, err := time.Parse(time.RFC3339, s); err == nil {
		return at, true
	}
	if m := zoneRE.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
		if z, err := time.LoadLocation(m[2]); err == nil {
			loc = z
		}
	}
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	if m := utcRE.FindStringSubmatch(s); m != nil {
		s, loc = m[1], time.UTC
	}
	if rest, ok := strings.CutPrefix(s, "in "); ok {
		d, ok := parseSpan(rest)
		if !ok {
			return time.Time{}, false
		}
		return seen.Add(d), true
	}
	seen = seen.In(loc)
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if at, err := time.ParseInLocation(layout, s, loc); err == nil {
			return at, true
		}
	}
	if h, m, ok := clock(s); ok {
		at := time.Date(seen.Year(), seen.Month(), seen.Day(), h, m, 0, 0, loc)
		if at.Before(seen.Add(-resetSlack)) {
			at = time.Date(seen.Year(), seen.Month(), seen.Day()+1, h, m, 0, 0, loc)
		}
		return at, true
	}
	dm := dateRE.FindStringSubmatch(s)
	if dm == nil {
		if d, ok := parseSpan(s); ok {
			return seen.Add(d), true
		}
		return time.Time{}, false
	}
	month, ok := months[dm[1][:3]]
	day, _ := strconv.Atoi(dm[2])
	h, m, okClock := clock(dm[4])
	if !ok || !okClock || day < 1 || day > 31 {
		return time.Time{}, false
	}
	if dm[3] != "" {
		year, _ := strconv.Atoi(dm[3])
		at := time.Date(year, month, day, h, m, 0, 0, loc)
		if at.Day() != day {
			return time.Time{}, false // Feb 30
		}
		return at, true
	}
	for year := seen.Year(); year <= seen.Year()+1; year++ {
		at := time.Date(year, month, day, h, m, 0, 0, loc)
		if at.Day() == day && !at.Before(seen.Add(-resetSlack)) {
			return at, true
		}
	}
	return time.Time{}, false
}

var (
	// zoneRE splits "8:10pm (America/New_York)" into the time and the zone.
	zoneRE = regexp.MustCompile(`^(.*\S)\s*\(([A-Za-z][A-Za-z0-9_+\-/]*)\)$`)
	// utcRE splits "2026-11-30 00:00:00 utc" (lowered) into the time and
	// the zone named by its abbreviation.
	utcRE = regexp.MustCompile(`^(.*\S)\s+(?:utc|gmt)$`)
	// clockRE is a time of day: "8:10pm", "8:10 pm", "12am", "20:10".
	clockRE = regexp.MustCompile(`^(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?$`)
	// dateRE is a month and day, maybe a year, then a time of day: "nov 30,
	// 3pm", "nov 30, 2027, 3:30pm", "nov 30th, 2026 12:53 am".
	dateRE = regexp.MustCompile(`^([a-z]{3})[a-z]*\.? (\d{1,2})(?:st|nd|rd|th)?,?(?: (\d{4}),?)?(?: at)? (\d.*)$`)
	// spanRE is one part of a duration: "2h", "5 minutes".
	spanRE = regexp.MustCompile(`(\d{1,4})\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)`)
)

var months = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
	"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

// clock reads a time of day, 12-hour with am or pm, or 24-hour with
// minutes ("3" alone says nothing).
func clock(s string) (h, m int, ok bool) {
	c := clockRE.FindStringSubmatch(s)
	if c == nil || (c[2] == "" && c[3] == "") {
		return 0, 0, false
	}
	h, _ = strconv.Atoi(c[1])
	if c[2] != "" {
		m, _ = strconv.Atoi(c[2])
	}
	if m > 59 {
		return 0, 0, false
	}
	switch ampm := strings.ReplaceAll(c[3], ".", ""); ampm {
	case "":
		if h > 23 {
			return 0, 0, false
		}
	default:
		if h < 1 || h > 12 {
			return 0, 0, false
		}
		h %= 12
		if ampm == "pm" {
			h += 12
		}
	}
	return h, m, true
}

// parseSpan reads a duration in words: "2h 5m", "2h5m", "2 hours, 5
// minutes", "1 day and 3 hours".
func parseSpan(s string) (time.Duration, bool) {
	var d time.Duration
	n := 0
	rest := spanRE.ReplaceAllStringFunc(s, func(part string) string {
		m := spanRE.FindStringSubmatch(part)
		v, _ := strconv.Atoi(m[1])
		unit := time.Second
		switch m[2][0] {
		case 'd':
			unit = 24 * time.Hour
		case 'h':
			unit = time.Hour
		case 'm':
			unit = time.Minute
		}
		d += time.Duration(v) * unit
		n++
		return " "
	})
	rest = strings.NewReplacer(",", "", "and", "").Replace(rest)
	return d, n > 0 && strings.TrimSpace(rest) == ""
}
