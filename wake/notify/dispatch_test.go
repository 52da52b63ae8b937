package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBus hands the dispatcher a wake stream the test writes to.
type fakeBus struct{ ch chan api.WakeMessage }

func (f *fakeBus) SubscribeWakes(ctx context.Context, _ api.WakeFilter) (<-chan api.WakeMessage, error) {
	return f.ch, nil
}

// pushServer speaks ntfy's JSON publishing API on / and a webhook on
// /hook, recording what it got; fail makes the next n requests fail.
type pushServer struct {
	*httptest.Server
	mu    sync.Mutex
	ntfy  []NtfyMessage
	hooks []WebhookBody
	auth  []string
	fail  int
	got   chan struct{}
}

func newPushServer(t *testing.T) *pushServer {
	p := &pushServer{got: make(chan struct{}, 64)}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.fail > 0 {
			p.fail--
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/hook" {
			var b WebhookBody
			if err := json.Unmarshal(body, &b); err != nil || b.Text == "" {
				http.Error(w, "no text", http.StatusBadRequest)
				return
			}
			p.hooks = append(p.hooks, b)
		} else {
			var m NtfyMessage
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil || m.Topic == "" || len(m.Actions) > 3 {
				http.Error(w, "invalid message", http.StatusBadRequest)
				return
			}
			p.ntfy = append(p.ntfy, m)
			p.auth = append(p.auth, r.Header.Get("Authorization"))
		}
		p.got <- struct{}{}
		_, _ = io.WriteString(w, `{"id":"x"}`)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *pushServer) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-p.got:
		case <-time.After(30 * time.Second):
			t.Fatalf("waited for %d deliveries", n)
		}
	}
}

func (p *pushServer) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-p.got:
		t.Fatal("an unexpected delivery")
	case <-time.After(d):
	}
}

func prompt(id string, seq uint64) api.Wake {
	return api.Wake{ID: id, Seq: seq, Time: time.Now(), Reason: api.ReasonAwaitingInput, Session: "orch-billing", Pane: "%3",
		Question: "Do you want to proceed?", Options: []string{"Yes", "Yes, and don't ask again", "No"}}
}

func startDispatcher(t *testing.T, cfg Config) (*fakeBus, func()) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bus := &fakeBus{ch: make(chan api.WakeMessage, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx, bus) }()
	return bus, func() { cancel(); <-done }
}

func TestPushOnceWithActionsAcrossRestarts(t *testing.T) {
	srv := newPushServer(t)
	dir := t.TempDir()
	signer, err := LoadSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	links := &Links{Base: "https://phone.example:8889", Signer: signer}
	targets := []Target{
		{Channel: &Ntfy{URL: srv.URL + "/s3-topic", Token: "tk_secret", Links: links}, Push: true},
		{Channel: &Webhook{URL: srv.URL + "/hook", Links: links}, Push: true},
	}
	cfg := Config{Targets: targets, StateDir: dir, DigestWindow: -1}
	bus, stop := startDispatcher(t, cfg)
	ev := prompt("w0000000001-a", 1)
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: ev}
	srv.wait(t, 2)
	// The same wake again (a resubscription replays it): not pushed twice.
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: ev, Replayed: true}
	srv.none(t, 300*time.Millisecond)
	stop()

	// After a restart the journal still knows it.
	bus, stop = startDispatcher(t, cfg)
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: ev, Replayed: true}
	// A wake raised while no system3 pushed is delivered at start.
	missed := prompt("w0000000002-b", 2)
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: missed, Replayed: true}
	srv.wait(t, 2)
	srv.none(t, 300*time.Millisecond)
	stop()

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.ntfy) != 2 || len(srv.hooks) != 2 {
		t.Fatalf("ntfy got %d, webhook %d, want 2 each", len(srv.ntfy), len(srv.hooks))
	}
	m := srv.ntfy[0]
	if m.Topic != "s3-topic" || m.Title != "orch-billing %3: waiting for you" || m.Priority != 4 || srv.auth[0] != "Bearer tk_secret" {
		t.Errorf("ntfy message = %+v (auth %q)", m, srv.auth[0])
	}
	if !strings.Contains(m.Message, "Do you want to proceed?\n1. Yes") || m.Click != "https://phone.example:8889/web/" {
		t.Errorf("ntfy body = %q click %q", m.Message, m.Click)
	}
	if len(m.Actions) != 3 {
		t.Fatalf("actions = %+v", m.Actions)
	}
	for i, a := range m.Actions {
		if a.Action != "http" || a.Method != "POST" || a.Label != ev.Options[i] || !strings.HasPrefix(a.URL, "https://phone.example:8889/web/act?t=") {
			t.Errorf("action %d = %+v", i, a)
		}
		tok := a.URL[strings.Index(a.URL, "t=")+2:]
		act, err := signer.Verify(strings.ReplaceAll(tok, "%3D", "="), time.Now())
		if err != nil || act.Wake != ev.ID || act.Option != i+1 {
			t.Errorf("action %d token: %+v %v", i, act, err)
		}
	}
	h := srv.hooks[0]
	if h.Wake == nil || h.Wake.ID != ev.ID || !strings.HasPrefix(h.Text, "*orch-billing %3: waiting for you*\nDo you want to proceed?") {
		t.Errorf("webhook body = %+v", h)
	}
}

