package tmux

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
)

// poll is the polling loop, and no control client is ever attached. Each
// tick is one list-panes of PaneSignals (numbers and ids only); every
// FullEvery (see fullGap), and at once when a pane appears or disappears,
// the tick lists panes in full instead, for where panes are, their names,
// sizes, modes, liveness, titles and commands, and the server's pid, and
// hands that listing to the consumer (EventListed; not the first, whose
// EventResync asks for a listing anew). Ticks never
// overlap: the next waits for this one, PollInterval apart, or more when
// listing is slow and every tick lists (see tickGap). See step for when a
// changed pane is reported.
//
// Most ticks list nothing. The kernel says which panes' terminals were
// written to (ttyFeed) and when a terminal is made or freed (then the tick
// lists in full at once); the tmux server's read count says whether
// anything at all was written (ioReader). A tick lists panes only when
// something was written that no terminal event explains (a pane whose
// terminal is not watched, a terminal's own echo), when events were lost,
// and, while panes are written to, every LayoutEvery for their layout.
func (w *Watcher) poll(ctx context.Context, why string) error {
	p := &poller{w: w, why: why, lister: &Client{Server: w.server}, wrote: map[string]bool{}}
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer p.io.close()
	if !w.opts.NoReadGate && !w.opts.NoTTYEvents {
		var err error
		if p.feed, err = newTTYFeed(); err != nil {
			w.log.Info("tmux: no terminal write events; listing panes at every tick the server reads", "err", err)
			p.feed = nil
		}
		defer p.feed.close()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		next, end, err := p.tick(ctx)
		if end {
			return err
		}
		timer.Reset(next)
	}
}

// poller is what the polling loop remembers between ticks.
type poller struct {
	w      *Watcher
	why    string // polling rather than control mode
	lister *Client

	tracks    map[string]*paneTrack
	topo      string // of the last full listing
	ids       string // of the last listing of either kind
	up        bool
	lastErr   string
	serverPID int
	lastFull  time.Time
	lastLight time.Time
	cost      time.Duration // a light listing's wall time, smoothed
	// The server's read count at the last tick, and whether it can be
	// read (see ioReader).
	reads uint64
	gate  bool
	io    ioReader
	// feed reports writes to panes' terminals while feedOn; unwatched
	// counts live panes whose terminal it could not watch, and
	// relist asks the next tick to list (panes just watched may have
	// written before their watch was added).
	feed      *ttyFeed
	feedOn    bool
	unwatched int
	relist    bool
	wrote     map[string]bool // the panes written to since the last tick
	// unexplained is a server read that no terminal event
	// explains, not yet looked at by a listing.
	unexplained bool
	// lastWrite is the last tick that saw a pane write, events
	// lost, or no way to tell writes (see tickGap and fullGap).
	lastWrite time.Time
}

// tick is one tick of poll: it returns how long to wait for the next one,
// or end, and the error poll returns.
func (p *poller) tick(ctx context.Context) (next time.Duration, end bool, err error) {
	w := p.w
	start := time.Now()
	evented := p.feedOn && p.unwatched == 0
	topology, lost := p.drain()
	// A terminal made or freed is not this server's write: any
	// terminal anywhere on the machine makes one, and a new pane of
	// this server writes soon enough.
	if len(p.wrote) > 0 || lost || !p.gate {
		p.lastWrite = start
	}
	quiet := start.Sub(p.lastWrite) >= quietAfter
	// A terminal made or freed (a pane came or went, or its process
	// exited) lists in full now, not a second later.
	full := !p.up || topology || start.Sub(p.lastFull) >= w.fullGap(evented)
	if !full && !w.opts.NoReadGate && !p.needsListing(start, evented, lost) {
		w.skipped.Add(1)
		w.tickEvents(p.tracks, p.wrote, time.Now())
		return max(0, w.tickGap(evented, quiet, p.cost)-time.Since(start)), false, nil
	}
	panes, sigs, full, err := p.list(ctx, start, full)
	if ctx.Err() != nil {
		return 0, true, nil
	}
	if isExecError(err) || errors.Is(err, ErrTooOld) {
		return 0, true, err
	}
	now := time.Now()
	if full && err == nil && p.restarted(panes) {
		// The server was killed and another started between two
		// ticks: the same as seeing it gone, then back.
		p.disconnect("the tmux server was restarted")
		return 0, false, nil
	}
	if err == nil && len(sigs) == 0 {
		// A server with no sessions exits; treat the gap as no server.
		err = &Error{Op: "list-panes", Server: w.server.String(), Msg: "no sessions", Err: ErrNoServer}
	}
	switch {
	case err != nil:
		p.failed(err)
	case !p.up:
		p.connect(panes, sigs)
	default:
		p.update(full, panes, sigs, now)
	}
	return max(0, w.tickGap(p.feedOn && p.unwatched == 0, quiet && p.up, p.cost)-time.Since(start)), false, nil
}

