// Package api is system3's vocabulary: the sessions the monitor keeps and
// their states, the wakes it raises and the table of their reasons, the
// Service every front end uses (the dashboard, the MCP server, the CLI,
// the local socket and remote hosts), the requests and results of its
// actions, the hook events, audit entries and task-list documents it
// takes and returns, their errors, and the action policy. It is a leaf:
// it imports no package of this module, so every other package may
// speak it. It holds no monitoring and knows no agent: package monitor
// implements Service.
package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Session is one watched pane and what system3 believes about it. A state
// always carries why: the rule, its source and the matched lines.
type Session struct {
	// Host is the configured host whose daemon watches the pane, when it
	// is not this machine (see internal/remote's Fleet); its Pane, Session,
	// SessionID and Target then carry the HOST: prefix.
	Host        string `json:"host,omitempty"`
	Pane        string `json:"pane"` // tmux pane id, "%3"
	Session     string `json:"session"`
	SessionID   string `json:"session_id"`
	Window      string `json:"window"`
	WindowIndex int    `json:"window_index"`
	PaneIndex   int    `json:"pane_index"`
	Target      string `json:"target"` // "session:window.pane"
	Command     string `json:"command"`
	PID         int    `json:"pid"`
	Path        string `json:"path"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`

	Agent   string `json:"agent"`
	AgentBy string `json:"agent_by,omitempty"`
	// AgentVersion is the agent's version, when its process or screen
	// tells it.
	AgentVersion string   `json:"agent_version,omitempty"`
	State        State    `json:"state"`
	Kind         string   `json:"kind"`
	Evidence     Evidence `json:"evidence"`
	Question     string   `json:"question,omitempty"`
	Detail       string   `json:"detail,omitempty"`
	Options      []string `json:"options"`
	// Prompt is the identity of the prompt on screen while the state is
	// awaiting_input (PromptIdentity), "" otherwise. An answer may name
	// it: system3 types only while the pane still shows that prompt.
	Prompt string `json:"prompt,omitempty"`
	// ResetsAt is when the usage limit that holds a rate_limited agent
	// resets, as its screen (or hook) says it, to the minute the screen
	// shows; zero when it did not say.
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Since is when the current state began; Updated is the last capture.
	Since   time.Time `json:"since"`
	Updated time.Time `json:"updated"`
	// LastLine is the last meaningful line on screen, for one-line views.
	LastLine string `json:"last_line,omitempty"`
	// ErrorCount is how many times the current error signature was seen in
	// the error-loop window.
	ErrorCount int `json:"error_count,omitempty"`
	// TaskList is the task list the agent writes, and Tasks its progress,
	// when known.
	TaskList string        `json:"task_list,omitempty"`
	Tasks    *TaskProgress `json:"tasks,omitempty"`
	// Usage is the tokens (and estimated cost) the agent's session used,
	// from its transcript, when known.
	Usage *Usage `json:"usage,omitempty"`
	// AgentSessionID is the agent's own conversation id (Claude Code's
	// session_id, from its hooks or its transcript's name), which its
	// resume takes; Transcript is the file it writes. Empty when unknown.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	Transcript     string `json:"transcript,omitempty"`
	// Decisions are the approval policy's latest decisions on the
	// agent's permission requests, newest first (at most MaxDecisions).
	Decisions []PolicyDecision `json:"decisions,omitempty"`
}

// TaskProgress is a task list's progress as a session shows it.
type TaskProgress struct {
	Completed  int      `json:"completed"`
	Total      int      `json:"total"`
	InProgress []string `json:"in_progress"`
	Blocked    int      `json:"blocked"`
}

// Equal reports whether two progresses (either may be nil) are the same.
func (t *TaskProgress) Equal(o *TaskProgress) bool {
	if t == nil || o == nil {
		return t == o
	}
	return t.Completed == o.Completed && t.Total == o.Total && t.Blocked == o.Blocked && slices.Equal(t.InProgress, o.InProgress)
}

// Hint is one line telling the user what to do about the session's
// state, or "" when there is nothing to do: a recognised agent showing a
// screen no rule explains asks for a capture.
func (s Session) Hint() string {
	if s.State == Unknown && s.Evidence.Rule == RuleNoMatch && s.Agent != "" {
		return fmt.Sprintf("no rule explains this screen: run `system3 rules capture %s` and attach the file to a bug report, or add a rule (docs/md)", s.Pane)
	}
	return ""
}

// IsAgent reports whether the pane runs an agent: one was recognised, and
// it is no plain shell nor a pager.
func (s Session) IsAgent() bool {
	return s.Agent != "" && s.Agent != AgentShell && s.Agent != AgentViewer
}

// The agent names of panes that run no agent: a plain shell, and a pager
// or editor. monitor/agents registers them; a test there checks that
// every spec of another kind than a coding agent is one of these.
const (
	AgentShell  = "shell"
	AgentViewer = "viewer"
)

