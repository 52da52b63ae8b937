package monitor

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// Tmux is what the supervisor needs from tmux.
type Tmux interface {
	ListPanes(ctx context.Context) ([]tmux.Pane, error)
	Capture(ctx context.Context, pane string, opt tmux.CaptureOptions) (string, error)
}

// Config configures a Supervisor. Zero durations take the defaults below.
type Config struct {
	// Server names the tmux server in snapshots and messages.
	Server string
	Tmux   Tmux
	// Events are tmux change notifications (a tmux.Watcher's). Without
	// them the supervisor polls: it lists panes every Tick and captures
	// only panes whose activity, cursor or history changed.
	Events <-chan tmux.Event
	Rules  *rules.Engine
	Wakes  *wake.Store
	// Processes returns the names of the processes below pid (the pane's
	// process), for recognising agents run by wrappers. Nil: none.
	Processes func(pid int) []string
	// Foreground tells, for a pane whose process is pid, that process's
	// name and the foreground job it runs ("" when it holds the terminal
	// itself), or ok false when that cannot be known (PaneForeground).
	// Nil: not known; a shell's state then comes from its screen alone.
	Foreground func(pid int) (comm, job string, ok bool)
	// RawTerminal tells whether the terminal tty (a pane's) takes keys one
	// at a time, canonical mode off (TerminalRaw), or ok false when that
	// cannot be read. A program no agent package knows in front of a
	// terminal in that mode is unknown, not a shell's job at work, and its
	// screen may show a prompt system3 guesses (rules.RuleGuessChoice).
	// Nil: never known.
	RawTerminal func(tty string) (raw, ok bool)
	// AgentVersion finds the version of the agent running under the pane's
	// process pid (AgentVersion), for evidence and captures. Nil: only a
	// version the agent's screen shows is known.
	AgentVersion func(pid int, agent string, isAgent func(comm string) bool) string
	// Cmdlines returns the command lines of pid and the processes below it,
	// for agents recognised by their arguments (node …/gemini). It is called
	// only when no process name is an agent's. Nil: none.
	Cmdlines func(pid int) []string
	// Probe tells what an agent's process says about it: its transcript
	// and task list (see ProbeAgent), for the agents whose Spec says how
	// (how). Nil: neither is followed.
	Probe func(p tmux.Pane, how *agent.Probe) AgentInfo
	// TaskProgress returns the progress of a task list by id (from a
	// tasks.Watcher). Nil: sessions carry no task progress.
	TaskProgress func(listID string) (api.TaskProgress, bool)
	// TaskLists returns every watched task list (a tasks.Watcher's
	// snapshot), for TaskLists. Nil: none.
	TaskLists func() []tasks.List
	// LinksPath is the file that keeps session → task list links (see
	// Link). Empty: links last as long as the supervisor.
	LinksPath string
	// StatesPath is the file that keeps each pane's state and since when
	// (see StatesFile). Empty: monitors that start afresh start every
	// state's clock again.
	StatesPath string
	// OnToolCall receives every tool call read from an agent's transcript
	// or reported by a Claude Code hook (PostToolUse, PostToolUseFailure);
	// monitor/coach detects behaviour patterns in them. It is called from
	// the monitor's loop and must not block. Nil: calls are not handed on.
	OnToolCall func(api.ToolCall)
	// ResumeAfterLimit: when a usage limit that nothing continues by
	// itself has reset (ResumeDelay after the minute the screen names),
	// system3 types the agent's continue (its Spec's Continue) at its
	// prompt, once per limit, only while the screen still shows that
	// limit (limit.go).
	ResumeAfterLimit bool
	// ResumeDelay is how long after the reset time a screen names the
	// continue waits (default 2m): the screen names the minute, the reset
	// falls within it, and clocks differ.
	ResumeDelay time.Duration
	// Zone is the time zone the agent under a pane's process pid tells
	// times in (PaneZone), for the reset of a usage limit its screen
	// shows without naming a zone. Nil, or a nil answer: time.Local.
	Zone func(pid int) *time.Location
	// Prices prices a model's tokens for sessions' estimated cost. Nil:
	// usage carries tokens only.
	Prices func(model string) (api.Price, bool)
	// Budget is a session's cost budget in US dollars: past it the session
	// raises one budget_exceeded wake. Nil or false: no budget.
	Budget func(session string) (float64, bool)
	// Send types into panes for Inject, Answer, Interrupt and SendKeys.
	// Nil: those fail with ErrNoSender.
	Send Sender
	// Audit records every action. Nil: nothing is recorded.
	Audit *audit.Log
	// Policy is what MCP clients may do (allowlist, read-only, rate), checked
	// on every action after its target is resolved. Nil: NewPolicy's
	// defaults (every session, 30 actions per pane per minute).
	Policy *api.Policy
	Clock  func() time.Time
	Logger *slog.Logger

	// HookKey is the state dir's hook key (hooks.LoadKey): a hook event
	// signed with its session's token is accepted from any process. Nil:
	// only the process ancestry proves where an event comes from.
	HookKey []byte

	IdleAfter      time.Duration // idle this long → session_idle (default 10m)
	HeartbeatEvery time.Duration // heartbeat when nothing else woke anyone (default 5m; negative: off)
	ErrorGrace     time.Duration // an error state this old → api_error wake (default 30s)
	// ExitGrace is how long an agent gone from its pane without a word may
	// still show the goodbye of a clean exit (it prints it as it quits;
	// the shell's prompt can come first) before it is a failed worker
	// (default 5s).
	ExitGrace     time.Duration
	SummaryEvery  time.Duration // a summary wake (digest of every session) this often (default 0: off)
	LoopThreshold int           // same error this many times → error_loop (default 3)
	LoopWindow    time.Duration // ... within this window (default 10m)
	// UnmatchedAfter is how long a recognised agent may show a screen no
	// rule explains before its state becomes unknown ("no rule matched");
	// until then it keeps its previous state, so a frame drawn half-way
	// does not flap (default 3s; negative: at once). It is also how long
	// the screen of a program no agent package knows must stay the same
	// before a choice list on it is a guessed prompt (at least 300 ms).
	UnmatchedAfter time.Duration

	// Settle coalesces the events of one watcher tick before capturing
	// (default 5ms: a tick's events arrive together).
	Settle time.Duration
	// MinCapture is the least time between two captures of one agent's
	// pane (default 40ms; negative: no limit). The watcher reports a pane
	// that keeps changing about once a second (tmux.WatcherOptions
	// BusyGap), and its ticks are at least 50ms apart: below that, a pane
	// reported by two ticks in a row is captured with each tick's batch
	// instead of on a connection of its own a little later.
	MinCapture time.Duration
	// StreamCapture is how often, at most, the pane of an agent that is
	// working is captured while its output streams on (default 5s;
	// negative: at each report). The watcher reports such a pane once a
	// BusyGap only because it keeps changing (tmux.Event.Streaming): an
	// agent that keeps printing has not stopped at a prompt, so those
	// beats are looked at only this often, for the error-loop and
	// progress rules and the line the dashboard shows. Its first pause,
	// a dialog drawn over its screen and its first change after a quiet
	// spell are reported as more than a beat and captured at once.
	StreamCapture time.Duration
	// OtherCapture is the same for panes where no agent was recognised (a
	// shell, a build): they are watched for an agent starting, less often
	// (default 1s; negative: no limit).
	OtherCapture time.Duration
	// Captures is how many tmux clients capturing (up to 8 panes the
	// first of a flush, 64 each other one)
	// may be in flight at once (default 4):
	// on a busy tmux server each capture waits for the server's loop, and
	// a round of many dirty panes must not wait for it once per pane.
	Captures int
	// Tick drives time-based checks, and polling without events (default 1s).
	Tick time.Duration
	// Rescan is how often panes are listed even with events, to notice
	// dead panes and renames that send no notification, and panes whose
	// activity, cursor or history changed are captured (default 5s). A
	// listing the watcher sent within Rescan (tmux.EventListed) is used
	// instead of listing again.
	Rescan time.Duration
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.IdleAfter, 10*time.Minute)
	def(&c.HeartbeatEvery, 5*time.Minute)
	def(&c.ErrorGrace, 30*time.Second)
	def(&c.ExitGrace, 5*time.Second)
	def(&c.ResumeDelay, 2*time.Minute)
	def(&c.LoopWindow, 10*time.Minute)
	def(&c.UnmatchedAfter, 3*time.Second)
	def(&c.Settle, 5*time.Millisecond)
	def(&c.MinCapture, 40*time.Millisecond)
	def(&c.OtherCapture, time.Second)
	def(&c.StreamCapture, 5*time.Second)
	def(&c.Tick, time.Second)
	def(&c.Rescan, 5*time.Second)
	if c.Captures <= 0 {
		c.Captures = 4
	}
	if c.LoopThreshold <= 0 {
		c.LoopThreshold = 3
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// paneState is what the supervisor remembers about one pane between
// captures.
type paneState struct {
	sess api.Session
	pane tmux.Pane
	// scanned is the pane as the last scan that compares screens' signs
	// of change (activity, cursor, history) listed it; see rescanLocked.
	scanned tmux.Pane
	dirty   bool
	// seenAgent is the last non-shell agent recognised in the pane, so an
	// agent that quits to its shell is reported as exited, not as a shell.
	seenAgent string
	errs      errorHistory
	// captured is when the pane was last captured.
	captured time.Time
	// output is when tmux last reported output from the pane.
	output time.Time
	// timeWoke is set once the current state's time-based wake (error
	// grace, idle) is raised, so it is not re-raised every tick.
	timeWoke bool
	// overBudget is set once the budget wake is raised for the usage so
	// far; it is cleared when the usage falls below the budget again (a
	// new transcript).
	overBudget bool
	// unmatchedSince is when the agent's screen stopped matching any rule
	// (zero while one matches); unmatched is that latest classification,
	// applied once UnmatchedAfter has passed even if the screen stays as
	// it is.
	unmatchedSince time.Time
	unmatched      *pendingApply
	// carry is what the last monitors recorded of the pane, until its
	// first classification (see StatesFile).
	carry *paneRecord
	// answered is the prompt an answer was last typed into, until the
	// screen shows another state or prompt: a second answer to it is
	// refused, however soon it comes after the first. lastAnswer is the
	// last answer, kept: an answer naming no prompt right after it is
	// refused too (recentAnswer).
	answered, lastAnswer answerMark
	// limit is the usage limit the pane shows, as read (limit.go).
	limit limitMark
	// resumed is the reset of the last usage limit system3 continued the
	// agent after (ResumeAfterLimit): once per limit.
	resumed time.Time
	// program is the program no agent package knows last seen in front
	// of the pane (rules.RuleUnknownProgram, RuleGuessChoice): while the
	// pane's shell holds its terminal after it, and nothing else happened
	// there, that program has exited (left). guess is the guessed prompt
	// last captured on the pane, held back until the program's output has
	// stopped. See guess.go.
	program string
	left    screenMark
	guess   screenMark
}

// pendingApply is a classification waiting to be applied.
type pendingApply struct {
	res rules.Result
	pr  probeResult
}

// Supervisor keeps the live registry of sessions, classifies panes when
// tmux says they changed, and raises and clears wakes. It implements
// Service.
type Supervisor struct {
	cfg Config
	// actions act on panes (actions.go); they see the registry only
	// through resolve and markDirty.
	actions

	mu    sync.Mutex
	panes map[string]*paneState
	// asking counts, by pane, the permission requests the approval policy
	// holds while its ask goes out: the ask's wake stands for the dialog
	// the agent draws meanwhile, which raises none of its own.
	asking   map[string]int
	running  bool
	problem  string
	lastWake time.Time
	// lastSummary is when the last summary wake was raised.
	lastSummary time.Time
	lastScan    time.Time
	subs        map[*watcher]struct{}
	// listed is the watcher's newest full listing (tmux.EventListed) and
	// when it came: a scan uses it instead of listing again.
	listed   []tmux.Pane
	listedAt time.Time

	rulesProblem string
	// extraProblems are problems other parts of the process report (SetProblem).
	extraProblems map[string]string
	// status is the status last published, and the health last read
	// (problems.go).
	status statusBoard
	// previews are the panes whose screens are followed (previews.go).
	previews previewHub

	// kick asks Run for a flush outside the event flow.
	kick chan struct{}
	// resumes are the continues after usage limits being typed; Run
	// waits for them before it returns.
	resumes sync.WaitGroup

	// rules is the engine in use; SetRules swaps it while running.
	rules atomic.Pointer[rules.Engine]

	// probes ask agents' processes what their screens do not say
	// (probes.go). Only flush uses them, so they need no lock.
	probes probes

	// hooks is what Claude Code hook events said about each pane (see
	// hookstate.go).
	hooks map[string]*paneHooks
	// links are the session → task list links (link.go).
	links linkTable
	// states is the record of each pane's state kept for monitors that
	// start afresh (states.go).
	states statesLog
	// roots is the name of each pane's own process as last read, for
	// panes whose process is not a shell (see classify); only flush uses
	// it.
	roots map[string]rootProcess
}

// rootProcess is a pane's own process as classify last read it: its pid,
// the foreground command tmux listed then, and its name.
type rootProcess struct {
	pid           int
	command, comm string
}

// setProblemLocked records the condition the snapshot reports, logging it
// once per change rather than every tick.
func (s *Supervisor) setProblemLocked(p string) {
	if p != s.problem && p != "" {
		s.cfg.Logger.Warn("monitor problem", "problem", p)
	}
	s.problem = p
	s.publishStatusLocked()
}

var _ api.Service = (*Supervisor)(nil)

// New returns a supervisor; Run starts it.
func New(cfg Config) (*Supervisor, error) {
	if cfg.Tmux == nil || cfg.Rules == nil || cfg.Wakes == nil {
		return nil, errors.New("monitor: Config needs Tmux, Rules and Wakes")
	}
	cfg.defaults()
	if cfg.Policy == nil {
		p, err := api.NewPolicy(api.PolicyConfig{}, cfg.Clock)
		if err != nil {
			return nil, err
		}
		cfg.Policy = p
	}
	s := &Supervisor{cfg: cfg, panes: map[string]*paneState{}, asking: map[string]int{}, subs: map[*watcher]struct{}{}, lastSummary: cfg.Clock(), roots: map[string]rootProcess{}, kick: make(chan struct{}, 1), lastWake: cfg.Clock()}
	s.actions = actions{cfg: &s.cfg, reg: s}
	s.probes = probes{cfg: &s.cfg, hookInfo: s.hookInfo, panes: map[string]*paneProbe{}, versions: map[string]*versionCache{}}
	s.links.path, s.links.log = cfg.LinksPath, cfg.Logger
	s.loadStates(cfg.Clock())
	s.rules.Store(cfg.Rules)
	return s, nil
}

// resolve finds the session a target names.
func (s *Supervisor) resolve(t api.Target) (api.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := make([]api.Session, 0, len(s.panes))
	for _, st := range s.panes {
		all = append(all, st.sess)
	}
	return api.ResolveTarget(t, all, s.cfg.Server)
}

// markDirty has a pane captured at the next flush.
func (s *Supervisor) markDirty(pane string) {
	s.mu.Lock()
	if st, ok := s.panes[pane]; ok {
		st.dirty = true
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// SetRulesProblem records why the user's rules could not be reloaded
// ("" once they could); the snapshot reports it.
func (s *Supervisor) SetRulesProblem(msg string) {
	s.mu.Lock()
	s.rulesProblem = msg
	s.publishStatusLocked()
	s.mu.Unlock()
}

// SetRules replaces the rules engine (after the user's rules file changed)
// and has every pane classified again with it.
func (s *Supervisor) SetRules(e *rules.Engine) {
	s.rules.Store(e)
	s.mu.Lock()
	for _, st := range s.panes {
		st.dirty = true
	}
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a flush is already asked for
	}
}

// Run watches until ctx ends. It never returns an error for tmux trouble:
// an unreachable server is a state the snapshot reports, not a crash.
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.resumes.Wait()
	s.rescan(ctx)
	s.flush(ctx)
	s.saveStates(s.cfg.Clock())
	tick := time.NewTicker(s.cfg.Tick)
	defer tick.Stop()
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	armed := false
	var due time.Time
	// arm makes the settle timer fire within d: new output must not wait
	// behind a pane held back for longer (Go 1.23 timers drop a stale
	// value on Reset).
	arm := func(d time.Duration) {
		at := time.Now().Add(d)
		if armed && !at.Before(due) {
			return
		}
		settle.Reset(d)
		armed, due = true, at
	}
	// flush, and come back for panes held back by MinCapture.
	flush := func() {
		if wait := s.flush(ctx); wait > 0 {
			arm(wait)
		}
	}
	events := s.cfg.Events
	// listed is a listing the watcher sent since the last settle, and
	// need the scan the events since then ask for.
	var listed []tmux.Pane
	need := scanNone
	// The record of states is written at each tick when it changed, and
	// as the monitors stop, so monitors that start right after carry on
	// from it.
	defer func() { s.saveStates(s.cfg.Clock()) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil // the watcher stopped; keep going by polling
				continue
			}
			if ev.Kind == tmux.EventListed {
				listed = ev.Panes
				s.setListed(ev.Panes)
			} else if n := s.handle(ev); n > need {
				need = n
				if need == scanFresh {
					listed = nil
					s.setListed(nil)
				}
			}
			arm(s.cfg.Settle)
		case <-s.kick:
			arm(0)
		case <-settle.C:
			armed = false
			switch {
			case need == scanListed && listed != nil:
				s.scanListing(listed, true)
			case need != scanNone:
				s.rescan(ctx)
			case listed != nil:
				s.scanListing(listed, false)
			}
			listed, need = nil, scanNone
			flush()
		case <-tick.C:
			now := s.cfg.Clock()
			if events == nil || now.Sub(s.lastScanTime()) >= s.cfg.Rescan {
				if l, ok := s.recentListing(now); ok && events != nil {
					s.scanListing(l, true)
				} else {
					s.rescan(ctx)
				}
				flush()
			}
			s.timeChecks(now)
			s.resumeLimits(ctx, now)
			s.saveStates(now)
		}
	}
}

