package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// SentFile is the journal, in the state dir, of the wakes each push
// channel delivered: a wake is never pushed twice, also across restarts.
const SentFile = "notify-sent.jsonl"

// Defaults of Config.
const (
	DefaultDigestWindow = 30 * time.Second
	DefaultReplayWithin = time.Hour
	inboxSize           = 256
	maxAttempts         = 8
	// A desktop notification is worth little once late: two tries.
	maxDesktopAttempts = 2
	maxBackoff         = 2 * time.Minute
	sentKeep           = 5000
)

// Target is one channel and the wakes it gets.
type Target struct {
	Channel Channel
	Route   Route
	// Push channels keep the sent journal, honour quiet hours, gather
	// bursts into digests, and deliver wakes a previous run raised but
	// did not push. Desktop channels announce new wakes at once.
	Push bool
}

// QuietHours hold push messages between From and To (local clock times,
// "22:00" to "07:00" spans midnight); the wakes still open when they end
// arrive as one digest.
type QuietHours struct {
	From, To time.Duration // since midnight
}

// ParseQuietHours reads "HH:MM".
func ParseQuietHours(from, to string) (*QuietHours, error) {
	if from == "" && to == "" {
		return nil, nil
	}
	f, err1 := parseClock(from)
	t, err2 := parseClock(to)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("notify.quiet_hours: %w", err)
	}
	return &QuietHours{From: f, To: t}, nil
}

