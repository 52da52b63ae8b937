package remote

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// WaitAny is a wait for the first matching wake on any of several hosts.
type WaitAny struct {
	// Local waits on this machine's wakes (api.LocalHost in Hosts' place).
	Local func(ctx context.Context, f api.WakeFilter) (api.Wake, error)
	// Hosts are the hosts waited on, in order; a Host named api.LocalHost
	// is this machine.
	Hosts []Host
	// OnRetry is told when a host's link failed and is tried again after
	// retryIn; the other hosts keep being waited on meanwhile.
	OnRetry func(host string, err error, retryIn time.Duration)
}

// Wait waits for the first wake matching f on any host, each from its seq
// in since on. A session pattern HOST:GLOB in f selects the hosts too. It
// returns the links it used, closed, so their callers can record when each
// host last answered.
func (w WaitAny) Wait(ctx context.Context, f api.WakeFilter, since api.HostCursor) (api.HostWake, []*Link, error) {
	hosts := w.Hosts
	if hostGlob, sess, ok := api.SplitHost(f.Session, nil); ok {
		hosts = slices.DeleteFunc(slices.Clone(hosts), func(h Host) bool {
			m, _ := path.Match(hostGlob, h.Name)
			return !m
		})
		if len(hosts) == 0 {
			return api.HostWake{}, nil, fmt.Errorf("--session %q: no host matches %q", f.Session, hostGlob)
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
		if h.Name == api.LocalHost {
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
		return api.HostWake{}, links, r.err
	}
	next := api.HostCursor{}
	for k, v := range since {
		next[k] = v
	}
	next[r.host] = r.ev.Seq
	ev := r.ev
	ev.Session = api.JoinHost(r.host, ev.Session)
	return api.HostWake{Wake: ev, Host: r.host, Cursor: next.String()}, links, nil
}