func (s *Supervisor) lastScanTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastScan
}

// scanNeed is the scan of every pane an event asks for, least first.
type scanNeed int

const (
	scanNone scanNeed = iota
	// scanListed: panes came, went or moved; the watcher's listing that
	// found it (tmux.EventListed, sent before) tells, or one made now.
	scanListed
	// scanFresh: the server went away or events were lost; only a
	// listing made now tells.
	scanFresh
)

// handle notes one tmux event (other than tmux.EventListed) and returns
// the scan it asks for.
func (s *Supervisor) handle(ev tmux.Event) scanNeed {
	switch ev.Kind {
	case tmux.EventOutput:
		s.previews.output(ev.PaneID)
		s.mu.Lock()
		defer s.mu.Unlock()
		if p, ok := s.panes[ev.PaneID]; ok {
			now := s.cfg.Clock()
			p.output = now
			if !(ev.Streaming && s.streamingLocked(p, now)) {
				p.dirty = true
			}
			return scanNone
		}
		return scanListed // output from a pane we have not listed yet
	case tmux.EventPaneModeChanged:
		return scanNone
	case tmux.EventSessionsChanged:
		return scanListed
	default:
		return scanFresh
	}
}

// streamingLocked reports whether a beat of a pane whose output streams on
// (tmux.Event.Streaming) may go unlooked at: its agent was working at its
// last capture, less than StreamCapture ago, and its screen matched a
// rule. A pane in any other state (a prompt, an error, a screen no rule
// explains) is looked at with every report, as before.
func (s *Supervisor) streamingLocked(p *paneState, now time.Time) bool {
	gap := s.cfg.StreamCapture
	return gap > 0 && p.sess.IsAgent() && p.sess.State == rules.Working && p.unmatchedSince.IsZero() &&
		!p.captured.IsZero() && now.Sub(p.captured) < gap
}