// drain collects the panes written to since the last tick into wrote, and
// reports whether a terminal was made or freed and whether events were
// lost.
func (p *poller) drain() (topology, lost bool) {
	clear(p.wrote)
	if !p.feedOn {
		return false, false
	}
	topology, lost, err := p.feed.drain(p.wrote)
	if err != nil {
		p.w.log.Info("tmux: terminal write events failed; listing panes at every tick the server reads", "err", err)
		p.feedOn = false
	}
	return topology, lost
}

// needsListing reports whether a tick that does not list in full lists
// panes' signatures: when events were lost or a listing was asked for;
// with terminal events, as listOnEvents says; without them, whenever the
// server read something since the last tick.
func (p *poller) needsListing(start time.Time, evented, lost bool) bool {
	moved := true // the server read something since the last tick
	if p.gate {
		if n, ok := p.io.read(p.serverPID); ok {
			moved, p.reads = n != p.reads, n
		}
	}
	list := lost || p.relist
	if evented {
		// A read no event explains waits for its listing
		// rather than being forgotten.
		p.unexplained = p.unexplained || (p.gate && moved && len(p.wrote) == 0)
		list = list || p.w.listOnEvents(start.Sub(p.lastLight), p.cost, len(p.wrote) > 0, p.gate, p.unexplained)
	} else {
		list = list || moved
	}
	return list
}

// list lists panes' signatures, or panes in full when full is set or the
// signatures show a pane came, went or moved (then full is returned set).
func (p *poller) list(ctx context.Context, start time.Time, full bool) (panes []Pane, sigs []PaneSignal, _ bool, err error) {
	if !full {
		p.w.listed.Add(1)
		sigs, err = p.lister.ListPaneSignals(ctx)
		switch {
		case err != nil:
		case idsOf(sigs) != p.ids:
			full = true // a pane came, went or moved: names and commands are needed
		default:
			p.cost = smooth(p.cost, time.Since(start))
			p.lastLight, p.relist, p.unexplained = start, false, false
		}
	}
	if full {
		p.w.full.Add(1)
		// Read before listing: what the server reads after this is
		// news for the next tick (a full listing makes it read /proc,
		// so the next tick lists unless terminal events explain it).
		if p.gate {
			p.reads, _ = p.io.read(p.serverPID)
		}
		if panes, err = p.lister.ListPanes(ctx); err == nil {
			sigs, p.lastFull, p.lastLight, p.unexplained = make([]PaneSignal, len(panes)), time.Now(), start, false
			for i, pn := range panes {
				sigs[i] = pn.Signal()
			}
		}
	}
	return panes, sigs, full, err
}

// restarted reports whether a full listing comes from another server than
// the one being watched.
func (p *poller) restarted(panes []Pane) bool {
	return len(panes) > 0 && p.up && panes[0].ServerPID != p.serverPID
}

// disconnect forgets the server's panes and tells the consumer why.
func (p *poller) disconnect(reason string) {
	p.up, p.tracks = false, nil
	p.feed.sync(nil)
	p.w.q.push(Event{Kind: EventDisconnected, Reason: reason})
}

// failed follows a failed listing: logged once until another error comes,
// and the server gone is a disconnection.
func (p *poller) failed(err error) {
	if s := err.Error(); s != p.lastErr {
		p.lastErr = s
		p.w.log.Info("tmux: polling failed", "err", err)
	}
	if errors.Is(err, ErrNoServer) && p.up {
		p.disconnect(err.Error())
	}
}

