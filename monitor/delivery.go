package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/wakebrief"
)

// DeliveryCursorFile, in the state dir, records the last wake given to the
// supervisor pane, so monitors started again neither give it twice nor
// skip the ones raised since.
const DeliveryCursorFile = "supervisor-delivery.json"

// DeliveryProblem is the source of the snapshot's problem a Delivery
// reports (see Supervisor.SetProblem).
const DeliveryProblem = "supervisor-pane"

// maxHookChain is how many wakes in a row a supervisor's Stop hook hands
// over while Claude Code says the turn goes on because of an earlier block
// (stop_hook_active). Claude Code ends a turn whose Stop hooks blocked 8
// times in a row with no tool call between, and the reason of that block
// would be lost; well below that, the supervisor goes idle and the rest
// are typed.
const maxHookChain = 3

// injectTimeout bounds one typed delivery; daemon shutdown does not cut it
// short, so a wake is never left half typed in the input box.
const injectTimeout = 30 * time.Second

// DeliveryConfig configures a Delivery. Zero durations take the defaults.
type DeliveryConfig struct {
	// Target is the supervisor pane: a session (name, session:w.p, $id)
	// or a pane.
	Target api.Target
	// Reasons are the reasons of the wakes it is given; empty: every
	// reason that needs a person (api.Reason.NeedsPerson).
	Reasons []api.Reason
	// Sessions are path.Match globs of the sessions whose wakes it is
	// given; empty: every session.
	Sessions []string
	// MinInterval is the least time between two deliveries (default 10s).
	MinInterval time.Duration
	// StuckAfter is how long wakes may wait for a pane that is not idle
	// before the snapshot's problem says so (default 10m).
	StuckAfter time.Duration
	// IdleAgain: after a delivery, the next is typed once the pane is
	// idle again (an idle state that began after it), or after this long
	// when the pane never looked busy (default 1m).
	IdleAgain time.Duration
	// CursorPath is the file that keeps the cursor (DeliveryCursorFile in
	// the state dir); empty: it lasts as long as the Delivery.
	CursorPath string
	// Tick is how often the pane and the wakes are looked at besides the
	// changes that are announced (default 1s).
	Tick   time.Duration
	Clock  func() time.Time
	Logger *slog.Logger
}

func (c *DeliveryConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.MinInterval, 10*time.Second)
	def(&c.StuckAfter, 10*time.Minute)
	def(&c.IdleAgain, time.Minute)
	def(&c.Tick, time.Second)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// deliveryService is what a Delivery uses of the monitors: the service
// every front end uses (sessions, wakes, inject), the snapshot's problem
// line, and the audited hand-off of a Stop hook's reply. *Supervisor is
// one.
type deliveryService interface {
	Snapshot(ctx context.Context) (api.Snapshot, error)
	Watch(ctx context.Context) (<-chan api.Update, error)
	Wakes(ctx context.Context, f api.WakeFilter) ([]api.Wake, error)
	SubscribeWakes(ctx context.Context, f api.WakeFilter) (<-chan api.WakeMessage, error)
	Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error)
	SetProblem(source, msg string)
	handOff(origin string, sess api.Session, text string) (api.ActionResult, error)
}

var _ deliveryService = (*Supervisor)(nil)

// Delivery gives each wake to a supervising agent's pane, oldest first,
// one at a time, once: typed into it as text (Supervisor.Inject, checked
// against the policy, audited as api.DeliveryOrigin) while it is idle at
// its prompt, or handed to a Claude Code supervisor by its Stop hook as it
// ends a turn (Service). A wake resolved or acknowledged before its turn
// is skipped; one the supervisor pane raised is never given to it.
type Delivery struct {
	cfg DeliveryConfig
	svc deliveryService

	// mu makes deliveries one at a time, typed or handed over. typing is
	// set while a wake is being typed (mu held), so a Stop hook does not
	// wait for it: that wake is the delivery.
	mu     sync.Mutex
	typing atomic.Bool
	cursor cursorDoc
	// last is when the last wake was given, failed when typing one last
	// failed: the next waits MinInterval after either.
	last, failed time.Time
	// heldSince is when wakes began to wait for a pane that is not idle.
	heldSince time.Time
	// notIdle is the registry's idle state that the screen, read again
	// before typing, did not bear out: not tried again until the
	// registry shows another state.
	notIdle time.Time
	// problem is the kind of problem reported ("" none), so it is
	// logged once per change.
	problem string
	// chain counts the wakes Stop hooks handed over since the last Stop
	// that Claude Code did not make go on.
	chain int
	// hooked is the last Stop event answered, and how: the same event
	// delivered again gets the same reply, not the next wake.
	hooked struct {
		pane   string
		at     time.Time
		active bool
		reply  api.HookReply
	}
	// pane is the supervisor pane as last resolved, for Run to tell which
	// registry updates matter.
	pane atomic.Value // string
}

