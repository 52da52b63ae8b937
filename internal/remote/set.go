package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Set is the links to every configured host, kept for the life of a
// long-running process (the MCP server, the dashboard), so what is known
// of each host (when it was last seen, why it failed) outlives one call.
type Set struct {
	links []*Link
	// Deadline bounds each host's answer to Report: a host that does not
	// answer within it is reported disconnected, so one slow or
	// blackholed host never holds up the others.
	Deadline time.Duration
	// Fresh is how long a finished report is served again (default 1s):
	// each report starts two ssh processes per host, and many MCP clients
	// polling status must not each start their own.
	Fresh time.Duration

	following atomic.Bool
	subsMu    sync.Mutex
	subs      map[int]func(host string, c Change)
	subSeq    int

	mu     sync.Mutex
	last   []api.HostReport
	lastAt time.Time
	flight chan struct{} // closed when the report in progress is done
}

// DefaultFresh is how long a Set serves a finished report again.
const DefaultFresh = time.Second

// DefaultDeadline is a Set's per-host deadline for a report.
const DefaultDeadline = 3 * time.Second

// NewSet returns links to hosts. seen, when set, gives when each host was
// last seen before this process started (from the state dir's record).
func NewSet(hosts []Host, seen func(name string) time.Time) *Set {
	s := &Set{Deadline: DefaultDeadline}
	for _, h := range hosts {
		l := NewLink(h)
		if seen != nil {
			l.lastSeen = seen(h.Name)
		}
		s.links = append(s.links, l)
	}
	return s
}

// Links are the set's links, in the order of the hosts given.
func (s *Set) Links() []*Link { return s.links }

// Close ends every call in progress.
func (s *Set) Close() error {
	for _, l := range s.links {
		l.Close()
	}
	return nil
}

// Start follows every host until ctx ends: each link keeps two streams
// open to its host's daemon (its registry updates and its wake messages,
// one ssh process each), reconnecting with backoff when the link drops.
// From then on Report answers from what the streams said, at once, with
// no ssh process per call; a host whose streams are down is reported
// disconnected, with why and when it was last seen.
func (s *Set) Start(ctx context.Context) {
	if !s.following.CompareAndSwap(false, true) {
		return
	}
	for _, l := range s.links {
		go l.follow(ctx, func(c Change) { s.publish(l.Host.Name, c) })
	}
}

// Subscribe calls fn with every change a followed host reports, from the
// goroutine following that host (fn must not block), until the returned
// function is called.
func (s *Set) Subscribe(fn func(host string, c Change)) (cancel func()) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if s.subs == nil {
		s.subs = map[int]func(string, Change){}
	}
	s.subSeq++
	id := s.subSeq
	s.subs[id] = fn
	return func() {
		s.subsMu.Lock()
		delete(s.subs, id)
		s.subsMu.Unlock()
	}
}

func (s *Set) publish(host string, c Change) {
	s.subsMu.Lock()
	fns := make([]func(string, Change), 0, len(s.subs))
	for _, fn := range s.subs {
		fns = append(fns, fn)
	}
	s.subsMu.Unlock()
	for _, fn := range fns {
		fn(host, c)
	}
}

// Report asks every host at once for its sessions and unacknowledged
// wakes, each within the set's deadline, and returns one report per host,
// in order. A report finished less than Fresh ago is returned again, and
// callers arriving while one is in progress wait for it (at most the
// deadline) instead of asking the hosts again.
func (s *Set) Report(ctx context.Context) []api.HostReport {
	if s.following.Load() {
		return s.followed(ctx)
	}
	for {
		s.mu.Lock()
		if s.last != nil && time.Since(s.lastAt) < s.fresh() {
			out := slices.Clone(s.last)
			s.mu.Unlock()
			return out
		}
		if f := s.flight; f != nil {
			s.mu.Unlock()
			<-f
			continue
		}
		f := make(chan struct{})
		s.flight = f
		s.mu.Unlock()

		// Shared by every caller waiting, so not cut short by this one's
		// context: the per-host deadline bounds it.
		out := s.report(context.WithoutCancel(ctx))
		s.mu.Lock()
		s.last, s.lastAt, s.flight = out, time.Now(), nil
		s.mu.Unlock()
		close(f)
		return slices.Clone(out)
	}
}

// followed is Report from the followed links' state. A link that has
// not yet synchronised nor failed is waited for, within the deadline.
func (s *Set) followed(ctx context.Context) []api.HostReport {
	out := make([]api.HostReport, len(s.links))
	var timeout <-chan time.Time
	for i, l := range s.links {
		select {
		case <-l.feed.first:
		default:
			if timeout == nil {
				t := time.NewTimer(s.deadline())
				defer t.Stop()
				timeout = t.C
			}
			select {
			case <-l.feed.first:
			case <-timeout:
			case <-ctx.Done():
			}
		}
		live, snap, evs := l.feed.state()
		st := l.State()
		r := api.HostReport{Name: l.Host.Name, LastSeen: st.LastSeen, Connected: live}
		if live {
			r.Snapshot, r.Unacked = snap, evs
		} else {
			r.Err = st.Err
			if r.Err == nil {
				r.Err = &LinkError{Host: l.Host.Name, Kind: ErrUnreachable,
					msg: fmt.Sprintf("host %s has not answered yet (connecting, within %s)", l.Host.Name, s.deadline())}
			}
		}
		out[i] = r
	}
	return out
}