// rescan lists panes, adds new ones (dirty), drops vanished ones and marks
// panes whose activity, cursor, size or liveness changed.
func (s *Supervisor) rescan(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	panes, err := s.cfg.Tmux.ListPanes(cctx)
	cancel()
	s.mu.Lock()
	ops := s.rescanLocked(panes, err, true)
	s.mu.Unlock()
	s.runOps(ops)
}

// scanListing is rescan with a listing the watcher made (tmux.EventListed)
// instead of one of its own. With signs false it marks dirty only panes
// that are new or whose size, liveness or process changed: the watcher
// reports panes whose screens change, so a listing it sends between two
// Rescans adds nothing else.
func (s *Supervisor) scanListing(panes []tmux.Pane, signs bool) {
	s.mu.Lock()
	ops := s.rescanLocked(panes, nil, signs)
	s.mu.Unlock()
	s.runOps(ops)
}

func (s *Supervisor) setListed(panes []tmux.Pane) {
	s.mu.Lock()
	s.listed, s.listedAt = panes, s.cfg.Clock()
	s.mu.Unlock()
}

// recentListing is the watcher's newest listing when it is younger than
// Rescan and a Tick: the watcher lists a fleet where nothing writes in
// full only every 5 s (tmux's maxFull), so its newest listing can be a
// tick older than Rescan when a rescan is due.
func (s *Supervisor) recentListing(now time.Time) ([]tmux.Pane, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed, s.listed != nil && now.Sub(s.listedAt) < s.cfg.Rescan+s.cfg.Tick
}