// cursorDoc is DeliveryCursorFile's content.
type cursorDoc struct {
	Version int `json:"version"`
	// Seq is the sequence number of the last wake given; every wake up
	// to it was given or skipped.
	Seq  uint64    `json:"seq"`
	Wake string    `json:"wake,omitempty"`
	At   time.Time `json:"at,omitzero"`
	// How it was given: "typed" or "stop_hook".
	How string `json:"how,omitempty"`
}

// NewDelivery returns the delivery to cfg.Target of the wakes sup raises.
// Run starts it; Service answers its Stop hooks.
func NewDelivery(sup *Supervisor, cfg DeliveryConfig) (*Delivery, error) {
	return newDelivery(sup, cfg)
}

func newDelivery(svc deliveryService, cfg DeliveryConfig) (*Delivery, error) {
	if cfg.Target == (api.Target{}) {
		return nil, errors.New("supervisor pane: name its session")
	}
	for _, g := range cfg.Sessions {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("supervisor pane: sessions glob %q: %w", g, err)
		}
	}
	cfg.defaults()
	d := &Delivery{cfg: cfg, svc: svc}
	d.pane.Store("")
	if err := d.load(); err != nil {
		cfg.Logger.Warn("supervisor pane: the delivery cursor is unreadable; wakes still open are given again", "path", cfg.CursorPath, "err", err)
		_ = os.Rename(cfg.CursorPath, cfg.CursorPath+".bad")
	}
	return d, nil
}

// load reads the cursor file.
func (d *Delivery) load() error {
	if d.cfg.CursorPath == "" {
		return nil
	}
	b, err := os.ReadFile(d.cfg.CursorPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var c cursorDoc
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	d.cursor, d.last = c, c.At
	return nil
}

// save writes the cursor file atomically.
func (d *Delivery) save() error {
	if d.cfg.CursorPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(d.cursor, "", "  ")
	if err != nil {
		return err
	}
	tmp := d.cfg.CursorPath + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.cfg.CursorPath)
}

// Run delivers until ctx ends: whenever a wake is raised or changes, the
// supervisor pane's state changes, or a Tick passes.
func (d *Delivery) Run(ctx context.Context) error {
	msgs, err := d.svc.SubscribeWakes(ctx, api.WakeFilter{IncludeAcked: true, IncludeResolved: true})
	if err != nil {
		d.cfg.Logger.Warn("supervisor pane: wakes are looked at every tick only", "err", err)
	}
	updates, err := d.svc.Watch(ctx)
	if err != nil {
		d.cfg.Logger.Warn("supervisor pane: its state is looked at every tick only", "err", err)
	}
	tick := time.NewTicker(d.cfg.Tick)
	defer tick.Stop()
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	look := true
	for {
		if look {
			due.Reset(d.try(ctx))
		}
		look = true
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-msgs:
			if !ok {
				msgs = nil
			}
		case u, ok := <-updates:
			if !ok {
				updates = nil
				break
			}
			// Only the supervisor pane's changes, and a pane that may
			// be it appearing, say something new.
			pane, _ := d.pane.Load().(string)
			look = u.Kind == api.Resync || u.Kind == api.SessionAdded || u.Kind.OfSession() && u.Session.Pane == pane
		case <-tick.C:
		case <-due.C:
		}
	}
}

