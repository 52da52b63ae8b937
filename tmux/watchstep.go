package tmux

import (
	"slices"
	"time"
)

// paneTrack is what polling remembers of a pane between ticks.
type paneTrack struct {
	sig PaneSignal
	// rest is the pane as the last full listing showed it (see FullEvery):
	// where it is, its size, liveness, mode, title and command.
	rest     paneRest
	reported time.Time // last EventOutput for it
	changed  time.Time // last tick that saw it change
	quietAt  time.Time // when it was reported for going quiet; zero once it changed since
	layoutAt time.Time // last tick that saw its layout change
	held     bool      // changed since reported, not reported yet
	// streaming: its last report was only its beat while it kept
	// changing (Event.Streaming). fresh: a change after a quiet spell is
	// held, not reported yet; its report is not a beat.
	streaming, fresh bool
	wrote            bool // its terminal was written to since the last listing
	quiet            int  // ticks since it last changed
	settle           int  // quiet ticks that end a burst (adaptive, see step)
}

// paneRest is what only full listings are compared on.
type paneRest struct {
	sessionID, windowID string
	w, h, deadStatus    int
	dead, inMode, alt   bool
	title, command      string
}

func restOf(p Pane) paneRest {
	return paneRest{sessionID: p.SessionID, windowID: p.WindowID, w: p.Width, h: p.Height, deadStatus: p.DeadStatus,
		dead: p.Dead, inMode: p.InMode, alt: p.AlternateOn, title: p.Title, command: p.Command}
}

// step notes one tick of a pane and reports whether to send an
// EventOutput for it. s is what the tick listed, or nil when it listed
// nothing (the server read nothing, or terminal events told which panes
// were written to: see poll); wrote says the kernel saw the pane's
// terminal written to since the last tick.
//
// A pane that changes after a quiet spell of BusyGap is reported at once,
// and so is one whose layout (cursor or history size; not window_activity,
// which only says something was written) changes after a second without
// layout changes: a dialog drawn over an agent's steady working screen.
// Such a pane is reported again once it has been quiet for a tick, in case
// the first look caught the frame half drawn. A layout change the writes
// since the last listing explain, when the pane was reported for going
// quiet after them and nothing changed since, is not reported: the
// consumer has looked at that screen already (with terminal events, a
// dialog's writes are seen and reported going quiet before the next
// layout listing shows what they moved). What only full listings show
// (size, liveness, mode, title, command) counts as a change, not as
// layout. A pane that keeps changing is reported at most every BusyGap, and
// as soon as it has been quiet for settle ticks. settle starts at one
// tick, so a prompt drawn after a stream of output is reported one tick
// after it is drawn. A pane reported for going quiet that changes again
// within Settle of its last change was only pausing: its settle doubles
// (up to Settle), so output with short pauses is not captured at every
// pause. A pane quiet for BusyGap starts again from one tick.
//
// A pane whose terminal is watched changes on the ticks it was written
// to; a listing only adds its layout, and counts as a change only when no
// write explains it (something the terminal events cannot see: see
// ttyFeed). Other panes change when their listed signature does.
func (w *Watcher) step(tr *paneTrack, s *PaneSignal, restChanged, wrote bool, now time.Time) bool {
	tr.wrote = tr.wrote || wrote
	changed := restChanged || wrote
	moved, layout, seen := tr.listed(s, changed)
	changed = changed || moved
	stable := now.Sub(tr.layoutAt) >= w.opts.BusyGap
	if layout {
		tr.layoutAt = now
	}
	w.noteChange(tr, changed, now)
	switch {
	case layout && stable && !seen:
		tr.reported, tr.held, tr.streaming, tr.fresh = now, true, false, false // and again once quiet
		return true
	case tr.held && tr.quiet >= tr.settle:
		tr.reported, tr.held, tr.quietAt, tr.streaming, tr.fresh = now, false, now, false, false
		return true
	case changed && now.Sub(tr.reported) >= w.opts.BusyGap,
		tr.held && now.Sub(tr.reported) >= w.opts.BusyGap:
		// A beat leaves the pane held: it is reported again once quiet,
		// even when it stopped on this very tick, since a consumer may
		// not look at a beat.
		tr.streaming = !tr.fresh
		tr.reported, tr.held, tr.fresh = now, tr.streaming, false
		return true
	case changed:
		tr.held = true
	}
	return false
}

// listed takes a tick's listing of the pane, s (nil: the tick listed
// nothing; changed: the tick saw it change otherwise), and reports whether
// it shows a change no write explains, whether its layout moved (cursor or
// history size; not window_activity, which only says something was
// written), and whether that move only catches up with a screen already
// looked at: the layout moved with writes that were reported once they
// went quiet, and nothing changed since (a dialog drawn, then seen by the
// report for going quiet before this listing came).
func (tr *paneTrack) listed(s *PaneSignal, changed bool) (moved, layout, seen bool) {
	if s == nil {
		return false, false, false
	}
	prev := tr.sig
	tr.sig = *s
	moved = prev != *s && !tr.wrote
	prev.Activity = s.Activity
	layout = prev != *s
	seen = layout && tr.wrote && !changed && !tr.held && !tr.quietAt.IsZero() // tr.wrote: not moved
	tr.wrote = false
	return moved, layout, seen
}