// rescanLocked applies a listing (or its error). A pane is marked dirty
// when it is new, when its size, liveness or process changed, and, with
// signs, when its activity, cursor or history changed since the last scan
// with signs (a safety net under the watcher's reports, every Rescan).
func (s *Supervisor) rescanLocked(panes []tmux.Pane, err error, signs bool) []wakeOp {
	now := s.cfg.Clock()
	if signs {
		s.lastScan = now
	}
	switch {
	case err == nil:
		s.running = true
		s.setProblemLocked("")
	case errors.Is(err, tmux.ErrNoServer):
		s.running, panes = false, nil
		s.setProblemLocked(fmt.Sprintf("no tmux server is running (%s); system3 will pick it up when it starts", s.cfg.Server))
	default:
		s.setProblemLocked(fmt.Sprintf("cannot list tmux panes: %v; showing the last known states", err))
		return nil
	}
	seen := make(map[string]bool, len(panes))
	var ops []wakeOp
	for _, p := range panes {
		seen[p.ID] = true
		st, ok := s.panes[p.ID]
		switch {
		case !ok:
			st = &paneState{dirty: true, scanned: p}
			st.sess = api.Session{Pane: p.ID, State: rules.Unknown, Since: now, Options: []string{}, Evidence: api.Evidence{Lines: []string{}}}
			s.panes[p.ID] = st
			s.carryLocked(st, p)
		case changedProcess(st.pane, p), signs && changed(st.scanned, p):
			st.dirty = true
		}
		if signs {
			st.scanned = p
		}
		// A renamed session or a moved window keeps its panes (and their
		// wakes): only where they are shown changes.
		moved := ok && (st.pane.SessionName != p.SessionName || st.pane.SessionID != p.SessionID ||
			st.pane.WindowName != p.WindowName || st.pane.WindowIndex != p.WindowIndex || st.pane.Index != p.Index)
		if ok && st.pane.SessionName != p.SessionName {
			// Its open wakes follow, so a reader filtering by the new name finds them.
			ops = append(ops, wakeOp{pane: p.ID, rename: &[2]string{st.pane.SessionName, p.SessionName}})
		}
		st.pane = p
		applyPane(&st.sess, p)
		switch {
		case !ok:
			s.publishLocked(api.Update{Kind: api.SessionAdded, Session: st.sess.Clone()})
		case moved:
			s.publishLocked(api.Update{Kind: api.SessionChanged, Session: st.sess.Clone(), Previous: st.sess.State})
		}
	}
	for id, st := range s.panes {
		if !seen[id] {
			delete(s.panes, id)
			if st.seenAgent != "" && st.sess.State != rules.Exited {
				// The pane closed with its agent (tmux closes a pane whose
				// command exits): the worker is gone as surely as if it had
				// crashed in place. The pane cannot come back, so the wake
				// is no condition that could end: it has no key of its own
				// and stays open until someone acknowledges it.
				gone := st.sess.Clone()
				gone.Agent, gone.State, gone.Kind = st.seenAgent, rules.Exited, "closed"
				gone.Evidence = api.Evidence{Source: "process", Rule: "monitor.pane_closed",
					Lines: []string{fmt.Sprintf("the pane closed while %s was %s", st.seenAgent, st.sess.State)}}
				gone.Question, gone.Detail, gone.Options = "", "", []string{}
				op := s.raiseOp(gone, api.ReasonWorkerFailed)
				op.raise.Key = ""
				ops = append(ops, op)
			}
			ops = append(ops, s.clearWakesLocked(id)...)
			s.publishLocked(api.Update{Kind: api.SessionRemoved, Session: st.sess.Clone()})
		}
	}
	return ops
}