// connect starts watching a server from its first full listing.
func (p *poller) connect(panes []Pane, sigs []PaneSignal) {
	w := p.w
	p.up, p.lastErr, p.serverPID = true, "", panes[0].ServerPID
	p.gate = isTmuxServer(p.serverPID)
	p.feedOn = p.feed != nil && sameMountNamespace(p.serverPID)
	p.tracks = make(map[string]*paneTrack, len(panes))
	for _, pn := range panes {
		p.tracks[pn.ID] = &paneTrack{sig: pn.Signal(), rest: restOf(pn), settle: 1}
	}
	if p.feedOn {
		_, p.unwatched = p.feed.sync(panes)
		p.relist = true
	}
	p.topo, p.ids = topologyOf(panes), idsOf(sigs)
	w.log.Info("tmux: watching", "sessions", countSessions(panes), "panes", len(panes), "terminal_events", p.feedOn && p.unwatched == 0)
	w.q.push(Event{Kind: EventResync, Reason: "polling: " + p.why})
}

// update takes a listing of a watched server: the full listing itself,
// the panes to report, terminals to watch, and sessions, windows and panes
// that came, went, were renamed or moved.
func (p *poller) update(full bool, panes []Pane, sigs []PaneSignal, now time.Time) {
	w := p.w
	if full {
		w.q.push(Event{Kind: EventListed, Panes: panes})
	}
	cur, reported := p.stepListed(full, panes, sigs, now)
	reported = w.piggyback(cur, reported, now)
	for _, id := range reported {
		w.q.push(Event{Kind: EventOutput, PaneID: id, Streaming: cur[id].streaming})
	}
	p.tracks, p.ids = cur, idsOf(sigs)
	if full && p.feedOn {
		p.watchTerminals(panes)
	}
	// Sessions, windows and panes come and go, are renamed or
	// moved: the consumer lists panes again.
	if full {
		if t := topologyOf(panes); t != p.topo {
			p.topo = t
			w.q.push(Event{Kind: EventSessionsChanged})
		}
	}
}

// stepListed steps every listed pane (see step) and returns the panes now
// tracked and those to report. A pane listed for the first time is only
// tracked.
func (p *poller) stepListed(full bool, panes []Pane, sigs []PaneSignal, now time.Time) (map[string]*paneTrack, []string) {
	cur := make(map[string]*paneTrack, len(sigs))
	var reported []string
	for i, s := range sigs {
		tr, ok := p.tracks[s.ID]
		if !ok {
			tr = &paneTrack{sig: s, settle: 1}
			if full {
				tr.rest = restOf(panes[i])
			}
			cur[s.ID] = tr
			continue
		}
		cur[s.ID] = tr
		rest := false
		if full {
			r := restOf(panes[i])
			rest, tr.rest = r != tr.rest, r
		}
		if p.w.step(tr, &s, rest, p.wrote[s.ID], now) {
			reported = append(reported, s.ID)
		}
	}
	return cur, reported
}

// watchTerminals watches the terminals of a full listing's panes; a pane
// newly watched asks the next tick to list.
func (p *poller) watchTerminals(panes []Pane) {
	var added int
	was := p.unwatched
	added, p.unwatched = p.feed.sync(panes)
	p.relist = p.relist || added > 0
	if p.unwatched > 0 && was == 0 {
		p.w.log.Info("tmux: some panes' terminals cannot be watched; listing panes at every tick the server reads", "panes", p.unwatched)
	}
}

// idsOf sums up which panes exist: a change means a listing in full is
// due. (Panes that move to another window or session are seen by the next
// full listing.)
func idsOf(sigs []PaneSignal) string {
	var b strings.Builder
	for _, s := range sigs {
		b.WriteString(s.ID)
	}
	return b.String()
}

// topologyOf sums up where every pane is: a change means sessions,
// windows or panes were added, removed, renamed or moved.
func topologyOf(panes []Pane) string {
	var b strings.Builder
	for _, p := range panes {
		b.WriteString(p.ID)
		b.WriteByte(0)
		b.WriteString(p.SessionID)
		b.WriteByte(0)
		b.WriteString(p.SessionName)
		b.WriteByte(0)
		b.WriteString(p.WindowID)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(p.WindowIndex))
		b.WriteByte(0)
		b.WriteString(p.WindowName)
		b.WriteByte(0)
		b.WriteString(strconv.FormatBool(p.WindowActive))
		b.WriteByte(0)
		b.WriteString(strconv.FormatBool(p.Active))
		b.WriteByte(1)
	}
	return b.String()
}

func countSessions(panes []Pane) int {
	seen := map[string]bool{}
	for _, p := range panes {
		seen[p.SessionID] = true
	}
	return len(seen)
}