func (s *Set) fresh() time.Duration {
	if s.Fresh > 0 {
		return s.Fresh
	}
	return DefaultFresh
}

// report asks every host once (see Report).
func (s *Set) report(ctx context.Context) []api.HostReport {
	out := make([]api.HostReport, len(s.links))
	var wg sync.WaitGroup
	for i, l := range s.links {
		wg.Go(func() {
			hctx, cancel := context.WithTimeout(ctx, s.deadline())
			defer cancel()
			r := api.HostReport{Name: l.Host.Name}
			// Both calls at once: each is one ssh process, and most of
			// its time is ssh and the remote system3 starting.
			var evs []api.Wake
			var werr error
			var both sync.WaitGroup
			both.Go(func() { evs, werr = l.Client.Wakes(hctx, api.WakeFilter{}) })
			snap, err := l.Client.Snapshot(hctx)
			both.Wait()
			if err = s.observe(hctx, l, err); err == nil {
				err = s.observe(hctx, l, werr)
				r.Snapshot, r.Unacked = snap, evs
			}
			st := l.State()
			r.LastSeen, r.Err, r.Connected = st.LastSeen, err, err == nil
			if err != nil {
				r.Snapshot, r.Unacked = api.Snapshot{}, nil
			}
			out[i] = r
		})
	}
	wg.Wait()
	return out
}

func (s *Set) deadline() time.Duration {
	if s.Deadline > 0 {
		return s.Deadline
	}
	return DefaultDeadline
}

// observe is Link.Observe, with a call cut by the per-host deadline
// reported as the host not answering in time.
func (s *Set) observe(ctx context.Context, l *Link, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = &LinkError{Host: l.Host.Name, Kind: ErrUnreachable,
			msg: fmt.Sprintf("host %s did not answer within %s; it is slow, or down or unreachable", l.Host.Name, s.deadline())}
		l.mu.Lock()
		l.lastErr = err
		l.mu.Unlock()
		return err
	}
	return l.Observe(ctx, err)
}

// Link is the set's link to the host called name, or nil.
func (s *Set) Link(name string) *Link {
	for _, l := range s.links {
		if l.Host.Name == name {
			return l
		}
	}
	return nil
}

// WaitWake waits for the first wake matching f on any host for which
// match (when set) is true, each host from its seq in since on, until ctx
// ends. A host whose link fails is tried again with backoff
// (Link.WaitWake) while the others are waited on.
func (s *Set) WaitWake(ctx context.Context, f api.WakeFilter, since map[string]uint64, match func(host string) bool) (api.HostWake, error) {
	var links []*Link
	for _, l := range s.links {
		if match == nil || match(l.Host.Name) {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		<-ctx.Done()
		return api.HostWake{}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		hw  api.HostWake
		err error
	}
	results := make(chan result, len(links))
	for _, l := range links {
		hf := f
		hf.SinceSeq = since[l.Host.Name]
		go func() {
			ev, err := l.WaitWake(ctx, hf, nil)
			results <- result{api.HostWake{Host: l.Host.Name, Wake: ev}, err}
		}()
	}
	var first error
	for range links {
		r := <-results
		if r.err == nil {
			return r.hw, nil
		}
		if ctx.Err() != nil {
			return api.HostWake{}, ctx.Err()
		}
		// An answer that is not a link failure (a bad filter, say) ends
		// this host's wait only.
		if first == nil {
			first = r.err
		}
	}
	return api.HostWake{}, first
}

// Ack acknowledges wake id on host name's daemon, as by.
func (s *Set) Ack(ctx context.Context, name, id, by string) (api.Wake, error) {
	l := s.Link(name)
	if l == nil {
		return api.Wake{}, fmt.Errorf("no host %q in the config", name)
	}
	ev, err := l.Client.Ack(ctx, id, by)
	return ev, l.Observe(ctx, err)
}

// ReportDoc is an api.HostReport as a daemon sends it over its socket to a client
// (`status --all-hosts` asking the daemon that follows the hosts).
type ReportDoc struct {
	Name      string       `json:"name"`
	Connected bool         `json:"connected"`
	LastSeen  time.Time    `json:"last_seen,omitzero"`
	Error     string       `json:"error,omitempty"`
	Snapshot  api.Snapshot `json:"snapshot"`
	Unacked   []api.Wake   `json:"unacked"`
}

// Docs is Report as ReportDocs.
func (s *Set) Docs(ctx context.Context) []ReportDoc {
	rs := s.Report(ctx)
	out := make([]ReportDoc, len(rs))
	for i, r := range rs {
		d := ReportDoc{Name: r.Name, Connected: r.Connected, LastSeen: r.LastSeen, Snapshot: r.Snapshot, Unacked: r.Unacked}
		if r.Err != nil {
			d.Error = r.Err.Error()
		}
		if d.Unacked == nil {
			d.Unacked = []api.Wake{}
		}
		out[i] = d
	}
	return out
}