// changed reports whether a listing suggests the screen may differ.
func changed(a, b tmux.Pane) bool {
	return !a.Activity.Equal(b.Activity) || a.CursorX != b.CursorX || a.CursorY != b.CursorY ||
		a.HistorySize != b.HistorySize || changedProcess(a, b)
}

// changedProcess reports a change of a pane's size, liveness or process.
func changedProcess(a, b tmux.Pane) bool {
	return a.Dead != b.Dead || a.Width != b.Width || a.Height != b.Height ||
		a.Command != b.Command || a.PID != b.PID
}

func applyPane(ss *api.Session, p tmux.Pane) {
	ss.Session, ss.SessionID = p.SessionName, p.SessionID
	ss.Window, ss.WindowIndex, ss.PaneIndex = p.WindowName, p.WindowIndex, p.Index
	ss.Target = fmt.Sprintf("%s:%d.%d", p.SessionName, p.WindowIndex, p.Index)
	ss.Command, ss.PID, ss.Path = p.Command, p.PID, p.Path
	ss.Width, ss.Height = p.Width, p.Height
}

// flush captures and classifies every dirty pane, except panes captured
// less than MinCapture (OtherCapture without an agent) ago: they stay
// dirty, and flush returns how long until the first of them may be
// captured (0 when none is held back). A spinner redraws many times a
// second; capturing it each time would cost CPU and change nothing.
//
// Up to Captures tmux clients capture at once, up to captureBatchSize
// panes each, in the order of captureOrder: panes whose output stopped
// longest ago first (a prompt is drawn, then nothing), so with many panes
// streaming a pane that just settled is not stuck behind them. Classification stays on
// the caller's goroutine, in the order captures complete; flush returns
// only once every capture it started has ended.
func (s *Supervisor) flush(ctx context.Context) time.Duration {
	now := s.cfg.Clock()
	var wait time.Duration
	s.mu.Lock()
	dropGone(s.probes.panes, s.panes)
	dropGone(s.probes.versions, s.panes)
	dropGone(s.roots, s.panes)
	var todo []*paneState
	for _, st := range s.panes {
		if !st.dirty {
			continue
		}
		gap := s.cfg.MinCapture
		if !st.sess.IsAgent() {
			gap = s.cfg.OtherCapture
		}
		if d := gap - now.Sub(st.captured); gap > 0 && !st.captured.IsZero() && d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		todo = append(todo, st)
	}
	slices.SortFunc(todo, captureOrder)
	panes := make([]tmux.Pane, len(todo))
	for i, st := range todo {
		st.dirty, st.captured = false, now
		panes[i] = st.pane
	}
	s.mu.Unlock()
	eng := s.rules.Load()
	for c := range s.captures(ctx, panes) {
		p := c.pane
		if !p.Dead && c.err != nil {
			// The pane may have closed between listing and capture; the
			// next rescan removes it.
			s.cfg.Logger.Debug("capture", "pane", p.ID, "err", c.err)
			continue
		}
		res := s.classify(eng, p, c.screen)
		if res.Rule == rules.RuleProcessGone && !p.Dead {
			// The listing can be older than the capture: a pane listed
			// while its shell was starting the agent shows the agent's
			// screen with the shell's name. Before calling the agent gone,
			// look at what the pane runs now.
			if fresh, ok := s.paneNow(ctx, p.ID); ok && (fresh.Command != p.Command || fresh.PID != p.PID) {
				p = fresh
				res = s.classify(eng, p, c.screen)
			}
		}
		res = s.followProgram(p.ID, res, c.screen)
		pr := s.withLink(p, s.probes.probe(p, res.Agent))
		pr.version = s.probes.versionOf(eng, p, res.Agent, c.screen)
		s.apply(p.ID, res, pr)
	}
	if ctx.Err() != nil {
		return 0
	}
	return wait
}