func parseClock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time of day (use HH:MM, like 22:00)", s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// quiet reports whether t is inside the quiet hours, and when they end.
func (q *QuietHours) quiet(t time.Time) (bool, time.Time) {
	if q == nil || q.From == q.To {
		return false, time.Time{}
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	now := t.Sub(day)
	if q.From < q.To {
		if now >= q.From && now < q.To {
			return true, day.Add(q.To)
		}
		return false, time.Time{}
	}
	if now >= q.From {
		return true, day.AddDate(0, 0, 1).Add(q.To)
	}
	if now < q.To {
		return true, day.Add(q.To)
	}
	return false, time.Time{}
}

// Config configures a Dispatcher.
type Config struct {
	Targets []Target
	// StateDir holds the sent journal; empty keeps it in memory only.
	StateDir string
	Quiet    *QuietHours
	// DigestWindow: after a push, further wakes within this window are
	// gathered into one digest sent when it ends (default 30s; negative:
	// no digests).
	DigestWindow time.Duration
	// ReplayWithin: unacked wakes raised this recently that no push
	// channel delivered (system3 stopped in between) are pushed at start.
	ReplayWithin time.Duration
	// Backoff is the first retry delay (default 1s, doubling up to 2m).
	Backoff time.Duration
	// OnProblem is told a delivery problem ("" once deliveries work again).
	OnProblem func(string)
	Log       *slog.Logger
	Clock     func() time.Time
}

// Subscriber is the part of api.Service the dispatcher needs.
type Subscriber interface {
	SubscribeWakes(ctx context.Context, f api.WakeFilter) (<-chan api.WakeMessage, error)
}

// Dispatcher routes wakes to channels; each channel has its own worker, so
// a slow or failing one delays nothing else and never the monitors.
type Dispatcher struct {
	cfg  Config
	sent *sentJournal

	mu       sync.Mutex
	problems map[string]string
	reported string
}

// New builds a dispatcher; it reads the sent journal.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.DigestWindow == 0 {
		cfg.DigestWindow = DefaultDigestWindow
	}
	if cfg.ReplayWithin == 0 {
		cfg.ReplayWithin = DefaultReplayWithin
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	for _, t := range cfg.Targets {
		if err := t.Route.Validate(); err != nil {
			return nil, fmt.Errorf("notify: %s: %w", t.Channel.Name(), err)
		}
	}
	sj, err := openSent(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{cfg: cfg, sent: sj, problems: map[string]string{}}, nil
}

// Active reports whether any channel is configured.
func (d *Dispatcher) Active() bool { return d != nil && len(d.cfg.Targets) > 0 }

// Run delivers wakes until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, svc Subscriber) error {
	if !d.Active() {
		return nil
	}
	msgs, err := svc.SubscribeWakes(ctx, api.WakeFilter{})
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	var wg sync.WaitGroup
	inboxes := make([]chan api.WakeMessage, len(d.cfg.Targets))
	for i, t := range d.cfg.Targets {
		inboxes[i] = make(chan api.WakeMessage, inboxSize)
		w := &worker{d: d, t: t, in: inboxes[i], held: map[string]api.Wake{}}
		wg.Go(func() { w.run(ctx) })
	}
	defer func() {
		wg.Wait()
		for _, t := range d.cfg.Targets {
			if c, ok := t.Channel.(io.Closer); ok {
				_ = c.Close()
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			for i, t := range d.cfg.Targets {
				if m.Kind == api.WakeRaised && !t.Route.Match(m.Event) {
					continue
				}
				select {
				case inboxes[i] <- m:
				default:
					d.cfg.Log.Warn("notify: channel is slower than the wakes; dropped one", "channel", t.Channel.Name(), "wake", m.Event.ID)
				}
			}
		}
	}
}

// setProblem records a channel's problem and reports the joined problems
// when they changed.
func (d *Dispatcher) setProblem(ch, msg string) {
	d.mu.Lock()
	if msg == "" {
		delete(d.problems, ch)
	} else {
		d.problems[ch] = msg
	}
	var ps []string
	for _, p := range d.problems {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	joined := strings.Join(ps, "; ")
	changed := joined != d.reported
	d.reported = joined
	d.mu.Unlock()
	if changed && d.cfg.OnProblem != nil {
		d.cfg.OnProblem(joined)
	}
}

// Problem is the current delivery problem, or "".
func (d *Dispatcher) Problem() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reported
}

// worker serves one channel.
type worker struct {
	d    *Dispatcher
	t    Target
	in   chan api.WakeMessage
	held map[string]api.Wake // wakes waiting for the digest or the end of quiet hours
	last time.Time           // the last push
}

func (w *worker) run(ctx context.Context) {
	var timer *time.Timer
	var fire <-chan time.Time
	arm := func(at time.Time) {
		if timer != nil {
			timer.Stop()
		}
		// At most a minute: a suspended laptop's clock jumps.
		timer = time.NewTimer(min(max(at.Sub(w.d.cfg.Clock()), 0), time.Minute))
		fire = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-fire:
			fire = nil
			if at := w.flushHeld(ctx); !at.IsZero() {
				arm(at)
			}
		case m := <-w.in:
			switch m.Kind {
			case api.WakeAcked, api.WakeResolved:
				delete(w.held, m.Event.ID)
				continue
			case api.WakeRaised:
			default:
				continue
			}
			ev := m.Event
			if !w.t.Push {
				if m.Replayed {
					continue
				}
				w.deliver(ctx, []api.Wake{ev})
				continue
			}
			if w.d.sent.has(w.t.Channel.Name(), ev.ID) {
				continue
			}
			if m.Replayed && (ev.Acked || w.d.cfg.Clock().Sub(ev.Time) > w.d.cfg.ReplayWithin) {
				continue
			}
			now := w.d.cfg.Clock()
			if quiet, until := w.d.cfg.Quiet.quiet(now); quiet {
				w.held[ev.ID] = ev
				if fire == nil {
					arm(until)
				}
				continue
			}
			if len(w.held) > 0 && (w.d.cfg.DigestWindow <= 0 || now.Sub(w.last) >= w.d.cfg.DigestWindow) {
				// Quiet hours just ended (or the window passed): the held
				// wakes and this one go together.
				w.held[ev.ID] = ev
				w.flushHeld(ctx)
				continue
			}
			if w.d.cfg.DigestWindow > 0 && !w.last.IsZero() && now.Sub(w.last) < w.d.cfg.DigestWindow {
				w.held[ev.ID] = ev
				if fire == nil {
					arm(w.last.Add(w.d.cfg.DigestWindow))
				}
				continue
			}
			w.deliver(ctx, []api.Wake{ev})
		}
	}
}

