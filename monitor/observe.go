package monitor

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// The observe stage: what tmux reports (events, listings) becomes the
// panes to capture, and their captures.

// scanNeed is the scan of every pane an event asks for, least first.
type scanNeed int

const (
	scanNone scanNeed = iota
	// scanListed: panes came, went or moved; the watcher's listing that
	// found it (tmux.EventListed, sent before) tells, or one made now.
	scanListed
	// scanFresh: the server went away or events were lost; only a
	// listing made now tells.
	scanFresh
)

// handle notes one tmux event (other than tmux.EventListed) and returns
// the scan it asks for.
func (s *Supervisor) handle(ev tmux.Event) scanNeed {
	switch ev.Kind {
	case tmux.EventOutput:
		s.previews.output(ev.PaneID)
		s.mu.Lock()
		defer s.mu.Unlock()
		if p, ok := s.panes[ev.PaneID]; ok {
			now := s.cfg.Clock()
			p.output = now
			if !(ev.Streaming && s.streamingLocked(p, now)) {
				p.dirty = true
			}
			return scanNone
		}
		return scanListed // output from a pane we have not listed yet
	case tmux.EventPaneModeChanged:
		return scanNone
	case tmux.EventSessionsChanged:
		return scanListed
	default:
		return scanFresh
	}
}

// streamingLocked reports whether a beat of a pane whose output streams on
// (tmux.Event.Streaming) may go unlooked at: its agent was working at its
// last capture, less than StreamCapture ago, and its screen matched a
// rule. A pane in any other state (a prompt, an error, a screen no rule
// explains) is looked at with every report, as before.
func (s *Supervisor) streamingLocked(p *paneState, now time.Time) bool {
	gap := s.cfg.StreamCapture
	return gap > 0 && p.sess.IsAgent() && p.sess.State == api.Working && p.unmatchedSince.IsZero() &&
		!p.captured.IsZero() && now.Sub(p.captured) < gap
}

// rescan lists panes, adds new ones (dirty), drops vanished ones and marks
// panes whose activity, cursor, size or liveness changed.
func (s *Supervisor) rescan(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	panes, err := s.cfg.Tmux.ListPanes(cctx)
	cancel()
	s.mu.Lock()
	ops := s.rescanLocked(panes, err, true)
	s.mu.Unlock()
	s.runOps(ops)
}

// scanListing is rescan with a listing the watcher made (tmux.EventListed)
// instead of one of its own. With signs false it marks dirty only panes
// that are new or whose size, liveness or process changed: the watcher
// reports panes whose screens change, so a listing it sends between two
// Rescans adds nothing else.
func (s *Supervisor) scanListing(panes []tmux.Pane, signs bool) {
	s.mu.Lock()
	ops := s.rescanLocked(panes, nil, signs)
	s.mu.Unlock()
	s.runOps(ops)
}

func (s *Supervisor) setListed(panes []tmux.Pane) {
	s.mu.Lock()
	s.listed, s.listedAt = panes, s.cfg.Clock()
	s.mu.Unlock()
}

// recentListing is the watcher's newest listing when it is younger than
// Rescan and a Tick: the watcher lists a fleet where nothing writes in
// full only every 5 s (tmux's maxFull), so its newest listing can be a
// tick older than Rescan when a rescan is due.
func (s *Supervisor) recentListing(now time.Time) ([]tmux.Pane, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed, s.listed != nil && now.Sub(s.listedAt) < s.cfg.Rescan+s.cfg.Tick
}