// dropGone deletes from a per-pane cache the panes no longer listed.
func dropGone[V any](cache map[string]V, panes map[string]*paneState) {
	maps.DeleteFunc(cache, func(id string, _ V) bool {
		_, ok := panes[id]
		return !ok
	})
}

// classify runs the rules on one pane's listing and screen.
func (s *Supervisor) classify(eng *rules.Engine, p tmux.Pane, screen string) rules.Result {
	in := rules.Input{Processes: []string{p.Command}, Dead: p.Dead, DeadStatus: p.DeadStatus}
	if !p.Dead {
		in.Screen = screen
		if s.cfg.Foreground != nil && !s.notShell(eng, p) {
			// A shell's own state comes from who holds its terminal.
			comm, job, ok := s.cfg.Foreground(p.PID)
			if ok && eng.ShellFor(comm) != "" {
				in.Shell, in.Job = comm, job
				if job == "" {
					// The shell holds its terminal now, whatever command
					// the listing (made up to a few seconds ago) saw in
					// front: an agent that quit to it is seen at once.
					in.Processes[0] = comm
				}
			}
			if ok {
				s.roots[p.ID] = rootProcess{pid: p.PID, command: p.Command, comm: comm}
			}
		}
		// Look below the pane's process only when its foreground
		// command is not an agent already (a wrapper, node, a shell).
		if s.cfg.Processes != nil && !eng.IsAgentProcess(in.Processes[0]) {
			in.Processes = append(in.Processes, s.cfg.Processes(p.PID)...)
		}
		if s.cfg.Cmdlines != nil && eng.WantsArgs(in.Processes) {
			in.Cmdlines = s.cfg.Cmdlines(p.PID)
		}
		in.Raw = s.rawFront(eng, p, in)
	}
	res := eng.Classify(in)
	if res.Rule == rules.RuleProcessGone && res.AgentBy == "screen" && len(in.Processes) > 0 && s.seenAgentOf(p.ID) == "" {
		// The screen shows an agent this pane was never seen running,
		// with a shell in the foreground: a shell that printed an agent's
		// text (cat of a transcript, a script's first moments), not an
		// agent that exited. It is the shell's screen.
		if shell := eng.ShellFor(in.Processes[0]); shell != "" {
			in.Agent = shell
			res = eng.Classify(in)
		}
	}
	return res
}

// notShell reports that the pane's own process was read before and is not
// a shell, so who holds its terminal does not matter: an agent started
// as the pane's command stays that process. A process that execs another
// program changes the foreground command tmux lists, and a new pid is a
// new process; either reads it again.
func (s *Supervisor) notShell(eng *rules.Engine, p tmux.Pane) bool {
	r, ok := s.roots[p.ID]
	return ok && r.pid == p.PID && r.command == p.Command && eng.ShellFor(r.comm) == ""
}

// seenAgentOf is the agent a pane was last seen running ("" if none).
func (s *Supervisor) seenAgentOf(pane string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.panes[pane]; ok {
		return st.seenAgent
	}
	return ""
}

// paneNow lists the panes again and returns p's current listing.
func (s *Supervisor) paneNow(ctx context.Context, id string) (tmux.Pane, bool) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	panes, err := s.cfg.Tmux.ListPanes(cctx)
	if err != nil {
		return tmux.Pane{}, false
	}
	for _, p := range panes {
		if p.ID == id {
			return p, true
		}
	}
	return tmux.Pane{}, false
}

// captureOrder orders dirty panes for capture: the pane whose last output
// is oldest first (one that printed a prompt and went quiet comes before
// one still streaming), then the one captured longest ago.
func captureOrder(a, b *paneState) int {
	if c := a.output.Compare(b.output); c != 0 {
		return c
	}
	if c := a.captured.Compare(b.captured); c != 0 {
		return c
	}
	return strings.Compare(a.pane.ID, b.pane.ID)
}

// captureBatchSize is how many panes the first tmux client of a flush
// captures, and captureRestSize how many each of the others does: a client
// (a connection, or a forked tmux) costs more than capturing a screen
// costs tmux, while a small first batch still lets the first panes (those
// quiet longest, where a prompt waits) be classified before the rest,
// which are mostly panes still writing, captured together.
const (
	captureBatchSize = 8
	captureRestSize  = 64
)