// try gives the oldest waiting wake to the supervisor pane if it is idle
// and MinInterval has passed, and returns how long until it is worth
// trying again (an hour when only a change will tell).
func (d *Delivery) try(ctx context.Context) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Clock()
	sess, found, evs, err := d.next(ctx)
	if err != nil {
		d.cfg.Logger.Warn("supervisor pane: cannot read the wakes", "err", err)
		return d.cfg.Tick
	}
	if len(evs) == 0 {
		d.heldSince = time.Time{}
		d.report("", "")
		return time.Hour
	}
	waiting := wakesWait(len(evs))
	if !found {
		d.report("missing", fmt.Sprintf("supervisor pane: %v; %s for it (supervisor.session in the config)", sess.err, waiting))
		return time.Hour
	}
	s := sess.Session
	idleAgain := d.last.IsZero() || s.Since.After(d.last) || now.Sub(d.last) >= d.cfg.IdleAgain
	if s.State != api.Idle || !idleAgain || s.Since.Equal(d.notIdle) {
		if d.heldSince.IsZero() {
			d.heldSince = now
		}
		if held := now.Sub(d.heldSince); held >= d.cfg.StuckAfter {
			d.report("stuck", fmt.Sprintf("supervisor pane %s has not been idle at its prompt for %s (%s now); %s for it",
				s.Target, held.Round(time.Minute), s.State, waiting))
		} else {
			d.report("", "")
		}
		if !idleAgain {
			return d.cfg.IdleAgain - now.Sub(d.last)
		}
		return time.Hour
	}
	if wait := d.cfg.MinInterval - now.Sub(latest(d.last, d.failed)); wait > 0 {
		return wait
	}
	ev := evs[0]
	text := wakebrief.Write(ev, wakebrief.Options{Now: now, More: len(evs) - 1})
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), injectTimeout)
	d.typing.Store(true)
	res, err := d.svc.Inject(ictx, api.InjectRequest{Target: api.Target{Pane: s.Pane}, Text: text, WhenIdle: true, Origin: api.DeliveryOrigin})
	d.typing.Store(false)
	cancel()
	if errors.Is(err, api.ErrNotIdle) {
		// The screen moved on since the last capture: wait for the
		// monitors to see it, rather than read it again every tick.
		d.cfg.Logger.Debug("supervisor pane: not idle after all", "pane", s.Pane, "wake", ev.ID, "err", err)
		d.notIdle = s.Since
		if d.heldSince.IsZero() {
			d.heldSince = now
		}
		return d.cfg.Tick
	}
	if err != nil {
		d.failed = now
		d.cfg.Logger.Warn("supervisor pane: a wake could not be typed; it is tried again", "pane", s.Pane, "wake", ev.ID, "err", err)
		d.report("failed", fmt.Sprintf("supervisor pane %s: wake %s could not be typed (%v); it is tried again in %s", s.Target, ev.ID, err, d.cfg.MinInterval))
		return d.cfg.MinInterval
	}
	if !res.Verified {
		d.cfg.Logger.Warn("supervisor pane: a wake was typed but not seen submitted", "pane", s.Pane, "wake", ev.ID, "detail", res.Detail)
	}
	d.delivered(ev, d.cfg.Clock(), "typed", s)
	return d.cfg.MinInterval
}

// target is the supervisor pane as resolved now, or why it is not there.
type target struct {
	api.Session
	err error
}

// next resolves the supervisor pane and lists the wakes waiting for it,
// oldest first.
func (d *Delivery) next(ctx context.Context) (target, bool, []api.Wake, error) {
	var t target
	snap, err := d.svc.Snapshot(ctx)
	if err != nil {
		return t, false, nil, err
	}
	t.Session, t.err = api.ResolveTarget(d.cfg.Target, snap.Sessions, snap.Server)
	found := t.err == nil
	if !found {
		t.Session = api.Session{}
	}
	d.pane.Store(t.Pane)
	f := api.WakeFilter{Reasons: d.cfg.Reasons, SinceSeq: d.cursor.Seq}
	evs, err := d.svc.Wakes(ctx, f)
	if err != nil {
		return t, found, nil, err
	}
	evs = slices.DeleteFunc(evs, func(e api.Wake) bool {
		return (len(d.cfg.Reasons) == 0 && !e.Reason.NeedsPerson()) ||
			(found && e.Pane == t.Pane) || !d.matchSession(e.Session)
	})
	slices.SortFunc(evs, func(a, b api.Wake) int { return compareSeq(a.Seq, b.Seq) })
	return t, found, evs, nil
}

func compareSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (d *Delivery) matchSession(session string) bool {
	if len(d.cfg.Sessions) == 0 {
		return true
	}
	for _, g := range d.cfg.Sessions {
		if ok, _ := path.Match(g, session); ok {
			return true
		}
	}
	return false
}

// delivered moves the cursor past ev, given to the pane now, and records
// it.
func (d *Delivery) delivered(ev api.Wake, now time.Time, how string, s api.Session) {
	d.cursor = cursorDoc{Version: 1, Seq: ev.Seq, Wake: ev.ID, At: now, How: how}
	d.last, d.heldSince = now, time.Time{}
	d.cfg.Logger.Info("supervisor pane: wake delivered", "wake", ev.ID, "reason", ev.Reason, "pane", s.Pane, "how", how, "after", now.Sub(ev.Time).Round(time.Millisecond))
	if err := d.save(); err != nil {
		d.cfg.Logger.Warn("supervisor pane: the delivery cursor could not be saved", "path", d.cfg.CursorPath, "err", err)
		d.report("cursor", fmt.Sprintf("supervisor pane: the record of delivered wakes could not be saved (%v); monitors started again would type wake %s again", err, ev.ID))
		return
	}
	d.report("", "")
}

// report sets the snapshot's problem, logging it when its kind changes.
func (d *Delivery) report(kind, msg string) {
	if kind != d.problem && kind != "" {
		d.cfg.Logger.Warn("supervisor pane: "+kind, "problem", msg)
	}
	d.problem = kind
	d.svc.SetProblem(DeliveryProblem, msg)
}

// stopWait is how long a Stop event waits for a delivery in progress to
// let go, well inside the second `system3 hook` has.
const stopWait = 200 * time.Millisecond

