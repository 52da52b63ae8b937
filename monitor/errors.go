package monitor

import (
	"regexp"
	"strings"
	"time"
)

var (
	attemptRe = regexp.MustCompile(`attempt (\d+)/(\d+)`)
	// Parts of an error line that differ between repeats of the same
	// failure: ids, numbers, paths and timestamps.
	hexRe   = regexp.MustCompile(`\b(0x)?[0-9a-f]{8,}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	pathRe  = regexp.MustCompile(`(~|\.{1,2})?(/[^\s/:'"()]+)+/?`)
	numRe   = regexp.MustCompile(`\d+(\.\d+)?`)
	spaceRe = regexp.MustCompile(`\s+`)
)

// normalizeError folds the parts of an error that change between repeats
// of the same failure, so repeats share one signature.
func normalizeError(s string) string {
	s = strings.ToLower(s)
	s = hexRe.ReplaceAllString(s, "#")
	s = pathRe.ReplaceAllString(s, "<path>")
	s = numRe.ReplaceAllString(s, "#")
	return strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
}

// errorHistory counts occurrences of error signatures in a pane. An
// occurrence is entering an error state, a different error while in one,
// or a retry countdown moving to its next attempt: a screen that merely
// stays the same (or counts seconds down) is one occurrence, not many.
type errorHistory struct {
	active       bool
	sig, attempt string
	seen         map[string][]time.Time
}

// observe records the error on screen now and returns how often its
// signature occurred within window.
func (h *errorHistory) observe(now time.Time, evidence []string, window time.Duration) int {
	raw := strings.Join(evidence, "\n")
	sig := normalizeError(raw)
	att := ""
	if m := attemptRe.FindStringSubmatch(raw); m != nil {
		// Claude Code words the first retries differently from later ones;
		// what repeats is the retrying itself.
		sig, att = "api retry", m[1]
	}
	occurred := !h.active || sig != h.sig || (att != "" && att != h.attempt)
	h.active, h.sig, h.attempt = true, sig, att
	if h.seen == nil {
		h.seen = map[string][]time.Time{}
	}
	cutoff := now.Add(-window)
	for k, ts := range h.seen {
		i := 0
		for i < len(ts) && ts[i].Before(cutoff) {
			i++
		}
		if i == len(ts) && k != sig {
			delete(h.seen, k)
			continue
		}
		h.seen[k] = ts[i:]
	}
	if occurred {
		h.seen[sig] = append(h.seen[sig], now)
	}
	return len(h.seen[sig])
}

// leave notes that the pane is out of its error state; the history stays,
// so an error that keeps coming back is still counted.
func (h *errorHistory) leave() { h.active, h.attempt = false, "" }
