package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/remote"
)

// waitHosts waits for the first matching wake on any of names, each host
// from its seq in since on. A remote host whose link fails is tried again
// with backoff, saying so on stderr once per new reason; the others keep
// being waited on meanwhile.
func (a *app) waitHosts(ctx context.Context, names []string, f api.WakeFilter, since api.HostCursor) (api.HostWake, error) {
	w := remote.WaitAny{Local: a.waitWake}
	for _, name := range names {
		h := remote.Host{Name: api.LocalHost}
		if name != api.LocalHost {
			var err error
			if h, err = a.RemoteHost(name); err != nil {
				return api.HostWake{}, err
			}
		}
		w.Hosts = append(w.Hosts, h)
	}
	var mu sync.Mutex
	last := map[string]string{}
	w.OnRetry = func(host string, err error, retryIn time.Duration) {
		a.Log.Warn("host link failed", "host", host, "err", err, "retry_in", retryIn)
		mu.Lock()
		defer mu.Unlock()
		if msg := err.Error(); msg != last[host] {
			last[host] = msg
			fmt.Fprintf(a.Stderr, "system3: %s; still waiting on the other hosts, reconnecting to %s with backoff\n", msg, host)
		}
	}
	hw, links, err := w.Wait(ctx, f, since)
	a.RecordSeen(links)
	return hw, err
}

func (a *app) printHostWake(hw api.HostWake, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(hw)
	}
	ack := "system3 ack " + hw.ID
	if hw.Host != api.LocalHost {
		ack = "system3 ack " + api.JoinHost(hw.Host, hw.ID)
	}
	if err := writeWakeAck(a.stdout, hw.Wake, time.Now(), ack); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "  %-10s system3 wait --all-hosts --since %s\n", "next", hw.Cursor)
	return err
}
