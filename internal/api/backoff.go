package api

import (
	"context"
	"time"
)

// Backoff spaces the attempts of a client that keeps a stream of the
// service (or of a host) open across failures: the first retry waits
// First, each next one twice as long up to Max, and Reset, called once an
// attempt got through, starts over. Every reconnecting loop uses it: the
// dashboard's streams, MCP's resource list, the dashboard's notifications,
// the remote hosts' links.
type Backoff struct {
	First, Max time.Duration
	failed     int
}

// Next counts a failed attempt and returns how long to wait before the
// next one.
func (b *Backoff) Next() time.Duration {
	d := b.Max
	if b.failed < 32 && b.First<<b.failed > 0 && b.First<<b.failed < b.Max {
		d = b.First << b.failed
	}
	b.failed++
	return d
}

// Failed is the number of failed attempts since the last Reset.
func (b *Backoff) Failed() int { return b.failed }

// Reset starts over from First: an attempt got through.
func (b *Backoff) Reset() { b.failed = 0 }

// Wait counts a failed attempt and waits for its delay; false when ctx
// ended first.
func (b *Backoff) Wait(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Sleep waits for d; false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
