package coach

import (
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// maxSeen bounds the call ids remembered for de-duplication.
const maxSeen = 4096

// paneHistory is the recent tool calls of one pane.
type paneHistory struct {
	calls    []api.ToolCall
	language string
	// recent are the last calls with whether another source's report of
	// them was seen (see duplicate).
	recent []recentCall
	// The session the pane's calls came from, as last told.
	target, session, repo, agent string
}

// where fills what a call leaves out about its session (a hook knows the
// pane, not the repo) from the pane's earlier calls, and remembers it.
func (h *paneHistory) where(tc *api.ToolCall) {
	fill := func(dst *string, known *string) {
		if *dst == "" {
			*dst = *known
		} else {
			*known = *dst
		}
	}
	fill(&tc.Target, &h.target)
	fill(&tc.Session, &h.session)
	fill(&tc.Repo, &h.repo)
	fill(&tc.Agent, &h.agent)
}

type recentCall struct {
	tc     api.ToolCall
	paired bool
}

// Pairing one call reported by two sources (a transcript and a hook)
// without a shared id: the same tool, command, file and result, this close
// in time. maxRecent bounds the calls kept for it.
const (
	pairWithin = 5 * time.Second
	maxRecent  = 64
)

// duplicate reports whether tc is another source's report of a call
// already seen, and remembers it otherwise. Each report pairs with at
// most one other, so a call genuinely repeated still counts.
func (h *paneHistory) duplicate(tc api.ToolCall) bool {
	for i := len(h.recent) - 1; i >= 0; i-- {
		r := &h.recent[i]
		if r.paired || r.tc.Source == tc.Source {
			continue
		}
		if r.tc.ID != "" && tc.ID != "" {
			continue // both have ids, and they differ (equal ids never get here)
		}
		dt := tc.Time.Sub(r.tc.Time)
		if dt < -pairWithin || dt > pairWithin || r.tc.Tool != tc.Tool || r.tc.Failed != tc.Failed ||
			!sameText(r.tc.Command, tc.Command) || !sameText(r.tc.File, tc.File) {
			continue
		}
		r.paired = true
		return true
	}
	h.recent = append(h.recent, recentCall{tc: tc})
	if len(h.recent) > maxRecent {
		h.recent = append([]recentCall(nil), h.recent[len(h.recent)-maxRecent:]...)
	}
	return false
}

// sameText: equal, or one a shortened form of the other (a hook's summary
// of a long command: its lines joined with " · ", cut with "…").
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	flat := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSuffix(s, "…"), " · ", " ")), " ")
	}
	a, b = flat(a), flat(b)
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 20 && strings.HasPrefix(b, a)
}

// Bounds on the history kept per pane (up to twice as much is held
// between trims).
const (
	maxHistory    = 512
	maxHistoryAge = rules.MaxPatternWindow
)