// rescanLocked applies a listing (or its error). A pane is marked dirty
// when it is new, when its size, liveness or process changed, and, with
// signs, when its activity, cursor or history changed since the last scan
// with signs (a safety net under the watcher's reports, every Rescan).
func (s *Supervisor) rescanLocked(panes []tmux.Pane, err error, signs bool) []wakeOp {
	now := s.cfg.Clock()
	if signs {
		s.lastScan = now
	}
	switch {
	case err == nil:
		s.running = true
		s.setProblemLocked("")
	case errors.Is(err, tmux.ErrNoServer):
		s.running, panes = false, nil
		s.setProblemLocked(fmt.Sprintf("no tmux server is running (%s); system3 will pick it up when it starts", s.cfg.Server))
	default:
		s.setProblemLocked(fmt.Sprintf("cannot list tmux panes: %v; showing the last known states", err))
		return nil
	}
	seen := make(map[string]bool, len(panes))
	var ops []wakeOp
	for _, p := range panes {
		seen[p.ID] = true
		st, ok := s.panes[p.ID]
		switch {
		case !ok:
			st = &paneState{dirty: true, scanned: p}
			st.sess = api.Session{Pane: p.ID, State: api.Unknown, Since: now, Options: []string{}, Evidence: api.Evidence{Lines: []string{}}}
			s.panes[p.ID] = st
			s.carryLocked(st, p)
		case changedProcess(st.pane, p), signs && changed(st.scanned, p):
			st.dirty = true
		}
		if signs {
			st.scanned = p
		}
		// A renamed session or a moved window keeps its panes (and their
		// wakes): only where they are shown changes.
		moved := ok && (st.pane.SessionName != p.SessionName || st.pane.SessionID != p.SessionID ||
			st.pane.WindowName != p.WindowName || st.pane.WindowIndex != p.WindowIndex || st.pane.Index != p.Index)
		if ok && st.pane.SessionName != p.SessionName {
			// Its open wakes follow, so a reader filtering by the new name finds them.
			ops = append(ops, wakeOp{pane: p.ID, rename: &[2]string{st.pane.SessionName, p.SessionName}})
		}
		st.pane = p
		applyPane(&st.sess, p)
		switch {
		case !ok:
			s.publishLocked(api.Update{Kind: api.SessionAdded, Session: st.sess.Clone()})
		case moved:
			s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: st.sess.State})
		}
	}
	for id, st := range s.panes {
		if !seen[id] {
			delete(s.panes, id)
			if st.seenAgent != "" && st.sess.State != api.Exited {
				// The pane closed with its agent (tmux closes a pane whose
				// command exits): the worker is gone as surely as if it had
				// crashed in place. The pane cannot come back, so the wake
				// is no condition that could end: it has no key of its own
				// and stays open until someone acknowledges it.
				gone := st.sess.Clone()
				gone.Agent, gone.State, gone.Kind = st.seenAgent, api.Exited, "closed"
				gone.Evidence = api.Evidence{Source: "process", Rule: "monitor.pane_closed",
					Lines: []string{fmt.Sprintf("the pane closed while %s was %s", st.seenAgent, st.sess.State)}}
				gone.Question, gone.Detail, gone.Options = "", "", []string{}
				op := s.raiseOp(gone, api.ReasonWorkerFailed)
				op.raise.Key = ""
				ops = append(ops, op)
			}
			ops = append(ops, s.clearWakesLocked(id)...)
			s.publishLocked(api.Update{Kind: api.SessionRemoved, Session: st.sess.Clone()})
		}
	}
	return ops
}

// changed reports whether a listing suggests the screen may differ.
func changed(a, b tmux.Pane) bool {
	return !a.Activity.Equal(b.Activity) || a.CursorX != b.CursorX || a.CursorY != b.CursorY ||
		a.HistorySize != b.HistorySize || changedProcess(a, b)
}

// changedProcess reports a change of a pane's size, liveness or process.
func changedProcess(a, b tmux.Pane) bool {
	return a.Dead != b.Dead || a.Width != b.Width || a.Height != b.Height ||
		a.Command != b.Command || a.PID != b.PID
}

func applyPane(ss *api.Session, p tmux.Pane) {
	ss.Session, ss.SessionID = p.SessionName, p.SessionID
	ss.Window, ss.WindowIndex, ss.PaneIndex = p.WindowName, p.WindowIndex, p.Index
	ss.Target = fmt.Sprintf("%s:%d.%d", p.SessionName, p.WindowIndex, p.Index)
	ss.Command, ss.PID, ss.Path = p.Command, p.PID, p.Path
	ss.Width, ss.Height = p.Width, p.Height
}

// flush captures and classifies every dirty pane, except panes captured
// less than MinCapture (OtherCapture without an agent) ago: they stay
// dirty, and flush returns how long until the first of them may be
// captured (0 when none is held back). A spinner redraws many times a
// second; capturing it each time would cost CPU and change nothing.
//
// Up to Captures tmux clients capture at once, up to captureBatchSize
// panes each, in the order of captureOrder: panes whose output stopped
// longest ago first (a prompt is drawn, then nothing), so with many panes
// streaming a pane that just settled is not stuck behind them. Classification stays on
// the caller's goroutine, in the order captures complete; flush returns
// only once every capture it started has ended.
func (s *Supervisor) flush(ctx context.Context) time.Duration {
	now := s.cfg.Clock()
	var wait time.Duration
	s.mu.Lock()
	dropGone(s.probes.panes, s.panes)
	dropGone(s.probes.versions, s.panes)
	dropGone(s.roots, s.panes)
	var todo []*paneState
	for _, st := range s.panes {
		if !st.dirty {
			continue
		}
		gap := s.cfg.MinCapture
		if !st.sess.IsAgent() {
			gap = s.cfg.OtherCapture
		}
		if d := gap - now.Sub(st.captured); gap > 0 && !st.captured.IsZero() && d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		todo = append(todo, st)
	}
	slices.SortFunc(todo, captureOrder)
	panes := make([]tmux.Pane, len(todo))
	for i, st := range todo {
		st.dirty, st.captured = false, now
		panes[i] = st.pane
	}
	s.mu.Unlock()
	eng := s.rules.Load()
	for c := range s.captures(ctx, panes) {
		p := c.pane
		if !p.Dead && c.err != nil {
			// The pane may have closed between listing and capture; the
			// next rescan removes it.
			s.cfg.Logger.Debug("capture", "pane", p.ID, "err", c.err)
			continue
		}
		res := s.classify(eng, p, c.screen)
		if res.Rule == api.RuleProcessGone && !p.Dead {
			// The listing can be older than the capture: a pane listed
			// while its shell was starting the agent shows the agent's
			// screen with the shell's name. Before calling the agent gone,
			// look at what the pane runs now.
			if fresh, ok := s.paneNow(ctx, p.ID); ok && (fresh.Command != p.Command || fresh.PID != p.PID) {
				p = fresh
				res = s.classify(eng, p, c.screen)
			}
		}
		res = s.followProgram(p.ID, res, c.screen)
		pr := s.withLink(p, s.probes.probe(p, res.Agent))
		pr.version = s.probes.versionOf(eng, p, res.Agent, c.screen)
		s.apply(p.ID, res, pr)
	}
	if ctx.Err() != nil {
		return 0
	}
	return wait
}

