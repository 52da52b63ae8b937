package monitor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// limitMark is the usage limit a pane shows: the words its screen (or a
// hook) used for when it resets, and the time they were read as when
// first seen. Words on a screen that stays up ("resets 8:10pm") mean the
// same moment hours later, so they are read once. A countdown ("retrying
// in 59m 46s", then "59m 45s"...) says the same moment in new words: read
// within countdownSlack of the moment read before, it is that limit.
type limitMark struct {
	text string
	at   time.Time
}

// countdownSlack is how far apart two readings of a countdown may fall and
// still name one reset: a countdown in minutes ("1h 5m") is a minute
// coarse, and a screen is read a moment after it was drawn.
const countdownSlack = 90 * time.Second

// read returns when the usage limit of a pane classified in state resets:
// the rule's reading of the screen (text), or what a hook said (its
// evidence), read as seen now, in the agent's zone (unless the words name
// theirs), the first time those words show.
func (m *limitMark) read(state api.State, text string, ev api.Evidence, now time.Time, zone func() *time.Location) time.Time {
	if state != api.RateLimited {
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
	if !at.IsZero() && !m.at.IsZero() && at.Sub(m.at).Abs() <= countdownSlack {
		at = m.at
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

// resumeLimits continues each agent whose usage limit has reset while
// nothing continues it by itself (Config.ResumeAfterLimit): its Spec's
// Continue is typed at its prompt, once per limit, ResumeDelay after the
// reset the screen names. The typing goes through Inject, as every
// action does: the policy's gate, the audit log under api.ResumeOrigin,
// and WhileLimited, so the pane is read again right before and nothing is
// typed unless it still shows that limit. It runs on goroutines of its
// own, which Run waits for.
func (s *Supervisor) resumeLimits(ctx context.Context, now time.Time) {
	if !s.cfg.ResumeAfterLimit {
		return
	}
	type due struct {
		sess api.Session
		text string
	}
	var todo []due
	s.mu.Lock()
	for _, st := range s.panes {
		ss := st.sess
		if ss.State != api.RateLimited || ss.Kind != "" || ss.ResetsAt.IsZero() || now.Before(ss.ResetsAt.Add(s.cfg.ResumeDelay)) ||
			!ss.ResetsAt.After(st.resumed) {
			continue
		}
		text := agents.Lookup(ss.Agent).Continue
		if text == "" {
			continue
		}
		// Once, whatever comes of it: an agent that hits the same limit
		// again after the continue is left to a person.
		st.resumed = ss.ResetsAt
		todo = append(todo, due{ss.Clone(), text})
	}
	s.mu.Unlock()
	for _, d := range todo {
		s.resumes.Add(1)
		go func() {
			defer s.resumes.Done()
			s.resume(ctx, d.sess, d.text)
		}()
	}
}

// resume types text to continue sess's agent after its usage limit, and
// says what came of it. While it types, the decide stage leaves the
// limit's wake to it (paneState.resuming): when the continue was typed,
// the wake says system3 continued the agent, even if the agent went on
// before the typing was verified; when nothing was typed (the screen no
// longer showed the limit, or typing failed), the log and the audit log
// say why, and the wake is resolved as the agent's own move if the pane
// has left the limit meanwhile.
func (s *Supervisor) resume(ctx context.Context, sess api.Session, text string) {
	// Not cut short by the monitors stopping: a continue half typed is
	// worse than one typed late.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), injectTimeout)
	defer cancel()
	s.setResuming(sess.Pane, true)
	res, err := s.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: sess.Pane}, Text: text, Origin: api.ResumeOrigin, WhileLimited: sess.ResetsAt})
	cur, left := s.setResuming(sess.Pane, false)
	why := fmt.Sprintf("continued by system3 after the reset (resume_after_limit): typed %q", text)
	if err != nil {
		level := s.cfg.Logger.Warn
		if errors.Is(err, api.ErrLimitChanged) {
			level = s.cfg.Logger.Info
		}
		level("usage limit: nothing typed to continue the agent", "pane", sess.Pane, "agent", sess.Agent, "resets_at", sess.ResetsAt, "err", err)
		if !left {
			return
		}
		why = fmt.Sprintf("the agent moved on (now %s)", cur.State)
	} else {
		s.cfg.Logger.Info("usage limit: continued the agent after the reset", "pane", sess.Pane, "agent", sess.Agent, "resets_at", sess.ResetsAt, "text", text, "verified", res.Verified)
	}
	if err := s.Resolve(wakeKey(api.ReasonUsageLimit, sess.Pane), why); err != nil {
		s.cfg.Logger.Warn("resolve the usage limit's wake", "pane", sess.Pane, "err", err)
	}
}

// setResuming marks pane's usage limit as being continued by system3, or
// unmarks it, and returns the pane's session and whether it has left its
// usage limit for another state; a pane gone has.
func (s *Supervisor) setResuming(pane string, on bool) (api.Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.panes[pane]
	if !ok {
		return api.Session{State: api.Exited}, true
	}
	st.resuming = on
	return st.sess.Clone(), st.sess.State != api.RateLimited
}