// LaunchableAgents are the agents a spawn can start without
// configuration, sorted: the agent packages with a launch command
// (monitor/agents' Launchable; a test there checks that the two agree).
// A face offers them when its service cannot say (Agents).
func LaunchableAgents() []string {
	return []string{"aider", "claude", "cline", "codex", "copilot", "gemini", "opencode", "qwen"}
}

// NeedsPerson reports whether the state asks for a human or a supervisor.
// A usage limit does: the agent is stopped until it resets, and only a
// person can decide to switch accounts or plans.
func (s Session) NeedsPerson() bool {
	switch s.State {
	case AwaitingInput, Error, ErrorLoop, RateLimited:
		return true
	}
	return false
}

// Coarse is a session's state in four words, as a supervising agent
// reads it (see Session.Coarse).
type Coarse string

// The coarse states of an orchestrator.
const (
	// CoarseActive: the agent runs on its own (working, idle, or a screen
	// no rule recognises).
	CoarseActive Coarse = "active"
	// CoarseBlocked: the agent waits for someone (a prompt, an error, an
	// error loop) or for a usage limit to reset.
	CoarseBlocked Coarse = "blocked"
	// CoarseComplete: the agent exited after finishing every task of its
	// task list.
	CoarseComplete Coarse = "complete"
	// CoarseFailed: the agent exited with work unfinished or unknown (it
	// crashed, was killed, or quit early).
	CoarseFailed Coarse = "failed"
)

// CoarseStates lists the coarse states, for enums and docs.
func CoarseStates() []string {
	return []string{string(CoarseActive), string(CoarseBlocked), string(CoarseComplete), string(CoarseFailed)}
}

// States lists the detailed states, for enums and docs.
func States() []string {
	return []string{string(Working), string(Idle), string(AwaitingInput), string(Error),
		string(ErrorLoop), string(RateLimited), string(Exited), string(Unknown)}
}

// Coarse maps the session's detailed state to the coarse one. An exited
// agent is complete only when its task list shows every task done:
// system3 cannot tell a clean exit from a crash by the screen, but
// unfinished tasks say the work did not end.
func (s Session) Coarse() Coarse {
	switch s.State {
	case AwaitingInput, Error, ErrorLoop, RateLimited:
		return CoarseBlocked
	case Exited:
		if t := s.Tasks; t != nil && t.Total > 0 && t.Completed == t.Total {
			return CoarseComplete
		}
		return CoarseFailed
	}
	return CoarseActive
}

// ExitedUnfinished reports whether the agent exited while its task list
// still has tasks to do.
func (s Session) ExitedUnfinished() bool {
	return s.Coarse() == CoarseFailed && s.Tasks != nil && s.Tasks.Total > 0
}

// Update is one change in the registry, delivered to subscribers: a
// session's (Session holds it), or, of kind StatusChanged, the registry's
// status as a whole (Status holds it, and Session is empty).
type Update struct {
	Kind    UpdateKind `json:"kind"`
	Session Session    `json:"session"`
	// Previous is the state before a change.
	Previous State `json:"previous,omitempty"`
	// Status is the registry's new status, for StatusChanged only.
	Status *Status `json:"status,omitempty"`
	// Missed counts updates a slow subscriber lost before this one; it
	// should take a new snapshot.
	Missed uint64 `json:"missed,omitempty"`
}

// UpdateKind says what changed.
type UpdateKind string

// The update kinds.
const (
	SessionAdded   UpdateKind = "added"
	SessionChanged UpdateKind = "changed"
	SessionRemoved UpdateKind = "removed"
	// StatusChanged: the tmux server started or stopped, or the problem
	// changed (Update.Status). No session changed.
	StatusChanged UpdateKind = "status"
	Resync        UpdateKind = "resync"
)

// OfSession reports whether an update of this kind is a session's change
// (added, changed or removed), whose Session is the session. A consumer
// that follows sessions skips the other kinds, and any kind it does not
// know (a newer daemon's).
func (k UpdateKind) OfSession() bool {
	return k == SessionAdded || k == SessionChanged || k == SessionRemoved
}

// Snapshot is the registry at one moment.
type Snapshot struct {
	Server   string    `json:"server"`
	Running  bool      `json:"server_running"`
	Sessions []Session `json:"sessions"`
	Taken    time.Time `json:"taken"`
	// Problem is a condition the operator should know about (tmux
	// unreachable, journal not writable), as one sentence; empty when fine.
	Problem string `json:"problem,omitempty"`
}

// Status is the registry's status as a whole, as a snapshot tells it and
// a StatusChanged update tells its changes: the tmux server watched,
// whether it runs, and the problem the operator should know about.
type Status struct {
	Server  string `json:"server"`
	Running bool   `json:"server_running"`
	Problem string `json:"problem,omitempty"`
}