func TestPushBurstBecomesDigestAndClearedWakesDrop(t *testing.T) {
	srv := newPushServer(t)
	bus, stop := startDispatcher(t, Config{Targets: []Target{{Channel: &Ntfy{URL: srv.URL + "/t"}, Push: true}}, DigestWindow: 500 * time.Millisecond})
	defer stop()
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w1", 1)}
	srv.wait(t, 1)
	for i, id := range []string{"w2", "w3", "w4"} {
		bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt(id, uint64(i+2))}
	}
	bus.ch <- api.WakeMessage{Kind: api.WakeResolved, Event: prompt("w4", 4)}
	srv.wait(t, 1)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.ntfy) != 2 {
		t.Fatalf("got %d messages", len(srv.ntfy))
	}
	d := srv.ntfy[1]
	if d.Title != "system3: 2 wakes" || len(d.Actions) != 0 || strings.Count(d.Message, "\n") != 1 {
		t.Errorf("digest = %+v", d)
	}
}

func TestPushRetriesAndReportsProblem(t *testing.T) {
	srv := newPushServer(t)
	srv.fail = 2
	var mu sync.Mutex
	var problems []string
	_, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	bus, stop := startDispatcher(t, Config{Targets: []Target{{Channel: &Ntfy{URL: srv.URL + "/t"}, Push: true}}, Backoff: 10 * time.Millisecond,
		OnProblem: func(p string) { mu.Lock(); problems = append(problems, p); mu.Unlock() }})
	defer stop()
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w1", 1)}
	srv.wait(t, 1)
	// The failures are reported, then their end (an empty problem).
	got := testkit.WaitForValue(t, 10*time.Second, "a problem and then its end", func() ([]string, bool) {
		mu.Lock()
		defer mu.Unlock()
		got := slices.Clone(problems)
		return got, len(got) >= 2 && got[len(got)-1] == ""
	})
	if !strings.Contains(got[0], "ntfy delivery failing (attempt 1") || !strings.Contains(got[0], "503") {
		t.Errorf("problem = %q", got[0])
	}
}

func TestQuietHoursHoldThenDigest(t *testing.T) {
	q, err := ParseQuietHours("22:00", "07:00")
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 1, 2, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		t     time.Time
		quiet bool
		until time.Time
	}{
		{at(23, 0), true, time.Date(2026, 1, 3, 7, 0, 0, 0, time.UTC)},
		{at(6, 59), true, at(7, 0)},
		{at(7, 0), false, time.Time{}},
		{at(12, 0), false, time.Time{}},
	} {
		quiet, until := q.quiet(tc.t)
		if quiet != tc.quiet || !until.Equal(tc.until) {
			t.Errorf("quiet(%s) = %v %s", tc.t, quiet, until)
		}
	}
	if _, err := ParseQuietHours("25:00", "07:00"); err == nil {
		t.Error("25:00 accepted")
	}

	// Quiet now: wakes are held, acked ones are dropped, the rest come as
	// one digest when the quiet hours end.
	srv := newPushServer(t)
	var mu sync.Mutex
	now := at(23, 59)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	bus, stop := startDispatcher(t, Config{Targets: []Target{{Channel: &Ntfy{URL: srv.URL + "/t"}, Push: true}}, Quiet: q, Clock: clock})
	defer stop()
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w1", 1)}
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w2", 2)}
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w3", 3)}
	bus.ch <- api.WakeMessage{Kind: api.WakeAcked, Event: prompt("w2", 2)}
	srv.none(t, 200*time.Millisecond)
	mu.Lock()
	now = at(7, 1)
	mu.Unlock()
	// The timer was armed for 7 hours of the fake clock; a new wake makes
	// the worker look again.
	bus.ch <- api.WakeMessage{Kind: api.WakeRaised, Event: prompt("w5", 5)}
	srv.wait(t, 1)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.ntfy) != 1 || srv.ntfy[0].Title != "system3: 3 wakes" || strings.Count(srv.ntfy[0].Message, "\n") != 2 {
		t.Fatalf("messages = %+v", srv.ntfy)
	}
}

func TestRouteMatch(t *testing.T) {
	r := Route{Reasons: []api.Reason{api.ReasonAwaitingInput}, Sessions: []string{"orch-*"}}
	if !r.Match(prompt("a", 1)) {
		t.Error("prompt in orch-billing not routed")
	}
	ev := prompt("b", 2)
	ev.Session = "scratch"
	if r.Match(ev) {
		t.Error("scratch routed")
	}
	ev = prompt("c", 3)
	ev.Reason = api.ReasonSessionIdle
	if r.Match(ev) {
		t.Error("idle routed")
	}
	if err := (Route{Sessions: []string{"["}}).Validate(); err == nil {
		t.Error("bad glob accepted")
	}
}

func TestSignerRefusesTamperingAndExpiry(t *testing.T) {
	s, _ := NewSigner([]byte(strings.Repeat("k", 32)))
	other, _ := NewSigner([]byte(strings.Repeat("x", 32)))
	now := time.Now()
	tok := s.Sign("w1", 2, "p1", now.Add(time.Minute))
	if a, err := s.Verify(tok, now); err != nil || a.Wake != "w1" || a.Option != 2 {
		t.Fatalf("verify = %+v %v", a, err)
	}
	if _, err := other.Verify(tok, now); err != ErrBadToken {
		t.Errorf("another key: %v", err)
	}
	if _, err := s.Verify(tok, now.Add(2*time.Minute)); err != ErrExpiredToken {
		t.Errorf("expired: %v", err)
	}
	p, sig, _ := strings.Cut(tok, ".")
	forged := strings.Replace(p, p[:4], "eyJ4", 1) + "." + sig
	if _, err := s.Verify(forged, now); err != ErrBadToken {
		t.Errorf("forged: %v", err)
	}
}