// hook is the delivery's stage of a hook event (Supervisor.Hook): it
// answers the supervisor pane's Stop with the wake waiting for it, if any
// (see Stop), after next (the monitors) took the Stop; the two happen
// under one lock, so no typed delivery sees the Stop's idle state in
// between. Every other event, and one replayed from the spool (no hook
// waits for its answer), goes to next alone.
func (d *Delivery) hook(ctx context.Context, ev api.HookEvent, next hookFunc) (api.HookReply, error) {
	pane, _ := d.pane.Load().(string)
	if ev.Name != api.Stop || ev.Sender.Via == api.ViaSpool || ev.Pane == "" || (pane != "" && ev.Pane != pane) || !d.lock(stopWait) {
		return next(ctx, ev)
	}
	defer d.mu.Unlock()
	r, err := next(ctx, ev)
	if err != nil {
		return r, err
	}
	r = d.stopLocked(ctx, ev)
	if r.Decision == api.Block {
		// The turn did not end: the monitors must not take the Stop for
		// an idle pane while the agent works on the wake.
		if _, err := next(ctx, api.HookEvent{Name: api.Stop, Blocked: true, Pane: ev.Pane, SessionID: ev.SessionID}); err != nil {
			d.cfg.Logger.Warn("supervisor pane: the blocked Stop could not be recorded", "pane", ev.Pane, "err", err)
		}
	}
	return r, nil
}

// lock takes mu unless a wake is being typed, waiting at most wait.
func (d *Delivery) lock(wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for !d.typing.Load() {
		if d.mu.TryLock() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// Stop answers a Stop hook event that the monitors accepted (it comes
// from the pane it names). When it is the supervisor pane's and a wake
// waits for it, the reply blocks the end of the turn with the wake's brief
// as its reason: Claude Code goes on with the wake instead of going idle,
// and the wake counts as delivered. It does not while a wake is being
// typed, before MinInterval has passed, or after maxHookChain wakes handed
// in one turn that Claude Code says goes on because of a block
// (stop_hook_active). Service's Hook calls it; events replayed from the
// spool are never answered.
func (d *Delivery) Stop(ctx context.Context, ev api.HookEvent) api.HookReply {
	if ev.Name != api.Stop || ev.Sender.Via == api.ViaSpool || ev.Pane == "" || !d.lock(stopWait) {
		return api.HookReply{}
	}
	defer d.mu.Unlock()
	return d.stopLocked(ctx, ev)
}

func (d *Delivery) stopLocked(ctx context.Context, ev api.HookEvent) api.HookReply {
	if !ev.Received.IsZero() && d.hooked.pane == ev.Pane && d.hooked.at.Equal(ev.Received) && d.hooked.active == ev.StopHookActive {
		return d.hooked.reply // the same event again (its reply was lost)
	}
	sess, found, evs, err := d.next(ctx)
	if err != nil || !found || sess.Pane != ev.Pane {
		return api.HookReply{}
	}
	if !ev.StopHookActive {
		d.chain = 0
	} else if d.chain >= maxHookChain {
		d.cfg.Logger.Info("supervisor pane: Stop hook lets the turn end; the next wake is typed once it is idle", "pane", ev.Pane, "handed", d.chain)
		return api.HookReply{}
	}
	now := d.cfg.Clock()
	if len(evs) == 0 || now.Sub(latest(d.last, d.failed)) < d.cfg.MinInterval || ctx.Err() != nil {
		return api.HookReply{}
	}
	text := wakebrief.Write(evs[0], wakebrief.Options{Now: now, More: len(evs) - 1})
	if _, err := d.svc.handOff(api.DeliveryOrigin, sess.Session, text); err != nil {
		d.cfg.Logger.Warn("supervisor pane: a wake could not be handed over by the Stop hook", "pane", ev.Pane, "wake", evs[0].ID, "err", err)
		return api.HookReply{}
	}
	d.chain++
	d.delivered(evs[0], now, "stop_hook", sess.Session)
	reply := api.HookReply{Decision: api.Block, Reason: text}
	d.hooked.pane, d.hooked.at, d.hooked.active, d.hooked.reply = ev.Pane, ev.Received, ev.StopHookActive, reply
	return reply
}

// wakesWait says how many wakes wait: "1 wake waits", "3 wakes wait".
func wakesWait(n int) string {
	if n == 1 {
		return "1 wake waits"
	}
	return fmt.Sprintf("%d wakes wait", n)
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// DeliveryCursorPath is the cursor file of the state dir dir.
func DeliveryCursorPath(dir string) string { return filepath.Join(dir, DeliveryCursorFile) }

// UseDelivery has d answer the supervisor pane's Stop events with the wake
// waiting for it (Hook). Call it before the service is served.
func (s *Supervisor) UseDelivery(d *Delivery) { s.delivery.Store(d) }