// batchCapturer is a Tmux that captures several panes with one client.
type batchCapturer interface {
	CaptureMany(ctx context.Context, panes []string, opt tmux.CaptureOptions) []tmux.Captured
}

// captureBatch captures panes, with one tmux client when the Tmux can.
func (s *Supervisor) captureBatch(ctx context.Context, panes []tmux.Pane) []captured {
	out := make([]captured, len(panes))
	if bc, ok := s.cfg.Tmux.(batchCapturer); ok && len(panes) > 1 {
		ids := make([]string, len(panes))
		for i, p := range panes {
			ids[i] = p.ID
		}
		for i, c := range bc.CaptureMany(ctx, ids, tmux.CaptureOptions{}) {
			out[i] = captured{pane: panes[i], screen: c.Screen, err: c.Err}
		}
		return out
	}
	for i, p := range panes {
		out[i].pane = p
		out[i].screen, out[i].err = s.cfg.Tmux.Capture(ctx, p.ID, tmux.CaptureOptions{})
	}
	return out
}

// captured is one pane's capture (none for a dead pane).
type captured struct {
	pane   tmux.Pane
	screen string
	err    error
}

// captures captures panes, at most Captures at once, starting them in
// order, and yields each as it completes. Once ctx ends no new capture
// starts. Every capture has ended when the sequence is over, even if the
// caller stops early.
func (s *Supervisor) captures(ctx context.Context, panes []tmux.Pane) iter.Seq[captured] {
	return func(yield func(captured) bool) {
		if len(panes) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		out := make(chan captured, len(panes)) // never blocks a capture
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, s.cfg.Captures)
			var inner sync.WaitGroup
			defer func() {
				inner.Wait()
				close(out)
			}()
			var live []tmux.Pane
			for _, p := range panes {
				if p.Dead {
					out <- captured{pane: p}
				} else {
					live = append(live, p)
				}
			}
			size := 1
			if _, ok := s.cfg.Tmux.(batchCapturer); ok {
				size = captureBatchSize
			}
			for len(live) > 0 {
				batch := live[:min(len(live), size)]
				live = live[len(batch):]
				if size > 1 {
					size = captureRestSize
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if ctx.Err() != nil {
					return
				}
				inner.Add(1)
				go func() {
					defer inner.Done()
					defer func() { <-sem }()
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					for _, c := range s.captureBatch(cctx, batch) {
						out <- c
					}
				}()
			}
		}()
		for c := range out {
			if !yield(c) {
				return
			}
		}
	}
}

// apply records a classification, derives error loops and exits, publishes
// the change and raises or clears wakes.
// pr is what the agent's process and transcript add.
func (s *Supervisor) apply(paneID string, res rules.Result, pr probeResult) {
	now := s.cfg.Clock()
	s.mu.Lock()
	ops := s.applyLocked(now, paneID, res, pr)
	s.mu.Unlock()
	s.runOps(ops)
}