// Status is the snapshot's status.
func (s Snapshot) Status() Status {
	return Status{Server: s.Server, Running: s.Running, Problem: s.Problem}
}

// Service is the one API the dashboard, the MCP server and the CLI use,
// in-process or over the local socket.
type Service interface {
	Snapshot(ctx context.Context) (Snapshot, error)
	// Watch delivers registry updates until ctx ends.
	Watch(ctx context.Context) (<-chan Update, error)
	Wakes(ctx context.Context, f WakeFilter) ([]Wake, error)
	// WaitWake returns the first open, unacked wake matching f (or a resolved one with f.IncludeResolved), waiting for one.
	WaitWake(ctx context.Context, f WakeFilter) (Wake, error)
	// SubscribeWakes delivers wake messages (raised, acked, cleared).
	SubscribeWakes(ctx context.Context, f WakeFilter) (<-chan WakeMessage, error)
	Ack(ctx context.Context, id, by string) (Wake, error)
	AckAll(ctx context.Context, by string) ([]Wake, error)

	// Preview returns a pane's screen.
	Preview(ctx context.Context, req PreviewRequest) (Preview, error)
	// WatchPreview delivers a pane's screen, as Preview reads it, while
	// ctx lasts: the screen now, then each time the pane's output
	// changed it, at most every PreviewEvery (see PreviewUpdate).
	WatchPreview(ctx context.Context, req PreviewRequest) (<-chan PreviewUpdate, error)
	// TaskLists returns every task list, or the one with that id.
	TaskLists(ctx context.Context, id string) ([]TaskListDoc, error)
	// Task returns one task whole; TaskLists caps each task's texts.
	Task(ctx context.Context, req TaskRequest) (TaskDoc, error)

	// Inject types text into a pane (and submits it, checked).
	Inject(ctx context.Context, req InjectRequest) (ActionResult, error)
	// SendKeys presses keys from tmux's allowed set in a pane.
	SendKeys(ctx context.Context, req KeysRequest) (ActionResult, error)
	// Answer answers the prompt a session waits at.
	Answer(ctx context.Context, req AnswerRequest) (ActionResult, error)
	// Interrupt stops what an agent is doing.
	Interrupt(ctx context.Context, req InterruptRequest) (ActionResult, error)
	// Audit records an entry (an MCP tool call) in the audit log.
	Audit(ctx context.Context, e AuditEntry) error
	// Hook takes one Claude Code hook event (see docs/hooks.md) and
	// answers what `system3 hook` prints for Claude Code: nothing, except
	// to a supervisor pane's Stop event when a wake waits for it.
	Hook(ctx context.Context, ev HookEvent) (HookReply, error)
	// Link links a session or pane to a task list (an empty list removes
	// the link), kept across restarts; it returns the session as it now
	// shows.
	Link(ctx context.Context, req LinkRequest) (Session, error)
	// Allow applies the policy to an action on a whole tmux session
	// (spawn, stop); an error matching ErrRefused says why not. The pane
	// actions above apply it themselves.
	Allow(ctx context.Context, req AllowRequest) error
}

// TaskRequest names one task of one task list.
type TaskRequest struct {
	List string `json:"list"`
	Task string `json:"task"`
}

// Clone returns a copy of the session that shares no slice or pointer
// with it.
func (ss Session) Clone() Session {
	if ss.Tasks != nil {
		t := *ss.Tasks
		t.InProgress = slices.Clone(t.InProgress)
		ss.Tasks = &t
	}
	ss.Options = slices.Clone(ss.Options)
	ss.Evidence.Lines = slices.Clone(ss.Evidence.Lines)
	ss.Usage = ss.Usage.Clone()
	ss.Decisions = slices.Clone(ss.Decisions)
	return ss
}

// SortSessions orders sessions for display: those needing a person first
// (awaiting input, error loop, error), then by name, window and pane, so the
// order is stable while states stay the same.
func SortSessions(ss []Session) {
	if len(ss) < 2 {
		return
	}
	// Sessions are large: sort pointers, then move each session once.
	ptrs := make([]*Session, len(ss))
	for i := range ss {
		ptrs[i] = &ss[i]
	}
	slices.SortStableFunc(ptrs, compareSessions)
	sorted := make([]Session, len(ss))
	for i, p := range ptrs {
		sorted[i] = *p
	}
	copy(ss, sorted)
}

func compareSessions(a, b *Session) int {
	if an, bn := a.NeedsPerson(), b.NeedsPerson(); an != bn {
		if an {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	if a.WindowIndex != b.WindowIndex {
		return a.WindowIndex - b.WindowIndex
	}
	if a.PaneIndex != b.PaneIndex {
		return a.PaneIndex - b.PaneIndex
	}
	return strings.Compare(a.Pane, b.Pane)
}