// dropGone deletes from a per-pane cache the panes no longer listed.
func dropGone[V any](cache map[string]V, panes map[string]*paneState) {
	maps.DeleteFunc(cache, func(id string, _ V) bool {
		_, ok := panes[id]
		return !ok
	})
}

// paneNow lists the panes again and returns p's current listing.
func (s *Supervisor) paneNow(ctx context.Context, id string) (tmux.Pane, bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	panes, err := s.cfg.Tmux.ListPanes(cctx)
	if err != nil {
		return tmux.Pane{}, false
	}
	for _, p := range panes {
		if p.ID == id {
			return p, true
		}
	}
	return tmux.Pane{}, false
}

// captureOrder orders dirty panes for capture: the pane whose last output
// is oldest first (one that printed a prompt and went quiet comes before
// one still streaming), then the one captured longest ago.
func captureOrder(a, b *paneState) int {
	if c := a.output.Compare(b.output); c != 0 {
		return c
	}
	if c := a.captured.Compare(b.captured); c != 0 {
		return c
	}
	return strings.Compare(a.pane.ID, b.pane.ID)
}

// captureBatchSize is how many panes the first tmux client of a flush
// captures, and captureRestSize how many each of the others does: a client
// (a connection, or a forked tmux) costs more than capturing a screen
// costs tmux, while a small first batch still lets the first panes (those
// quiet longest, where a prompt waits) be classified before the rest,
// which are mostly panes still writing, captured together.
const (
	captureBatchSize = 8
	captureRestSize  = 64
)

// batchCapturer is a Tmux that captures several panes with one client.
type batchCapturer interface {
	CaptureMany(ctx context.Context, panes []string, opt tmux.CaptureOptions) []tmux.Captured
}

// captureBatch captures panes, with one tmux client when the Tmux can.
func (s *Supervisor) captureBatch(ctx context.Context, panes []tmux.Pane) []captured {
	out := make([]captured, len(panes))
	if bc, ok := s.cfg.Tmux.(batchCapturer); ok && len(panes) > 1 {
		ids := make([]string, len(panes))
		for i, p := range panes {
			ids[i] = p.ID
		}
		for i, c := range bc.CaptureMany(ctx, ids, tmux.CaptureOptions{}) {
			out[i] = captured{pane: panes[i], screen: c.Screen, err: c.Err}
		}
		return out
	}
	for i, p := range panes {
		out[i].pane = p
		out[i].screen, out[i].err = s.cfg.Tmux.Capture(ctx, p.ID, tmux.CaptureOptions{})
	}
	return out
}

// captured is one pane's capture (none for a dead pane).
type captured struct {
	pane   tmux.Pane
	screen string
	err    error
}

// captures captures panes, at most Captures at once, starting them in
// order, and yields each as it completes. Once ctx ends no new capture
// starts. Every capture has ended when the sequence is over, even if the
// caller stops early.
func (s *Supervisor) captures(ctx context.Context, panes []tmux.Pane) iter.Seq[captured] {
	return func(yield func(captured) bool) {
		if len(panes) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		out := make(chan captured, len(panes)) // never blocks a capture
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, s.cfg.Captures)
			var inner sync.WaitGroup
			defer func() {
				inner.Wait()
				close(out)
			}()
			var live []tmux.Pane
			for _, p := range panes {
				if p.Dead {
					out <- captured{pane: p}
				} else {
					live = append(live, p)
				}
			}
			size := 1
			if _, ok := s.cfg.Tmux.(batchCapturer); ok {
				size = captureBatchSize
			}
			for len(live) > 0 {
				batch := live[:min(len(live), size)]
				live = live[len(batch):]
				if size > 1 {
					size = captureRestSize
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if ctx.Err() != nil {
					return
				}
				inner.Add(1)
				go func() {
					defer inner.Done()
					defer func() { <-sem }()
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					for _, c := range s.captureBatch(cctx, batch) {
						out <- c
					}
				}()
			}
		}()
		for c := range out {
			if !yield(c) {
				return
			}
		}
	}
}
