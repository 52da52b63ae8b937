package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/monitor/remote"
	"github.com/system3-dev/system3/wake"
)

// hostCursor is, per host, the seq of the last wake a caller has seen
// there: "local:12,web1:40". Wakes are numbered by each host's journal, so
// one number per host says what was delivered.
type hostCursor map[string]uint64

func parseHostCursor(s string, known []string) (hostCursor, error) {
	c := hostCursor{}
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), ":")
		seq, err := strconv.ParseUint(num, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("--since %q: each part must be HOST:SEQ, like local:12,web1:40 (the cursor a previous wait --json printed)", s)
		}
		found := false
		for _, k := range known {
			found = found || k == name
		}
		if !found {
			return nil, fmt.Errorf("--since names host %q, which is not local or a host of the config", name)
		}
		c[name] = seq
	}
	return c, nil
}

func (c hostCursor) String() string {
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

// hostWake is a wake of one host as `wait --all-hosts --json` prints it:
// its session is HOST:SESSION, host names the host alone, and cursor is
// the --since that skips it and every wake seen before.
type hostWake struct {
	wake.Event
	Host   string `json:"host"`
	Cursor string `json:"cursor"`
}

// waitHosts waits for the first matching wake on any of names, each host
// from its seq in since on. A remote host whose link fails is tried again
// with backoff, saying so on stderr once per new reason; the others keep
// being waited on meanwhile.
func (a *app) waitHosts(ctx context.Context, names []string, f wake.Filter, since hostCursor) (hostWake, error) {
	// A session pattern HOST:GLOB selects hosts too.
	if hostGlob, sess, ok := strings.Cut(f.Session, ":"); ok {
		var keep []string
		for _, n := range names {
			if m, _ := path.Match(hostGlob, n); m {
				keep = append(keep, n)
			}
		}
		if len(keep) == 0 {
			return hostWake{}, fmt.Errorf("--session %q: no host matches %q", f.Session, hostGlob)
		}
		names, f.Session = keep, sess
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		host string
		ev   wake.Event
		err  error
	}
	results := make(chan result, len(names))
	var links []*remote.Link
	var warnMu sync.Mutex
	var wg sync.WaitGroup
	hosts := map[string]remote.Host{}
	for _, name := range names {
		if name == remote.Local {
			continue
		}
		h, err := a.remoteHost(name)
		if err != nil {
			return hostWake{}, err
		}
		hosts[name] = h
	}
	for _, name := range names {
		hf := f
		hf.SinceSeq = since[name]
		if name == remote.Local {
			wg.Go(func() {
				ev, err := a.waitWake(ctx, hf)
				results <- result{name, ev, err}
			})
			continue
		}
		l := remote.NewLink(hosts[name])
		links = append(links, l)
		last := ""
		wg.Go(func() {
			ev, err := l.WaitWake(ctx, hf, func(err error, retryIn time.Duration) {
				a.log.Warn("host link failed", "host", name, "err", err, "retry_in", retryIn)
				warnMu.Lock()
				defer warnMu.Unlock()
				if msg := err.Error(); msg != last {
					last = msg
					fmt.Fprintf(a.stderr, "system3: %s; still waiting on the other hosts, reconnecting to %s with backoff\n", msg, name)
				}
			})
			results <- result{name, ev, err}
		})
	}
	defer func() {
		cancel()
		for _, l := range links {
			l.Close()
		}
		wg.Wait()
		a.recordSeen(links)
	}()
	r := <-results
	if r.err != nil {
		return hostWake{}, r.err
	}
	next := hostCursor{}
	for k, v := range since {
		next[k] = v
	}
	next[r.host] = r.ev.Seq
	ev := r.ev
	ev.Session = r.host + ":" + ev.Session
	return hostWake{Event: ev, Host: r.host, Cursor: next.String()}, nil
}

func (a *app) printHostWake(hw hostWake, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(hw)
	}
	ack := "system3 ack " + hw.ID
	if hw.Host != remote.Local {
		ack = "system3 ack " + hw.Host + ":" + hw.ID
	}
	if err := writeWakeAck(a.stdout, hw.Event, time.Now(), ack); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "  %-10s system3 wait --all-hosts --since %s\n", "next", hw.Cursor)
	return err
}