// noteChange counts a tick of the pane, changed or not: a change after a
// quiet spell of BusyGap starts something new (a dialog drawn over a
// finished screen), never a beat; a change within Settle of the last,
// after the pane was reported for going quiet, was a pause, not a stop,
// and doubles its settle; a quiet spell of BusyGap starts it again from
// one tick.
func (w *Watcher) noteChange(tr *paneTrack, changed bool, now time.Time) {
	if !changed {
		tr.quiet++
		if now.Sub(tr.changed) >= w.opts.BusyGap {
			tr.settle = 1
		}
		return
	}
	if now.Sub(tr.changed) >= w.opts.BusyGap {
		tr.fresh = true
	}
	if !tr.quietAt.IsZero() && now.Sub(tr.changed) <= w.opts.Settle {
		tr.settle = min(tr.settle*2, w.maxSettle)
	}
	tr.quietAt = time.Time{}
	tr.changed, tr.quiet = now, 0
}

// tickEvents is a tick that listed nothing: panes in wrote were written
// to, and no other pane changed.
func (w *Watcher) tickEvents(tracks map[string]*paneTrack, wrote map[string]bool, now time.Time) {
	var reported []string
	for id, tr := range tracks {
		if !tr.held && tr.settle == 1 && !wrote[id] {
			// Nothing to report and nothing to count: a pane at rest
			// (its quiet ticks matter only while it is held).
			continue
		}
		if w.step(tr, nil, false, wrote[id], now) {
			reported = append(reported, id)
		}
	}
	for _, id := range w.piggyback(tracks, reported, now) {
		w.q.push(Event{Kind: EventOutput, PaneID: id, Streaming: tracks[id].streaming})
	}
}

// piggyback adds to the panes a tick reports (which the consumer
// captures in one batch, one connection to the server), once every
// BusyGap (the beat), every pane that changed since its last report.
// Panes that keep changing then fall into step with the beat (a pane
// joining is reported once early) and are captured together, once a
// BusyGap, instead of each on its own connection at its own moment; and
// no pane is reported more often than that for it (adding them to every
// tick that reports something would, with many panes, report each one
// every half BusyGap). It only adds reports: a piggybacked pane stays
// held, so it is still reported once it goes quiet (what it shows, or its
// agent's transcript, may not be final yet).
func (w *Watcher) piggyback(tracks map[string]*paneTrack, reported []string, now time.Time) []string {
	if now.Sub(w.beat) < w.opts.BusyGap {
		return reported
	}
	w.beat = now
	in := make(map[string]bool, len(reported))
	for _, id := range reported {
		in[id] = true
	}
	added := false
	for id, tr := range tracks {
		if !in[id] && tr.held {
			tr.reported, tr.streaming = now, !tr.fresh
			tr.fresh = false
			reported = append(reported, id)
			added = true
		}
	}
	if added {
		slices.Sort(reported)
	}
	return reported
}

// listOnEvents reports whether a tick, when terminal events tell every
// live pane's writes, lists panes' signatures: since is the time since the
// last listing, cost a listing's smoothed wall time, wrote whether any
// pane was written to, gate whether the server's read count can be read,
// and unexplained whether it read something no event explains (a
// terminal's echo, a write through /dev/tty) since the last listing.
// While panes are written to, it lists every LayoutEvery for their
// layout; otherwise for an unexplained read, or, without a read count,
// every LayoutEvery for such writes. Never closer than pollGap.
func (w *Watcher) listOnEvents(since, cost time.Duration, wrote, gate, unexplained bool) bool {
	if since < w.pollGap(cost) {
		return false
	}
	if !wrote && gate {
		return unexplained
	}
	return since >= w.opts.LayoutEvery
}

// pollGap is the shortest time between two listings: PollInterval, or
// longer when a listing takes more than 1/pollShare of it (many panes, a
// busy server or machine), up to maxPoll, so polling never takes more
// than about that share of the tmux server's time.
func (w *Watcher) pollGap(cost time.Duration) time.Duration {
	return min(max(w.opts.PollInterval, cost*pollShare), max(w.opts.PollInterval, maxPoll))
}

// tickGap is the time from one tick's start to the next. When terminal
// events tell every pane's writes, a tick that lists nothing costs the
// server nothing (one read of the kernel's queue), so ticks stay
// PollInterval apart and only listings are spaced by pollGap: a pane that
// goes quiet is seen within PollInterval however many panes there are.
// Otherwise every tick may list, and ticks are pollGap apart.
//
// A fleet where no pane has written for quietAfter ticks quietTicks
// times further apart: a prompt follows an agent's output (its spinner,
// its stream), which keeps the ticks PollInterval apart, so only the
// first change after a long quiet spell (someone typing, an agent
// starting) is seen up to that much later.
func (w *Watcher) tickGap(evented, quiet bool, cost time.Duration) time.Duration {
	if evented {
		if quiet {
			return quietTicks * w.opts.PollInterval
		}
		return w.opts.PollInterval
	}
	return w.pollGap(cost)
}

const (
	quietAfter = 5 * time.Second
	quietTicks = 4
)

// fullGap is the shortest time between two full listings: FullEvery,
// or maxFull when terminal events tell every pane's writes and every
// terminal made and freed. A pane that comes or goes, or whose process
// exits, then lists in full at once (its terminal is made or freed); an
// agent started or quit in a shell pane is read from /proc at its next
// capture (Supervisor.Foreground), not from a listing; what only a full
// listing shows (a rename, a move, a resize, a mode entered, a title
// tmux set, a shell's new directory) shows up to maxFull late. Without
// terminal events a full listing is how an exited process and a new pane
// are seen, so it stays FullEvery apart.
func (w *Watcher) fullGap(evented bool) time.Duration {
	if evented {
		return max(w.opts.FullEvery, maxFull)
	}
	return w.opts.FullEvery
}

const (
	pollShare = 20
	maxPoll   = 250 * time.Millisecond
	maxFull   = 5 * time.Second
)

// smooth folds a new sample into a running average (weight 1/4).
func smooth(avg, sample time.Duration) time.Duration {
	if avg == 0 {
		return sample
	}
	return avg + (sample-avg)/4
}
