package remote

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Cursor is, per host, the seq of the last wake a caller has seen there:
// "local:12,web1:40". Wakes are numbered by each host's journal, so one
// number per host says what was delivered.
type Cursor map[string]uint64

// ParseCursor reads a cursor in String's form ("" is the empty cursor);
// ok is false when a part is not HOST:SEQ. Callers say which of their
// inputs was wrong.
func ParseCursor(s string) (c Cursor, ok bool) {
	c = Cursor{}
	if strings.TrimSpace(s) == "" {
		return c, true
	}
	for _, part := range strings.Split(s, ",") {
		name, num, found := strings.Cut(strings.TrimSpace(part), ":")
		seq, err := strconv.ParseUint(num, 10, 64)
		if !found || err != nil || name == "" {
			return nil, false
		}
		c[name] = seq
	}
	return c, true
}

// String is the cursor as ParseCursor reads it, hosts in name order.
func (c Cursor) String() string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":" + strconv.FormatUint(c[n], 10)
	}
	return strings.Join(parts, ",")
}

// WaitAny is a wait for the first matching wake on any of several hosts.
type WaitAny struct {
	// Local waits on this machine's wakes (Local in Hosts' place).
	Local func(ctx context.Context, f api.WakeFilter) (api.Wake, error)
	// Hosts are the hosts waited on, in order; a Host named Local is this
	// machine.
	Hosts []Host
	// OnRetry is told when a host's link failed and is tried again after
	// retryIn; the other hosts keep being waited on meanwhile.
	OnRetry func(host string, err error, retryIn time.Duration)
}

// Wait waits for the first wake matching f on any host, each from its seq
// in since on. A session pattern HOST:GLOB in f selects the hosts too. It
// returns the links it used, closed, so their callers can record when each
// host last answered.
func (w WaitAny) Wait(ctx context.Context, f api.WakeFilter, since Cursor) (HostWake, []*Link, error) {
	hosts := w.Hosts
	if hostGlob, sess, ok := strings.Cut(f.Session, ":"); ok {
		hosts = slices.DeleteFunc(slices.Clone(hosts), func(h Host) bool {
			m, _ := path.Match(hostGlob, h.Name)
			return !m
		})
		if len(hosts) == 0 {
			return HostWake{}, nil, fmt.Errorf("--session %q: no host matches %q", f.Session, hostGlob)
		}
		f.Session = sess
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		host string
		ev   api.Wake
		err  error
	}
	results := make(chan result, len(hosts))
	var links []*Link
	var wg sync.WaitGroup
	for _, h := range hosts {
		hf := f
		hf.SinceSeq = since[h.Name]
		if h.Name == Local {
			wg.Go(func() {
				ev, err := w.Local(ctx, hf)
				results <- result{h.Name, ev, err}
			})
			continue
		}
		l := NewLink(h)
		links = append(links, l)
		wg.Go(func() {
			ev, err := l.WaitWake(ctx, hf, func(err error, retryIn time.Duration) {
				if w.OnRetry != nil {
					w.OnRetry(h.Name, err, retryIn)
				}
			})
			results <- result{h.Name, ev, err}
		})
	}
	r := <-results
	cancel()
	for _, l := range links {
		l.Close()
	}
	wg.Wait()
	if r.err != nil {
		return HostWake{}, links, r.err
	}
	next := Cursor{}
	for k, v := range since {
		next[k] = v
	}
	next[r.host] = r.ev.Seq
	ev := r.ev
	ev.Session = r.host + ":" + ev.Session
	return HostWake{Wake: ev, Host: r.host, Cursor: next.String()}, links, nil
}
