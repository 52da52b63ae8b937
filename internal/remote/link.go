package remote

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
)

// Backoff between reconnections: doubling from MinBackoff to MaxBackoff,
// and back to MinBackoff once the host answered again.
const (
	MinBackoff = time.Second
	MaxBackoff = 30 * time.Second
)

// Link is the client of one host's daemon over ssh. Its Client makes each
// call over a fresh `ssh DEST system3 attach --stdio` (cheap with the
// user's ControlMaster); the Link remembers when the host last answered
// and why the last call failed.
type Link struct {
	Host   Host
	Client *ipc.Client

	now  func() time.Time
	feed *feed

	mu       sync.Mutex
	lastSeen time.Time
	lastErr  error
}

// State is what is known of a host's connection.
type State struct {
	// Connected: the last call reached the daemon.
	Connected bool
	// LastSeen is when the daemon last answered; zero when never, here.
	LastSeen time.Time
	// Err is why the last call failed; nil when it did not.
	Err error
}

// NewLink returns a link to h. It starts nothing until a call is made.
func NewLink(h Host) *Link {
	l := &Link{Host: h, now: time.Now, feed: newFeed()}
	l.Client = ipc.NewClient("host "+h.Name, func(ctx context.Context) (io.ReadWriteCloser, error) {
		return h.dial(l.seen)
	})
	return l
}

// Close ends every call in progress.
func (l *Link) Close() error { return l.Client.Close() }

// seen records that the daemon answered.
func (l *Link) seen() {
	l.mu.Lock()
	l.lastSeen, l.lastErr = l.now(), nil
	l.mu.Unlock()
}

// Observe records the outcome of a call made on l.Client: an error of the
// link (not of the call's own context) makes the host disconnected.
func (l *Link) Observe(ctx context.Context, err error) error {
	if err == nil {
		l.seen()
		return nil
	}
	if ctx.Err() != nil || !LinkFailure(err) {
		return err
	}
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
	return err
}

// State returns what is known of the connection.
func (l *Link) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return State{Connected: l.lastErr == nil && !l.lastSeen.IsZero(), LastSeen: l.lastSeen, Err: l.lastErr}
}

// Ping checks that the host's daemon answers.
func (l *Link) Ping(ctx context.Context) error {
	return l.Observe(ctx, l.Client.Ping(ctx))
}

// LinkFailure reports whether err is a failure to reach the host's daemon
// (ssh, the remote system3, the daemon going away) rather than an answer.
func LinkFailure(err error) bool {
	var le *LinkError
	return errors.As(err, &le) || errors.Is(err, ipc.ErrConnLost) || errors.Is(err, ipc.ErrVersion) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// WaitWake waits for the first unacked wake on the host matching f, as
// the service's WaitWake does, across dropped links: after a failure it
// tries again after a backoff (1 s doubling to 30 s, reset once the host
// answers), asking with the same filter, so a wake raised meanwhile is
// returned then and none past f.SinceSeq twice. onFail, when set, is told
// each failure and the delay before the next try.
func (l *Link) WaitWake(ctx context.Context, f api.WakeFilter, onFail func(err error, retryIn time.Duration)) (api.Wake, error) {
	backoff := api.Backoff{First: MinBackoff, Max: MaxBackoff}
	for {
		before := l.State().LastSeen
		ev, err := l.Client.WaitWake(ctx, f)
		err = l.Observe(ctx, err)
		if err == nil || ctx.Err() != nil || !LinkFailure(err) {
			return ev, err
		}
		if st := l.State(); st.LastSeen.After(before) {
			// The host answered before the link dropped: start over.
			backoff.Reset()
		}
		delay := backoff.Next()
		if onFail != nil {
			onFail(err, delay)
		}
		if !api.Sleep(ctx, delay) {
			return api.Wake{}, ctx.Err()
		}
	}
}
