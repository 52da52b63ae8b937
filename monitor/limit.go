package monitor

import (
	"fmt"
	"strings"
	"time"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// limitMark is the usage limit a pane shows: the words its screen (or a
// hook) used for when it resets, and the time they were read as when
// first seen. Words on a screen that stays up ("resets 8:10pm") mean the
// same moment hours later, so they are read once.
type limitMark struct {
	text string
	at   time.Time
}

// read returns when the usage limit of a pane classified in state resets:
// the rule's reading of the screen (text), or what a hook said (its
// evidence), read as seen now, in the agent's zone (unless the words name
// theirs), the first time those words show.
func (m *limitMark) read(state rules.State, text string, ev api.Evidence, now time.Time, zone func() *time.Location) time.Time {
	if state != rules.RateLimited {
		*m = limitMark{}
		return time.Time{}
	}
	if text == "" && ev.Source == "hook" {
		text = resetsIn(ev.Lines)
	}
	if text == "" || text == m.text {
		// No words this time (a hook that said none): the limit's reset
		// as read before, if any.
		return m.at
	}
	at, ok := rules.ParseReset(text, now, zone())
	if !ok {
		at = time.Time{}
	}
	*m = limitMark{text: text, at: at}
	return at
}

// zoneOf is the time zone of the agent under the pane's process pid: the
// zone its screen tells times in.
func (s *Supervisor) zoneOf(pid int) func() *time.Location {
	return func() *time.Location {
		if s.cfg.Zone != nil {
			if z := s.cfg.Zone(pid); z != nil {
				return z
			}
		}
		return time.Local
	}
}

// PaneZone is the time zone an agent under the pane's process pid tells
// times in: the TZ its processes run with, nil when none sets one (then
// the system's, as for system3). A Config's Zone.
func PaneZone(pid int) *time.Location {
	tz := strings.TrimPrefix(envInTree(pid, "TZ"), ":")
	if tz == "" {
		return nil
	}
	z, err := time.LoadLocation(tz)
	if err != nil {
		return nil
	}
	return z
}

// resetsIn finds when a limit resets in the lines a hook reported: Claude
// Code's StopFailure repeats the screen's words in its
// last_assistant_message ("You've hit your 5-hour limit · resets 8:10pm
// (UTC)").
func resetsIn(lines []string) string {
	for _, l := range lines {
		if _, after, ok := strings.Cut(l, " · resets "); ok {
			return strings.TrimSpace(after)
		}
	}
	return ""
}

// limitSuggestion is the usage_limit wake's next step: when the limit
// resets, and who continues the agent then.
func (s *Supervisor) limitSuggestion(cur api.Session, agent, where string) string {
	what := fmt.Sprintf("%s in %s hit its usage limit, which %s", agent, where, api.ResetText(cur.ResetsAt, s.cfg.Clock()))
	if cur.ResetsAt.IsZero() {
		what = fmt.Sprintf("%s in %s hit its usage limit; its screen does not say when it resets", agent, where)
	}
	if cur.Kind == rules.KindAutoResume {
		return what + ". It continues by itself then: nothing to do, unless you switch accounts (Escape in its pane cancels its automatic continue)."
	}
	return what + ". Nothing continues it by itself: tell it to continue once the limit has reset, or switch accounts."
}