func (s *Supervisor) applyLocked(now time.Time, paneID string, res rules.Result, pr probeResult) []wakeOp {
	st, ok := s.panes[paneID]
	if !ok {
		return nil
	}
	if agents.IsAgent(res.Agent) {
		st.seenAgent = res.Agent
	}
	if res.Rule == rules.RuleNoMatch && res.Agent != "" && res.Kind == "" && !st.pane.Dead {
		// A recognised agent shows a screen no rule explains: keep the
		// previous state for UnmatchedAfter (a frame drawn half-way),
		// then say so, naming the agent and its version.
		if st.unmatchedSince.IsZero() {
			st.unmatchedSince = now
		}
		st.unmatched = &pendingApply{res: res, pr: pr}
		if wait := s.cfg.UnmatchedAfter; wait > 0 && now.Sub(st.unmatchedSince) < wait && st.sess.State != rules.Unknown {
			st.sess.Updated, st.sess.LastLine = now, res.LastLine
			return nil
		}
		who := res.Agent
		if pr.version != "" {
			who += " " + pr.version
		}
		res.Evidence = append([]string{fmt.Sprintf("no rule matched (%s)", who)}, res.Evidence...)
	} else {
		st.unmatchedSince, st.unmatched = time.Time{}, nil
	}
	ev := api.Evidence{Source: "screen", Rule: res.Rule, Lines: res.Evidence}
	state, kind := res.State, res.Kind
	agent := res.Agent
	switch {
	case st.program != "" && agents.IsShell(agent) && res.Rule != rules.RuleShellJob && res.Rule != rules.RulePaneDead:
		// The program no agent package knows that this pane's shell ran
		// has ended: the shell holds its terminal again.
		agent, state, kind = "", rules.Exited, "process_gone"
		ev = api.Evidence{Source: "process", Rule: ruleProgramLeft, Lines: []string{fmt.Sprintf("%s (a program no agent package knows) is no longer running; the pane's shell holds its terminal again", st.program)}}
	case res.Rule == rules.RuleShellJob || res.Rule == rules.RuleShellPrompt:
		ev.Source = "process"
	case res.Rule == rules.RulePaneDead:
		ev.Source = "process"
		if agent == "" {
			agent = st.seenAgent
		}
	case agents.IsShell(agent) && st.seenAgent != "":
		// The agent this pane ran has quit to its shell, and the screen
		// shows nothing of it (a screen it left behind is the engine's
		// RuleProcessGone, by screen): it cleared its own display on the
		// way out, as a program that quits does and one killed cannot.
		agent, state, kind = st.seenAgent, rules.Exited, "process_gone"
		ev = api.Evidence{Source: "process", Rule: ruleAgentLeft, Lines: []string{fmt.Sprintf("%s is no longer running and cleared its screen; %s is in the foreground", st.seenAgent, st.pane.Command)}}
	}
	st.sess.ErrorCount = 0
	if state == rules.Error && kind != "command" {
		n := st.errs.observe(now, res.Evidence, s.cfg.LoopWindow)
		st.sess.ErrorCount = n
		if n >= s.cfg.LoopThreshold {
			state, kind = rules.ErrorLoop, ""
			ev = api.Evidence{Source: "history", Rule: "monitor.error_loop", Lines: append(slices.Clone(res.Evidence),
				fmt.Sprintf("the same error was seen %d times within %s", n, s.cfg.LoopWindow))}
		}
	} else {
		st.errs.leave()
	}
	if failing := pr.failing; failing != "" && state != rules.AwaitingInput && state != rules.Exited {
		state, kind = rules.ErrorLoop, ""
		ev = api.Evidence{Source: "transcript", Rule: "monitor.failing_tools", Lines: []string{errorSummary(failing),
			fmt.Sprintf("the last %d tool calls failed with this error within %s", s.cfg.LoopThreshold, s.cfg.LoopWindow)}}
		st.sess.ErrorCount = s.cfg.LoopThreshold
	}
	state, kind, ev = s.hookOverlayLocked(st, now, &res, pr, state, kind, ev)
	resetsAt := st.limit.read(state, res.Resets, ev, now, s.zoneOf(st.pane.PID))

	prev := st.sess
	ss := &st.sess
	ss.Agent, ss.AgentBy, ss.Kind = agent, res.AgentBy, kind
	ss.Evidence, ss.Question, ss.Detail = ev, res.Question, res.Detail
	ss.Options = res.Options
	if ss.Options == nil {
		ss.Options = []string{}
	}
	ss.ResetsAt = resetsAt
	ss.Prompt = ""
	if state == rules.AwaitingInput && res.State == rules.AwaitingInput {
		// Only a prompt the screen shows has an identity: one a hook
		// announced before it is drawn has no keys to choose yet.
		ss.Prompt = screenPrompt(agent, res)
	}
	if st.answered.prompt != "" && st.answered.prompt != ss.Prompt {
		// The screen moved on from the prompt an answer was typed into:
		// the next prompt, even one like it, may be answered.
		st.answered = answerMark{}
	}
	ss.LastLine = res.LastLine
	ss.TaskList, ss.Tasks = pr.taskList, pr.tasks
	ss.AgentSessionID, ss.Transcript = pr.agentSessionID, pr.transcript
	ss.AgentVersion = pr.version
	if pr.usage != nil || st.pane.Dead || agents.Lookup(agent).Probe == nil {
		// A probe that could not read the transcript this time keeps
		// the usage known so far.
		ss.Usage = pr.usage
	}
	ss.Updated = now
	if state != prev.State || kind != prev.Kind || ss.Prompt != prev.Prompt {
		ss.State = state
		ss.Since = now
		st.timeWoke = false
	}
	carrySinceLocked(st)
	budget := s.budgetWakeLocked(st)
	if state != prev.State || kind != prev.Kind || ss.Question != prev.Question || !slices.Equal(ss.Options, prev.Options) ||
		ss.Detail != prev.Detail || ss.Prompt != prev.Prompt || !ss.Since.Equal(prev.Since) || !ss.ResetsAt.Equal(prev.ResetsAt) ||
		ss.Agent != prev.Agent || ss.TaskList != prev.TaskList || !ss.Tasks.Equal(prev.Tasks) || !ss.Usage.Equal(prev.Usage) ||
		ss.AgentSessionID != prev.AgentSessionID ||
		ss.AgentVersion != prev.AgentVersion || (ev.Rule == rules.RuleNoMatch) != (prev.Evidence.Rule == rules.RuleNoMatch) {
		s.publishLocked(api.Update{Kind: api.SessionChanged, Session: ss.Clone(), Previous: prev.State})
		return append(s.stateWakesLocked(st, prev), budget...)
	}
	return budget
}

// timeChecks raises the wakes that come from time passing, and publishes
// the status when the journal's or the audit log's health changed.
func (s *Supervisor) timeChecks(now time.Time) {
	s.checkHealth()
	s.mu.Lock()
	ops := s.timeChecksLocked(now)
	s.mu.Unlock()
	s.runOps(ops)
}

// Refresh lists, captures and classifies every pane once, outside Run:
// `system3 status` uses it when no monitoring process is running.
func (s *Supervisor) Refresh(ctx context.Context) {
	s.rescan(ctx)
	s.flush(ctx)
}

// reprobeEvery is how often a pane's process is looked at again: a new
// Claude Code session (after /clear, or a restart) writes a new transcript.
const reprobeEvery = 10 * time.Second

type paneProbe struct {
	info   AgentInfo
	probed time.Time
	tail   *transcriptTail
}

// probeResult is what a pane's process and transcript add to its screen.
type probeResult struct {
	// failing is the error of a run of failing tool calls, or "".
	failing  string
	taskList string
	tasks    *api.TaskProgress
	usage    *api.Usage
	// agentSessionID and transcript name the agent's conversation.
	agentSessionID, transcript string
	// version is the agent's version, when known.
	version string
}

// errorSummary is a tool error in one line: its first two non-empty lines
// ("Exit code 2 · ls: cannot access ..."), at most 200 characters.
func errorSummary(text string) string {
	var parts []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
			if len(parts) == 2 {
				break
			}
		}
	}
	s := strings.Join(parts, " · ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}