// flushHeld sends the held wakes as one message unless quiet hours still
// hold; it returns when to try again (zero: nothing held).
func (w *worker) flushHeld(ctx context.Context) time.Time {
	if len(w.held) == 0 {
		return time.Time{}
	}
	if quiet, until := w.d.cfg.Quiet.quiet(w.d.cfg.Clock()); quiet {
		return until
	}
	evs := make([]api.Wake, 0, len(w.held))
	for _, ev := range w.held {
		evs = append(evs, ev)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
	clear(w.held)
	w.deliver(ctx, evs)
	return time.Time{}
}

// deliver sends one message, retrying with backoff; the channel's problem
// says what fails meanwhile.
func (w *worker) deliver(ctx context.Context, evs []api.Wake) {
	name := w.t.Channel.Name()
	m := ForDigest(evs)
	backoff := api.Backoff{First: w.d.cfg.Backoff, Max: max(w.d.cfg.Backoff, maxBackoff)}
	for attempt := 1; ; attempt++ {
		start := w.d.cfg.Clock()
		err := w.t.Channel.Send(ctx, m)
		if err == nil {
			w.last = w.d.cfg.Clock()
			w.d.cfg.Log.Info("notify: delivered", "channel", name, "wakes", len(evs), "first", evs[0].ID, "took", w.last.Sub(start))
			if w.t.Push {
				w.d.sent.add(name, evs, w.d.cfg.Log)
			}
			w.d.setProblem(name, "")
			return
		}
		if ctx.Err() != nil {
			return
		}
		w.d.cfg.Log.Warn("notify: delivery failed", "channel", name, "attempt", attempt, "err", err)
		limit := maxAttempts
		if !w.t.Push {
			limit = maxDesktopAttempts
		}
		if attempt >= limit {
			w.d.setProblem(name, fmt.Sprintf("notifications: %s gave up after %d attempts: %v (check notify.%s in config.yaml; `system3 notify test %s` tries it)", name, attempt, err, name, name))
			return
		}
		delay := backoff.Next()
		w.d.setProblem(name, fmt.Sprintf("notifications: %s delivery failing (attempt %d, retrying in %s): %v", name, attempt, delay, err))
		if !api.Sleep(ctx, delay) {
			return
		}
	}
}

// sentJournal remembers which wakes each push channel delivered.
type sentJournal struct {
	path string
	mu   sync.Mutex
	set  map[string]struct{}
	n    int
}

type sentRecord struct {
	Channel string    `json:"c"`
	Wake    string    `json:"w"`
	At      time.Time `json:"t"`
}

func openSent(dir string) (*sentJournal, error) {
	j := &sentJournal{set: map[string]struct{}{}}
	if dir == "" {
		return j, nil
	}
	j.path = filepath.Join(dir, SentFile)
	f, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notify: read %s: %w", j.path, err)
	}
	defer f.Close()
	var recs []sentRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r sentRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Wake != "" {
			recs = append(recs, r)
		}
	}
	if len(recs) > sentKeep {
		recs = recs[len(recs)-sentKeep/2:]
		var b strings.Builder
		for _, r := range recs {
			line, _ := json.Marshal(r)
			b.Write(append(line, '\n'))
		}
		tmp := j.path + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err == nil {
			_ = os.Rename(tmp, j.path)
		}
	}
	for _, r := range recs {
		j.set[r.Channel+"\x00"+r.Wake] = struct{}{}
	}
	j.n = len(recs)
	return j, nil
}

func (j *sentJournal) has(ch, id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.set[ch+"\x00"+id]
	return ok
}

func (j *sentJournal) add(ch string, evs []api.Wake, log *slog.Logger) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var b []byte
	for _, ev := range evs {
		j.set[ch+"\x00"+ev.ID] = struct{}{}
		line, _ := json.Marshal(sentRecord{Channel: ch, Wake: ev.ID, At: time.Now().UTC()})
		b = append(append(b, line...), '\n')
	}
	if j.path == "" {
		return
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		log.Warn("notify: cannot record delivered wakes; they may be pushed again after a restart", "path", j.path, "err", err)
	}
}
