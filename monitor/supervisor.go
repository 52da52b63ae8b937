package monitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/monitor/agent"
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
	// screen may show a prompt system3 guesses (api.RuleGuessChoice).
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
	// internal/coach detects behaviour patterns in them. It is called from
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
	// agent after (ResumeAfterLimit): once per limit. resuming: system3
	// is typing that continue, and resolves the limit's wake itself.
	resumed  time.Time
	resuming bool
	// program is the program no agent package knows last seen in front
	// of the pane (api.RuleUnknownProgram, api.RuleGuessChoice): while the
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
	// The stages a hook event passes before the monitors take it (Hook):
	// the delivery of wakes to the supervisor pane (UseDelivery) and the
	// approval policy (UsePermissions), which answers a held permission
	// request too (Answer).
	delivery    atomic.Pointer[Delivery]
	permissions atomic.Pointer[Permissions]
	// linked is told of each link made through Link (UseLinked).
	linked atomic.Pointer[func(context.Context, api.LinkRequest, api.Session)]

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
	// The record of states is written at a tick when it changed (at most
	// every statesGap), and as the monitors stop, so monitors that start
	// right after carry on from it.
	defer func() { s.saveStatesAt(s.cfg.Clock(), 0) }()
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
