package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Reason says why a wake was raised. The values are a contract with the CLI,
// the MCP tools and anyone reading the journal: add, never rename.
type Reason string

// The reasons a wake can have.
const (
	ReasonAwaitingInput     Reason = "awaiting_input"
	ReasonErrorLoopDetected Reason = "error_loop_detected"
	ReasonWorkerFailed      Reason = "worker_failed"
	ReasonAPIError          Reason = "api_error"
	ReasonSessionIdle       Reason = "session_idle"
	ReasonValidationFailed  Reason = "validation_failed"
	ReasonHeartbeat         Reason = "heartbeat"
	ReasonSummary           Reason = "summary"
	ReasonBudgetExceeded    Reason = "budget_exceeded"
	// ReasonUsageLimit: the agent hit a usage limit (state rate_limited);
	// the wake says when it resets (Wake.ResetsAt).
	ReasonUsageLimit Reason = "usage_limit"
)

// Evidence is why the monitor believes a state or a wake's condition
// holds: which source it looked at ("screen", "process", "history",
// "transcript", "hook"...), which rule matched, and the lines it matched
// on. A session and its wakes carry the same type.
type Evidence struct {
	Source string   `json:"source"` // "screen", "process", "history", "transcript", "hook", ...
	Rule   string   `json:"rule"`
	Lines  []string `json:"lines"`
}

// WakeProgress is the progress of the session's task list when the wake
// was raised.
type WakeProgress struct {
	ListID     string   `json:"list_id"`
	Completed  int      `json:"completed"`
	Total      int      `json:"total"`
	InProgress []string `json:"in_progress,omitempty"`
}

// Reminder is a composed intervention for a detected behaviour pattern:
// the text to type into the agent's pane and what it is made of.
type Reminder struct {
	// Alert is the coach's alert id, for reporting what the reminder did.
	Alert        int64  `json:"alert"`
	Pattern      string `json:"pattern"`
	Intervention string `json:"intervention"`
	// Directive is the CLAUDE.md directive quoted, by id; empty when none.
	Directive string `json:"directive,omitempty"`
	// Text is the whole reminder, ready to send.
	Text string `json:"text"`
	// Preventive: raised at threshold-1 occurrences, before the loop.
	Preventive bool `json:"preventive,omitempty"`
	// AutoSend: system3 types it itself (the pattern says so).
	AutoSend bool `json:"auto_send,omitempty"`
}

// Wake is one wake. The JSON form is stable: the journal, `system3 wait
// --json` and the MCP tools all use it.
type Wake struct {
	// ID is unique and sorts in creation order ("w" + zero-padded seq + "-" +
	// creation time in base 36). Set by the store.
	ID string `json:"id"`
	// Seq increases by one per wake and keeps increasing across restarts, so a
	// reader can ask for "wakes after seq N". Set by the store.
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"` // set by the store from its clock
	Reason Reason    `json:"reason"`
	// Key names the condition, e.g. "awaiting_input/%3". While a condition is
	// active (raised and not cleared) raising it again does nothing, even once
	// the wake is acknowledged. Leave it empty for wakes that are no condition
	// (heartbeats, summaries): the store sets it to the ID, and such wakes
	// always raise and need no Clear. A raiser that makes its own unique keys
	// must Clear them, or their wakes are kept for good.
	Key     string `json:"key"`
	Session string `json:"session"`
	Pane    string `json:"pane"`
	Agent   string `json:"agent"`
	State   string `json:"state"` // the monitor's vocabulary, kept as is
	Kind    string `json:"kind"`  // the monitor's vocabulary, kept as is

	Evidence        Evidence      `json:"evidence"`
	Question        string        `json:"question,omitempty"`
	Options         []string      `json:"options,omitempty"`
	Tasks           *WakeProgress `json:"tasks,omitempty"`
	SuggestedAction string        `json:"suggested_action"`
	Details         string        `json:"details,omitempty"` // e.g. the tail of a validation run
	// Reminder is what system3 offers to tell the agent when a behaviour
	// pattern (a loop) was detected; nil for other wakes.
	Reminder *Reminder `json:"reminder,omitempty"`

	// Prompt is the identity of the prompt an awaiting_input wake is
	// about (see PromptIdentity): an answer naming this wake types only
	// while the pane shows exactly this prompt.
	Prompt string `json:"prompt,omitempty"`
	// ResetsAt is when the usage limit of a usage_limit wake resets, as
	// the agent's screen said it (Session.ResetsAt); zero when unknown.
	ResetsAt time.Time `json:"resets_at,omitzero"`

	// Resolved: the wake's condition ended (see docs/wakes.md). Resolution
	// says how: "answered by cli: Yes", "the prompt changed", "the agent
	// moved on (now working)", "the pane went away", "the next heartbeat".
	Resolved   bool      `json:"resolved"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	Resolution string    `json:"resolution,omitempty"`

	Acked   bool      `json:"acked"`
	AckedAt time.Time `json:"acked_at,omitzero"`
	AckedBy string    `json:"acked_by,omitempty"` // "tui", "cli", "mcp:<client>"
}

// The words of a wake's lifecycle (docs/wakes.md). A wake is raised; it is
// open until its condition ends, when it is resolved; separately, someone
// may acknowledge it. A wake needs a person while it is open, not
// acknowledged, and its reason asks for someone (heartbeats and summaries
// are information).
const (
	StatusOpen     = "open"
	StatusResolved = "resolved"
)

// Status is the wake's place in its lifecycle: "open" or "resolved", with
// ", acknowledged" when someone acknowledged it.
func (e Wake) Status() string {
	s := StatusOpen
	if e.Resolved {
		s = StatusResolved
	}
	if e.Acked {
		s += ", acknowledged"
	}
	return s
}

// NeedsPerson reports whether the wake asks for someone now: open, not
// acknowledged, and of a reason that is not information.
func (e Wake) NeedsPerson() bool {
	return !e.Resolved && !e.Acked && e.Reason.NeedsPerson()
}

// PolicySource is the Evidence.Source of the approval policy's asks.
const PolicySource = "policy"

// PolicyAsk reports whether the wake is an approval policy's ask: a
// permission request held at the agent's hook, which an answer on this
// wake (or for its pane) decides, typing nothing.
func (e Wake) PolicyAsk() bool {
	return e.Reason == ReasonAwaitingInput && e.Evidence.Source == PolicySource
}

// NeedingPerson counts the wakes that need a person. It is the one count
// every view shows (status, the dashboard, MCP, the web page).
func NeedingPerson(evs []Wake) int {
	n := 0
	for i := range evs {
		if evs[i].NeedsPerson() {
			n++
		}
	}
	return n
}

// NeedingPersonText is how every view says that count: "no wake needs a
// person", "1 wake needs a person", "3 wakes need a person".
func NeedingPersonText(n int) string {
	switch n {
	case 0:
		return "no wake needs a person"
	case 1:
		return "1 wake needs a person"
	}
	return fmt.Sprintf("%d wakes need a person", n)
}

// PromptIdentity names a prompt by everything that makes it the prompt it
// is: the agent, its kind, the question, what it is about (the command,
// the file, the tool and its input, the URL) and the options. Two prompts
// with one identity are the same question about the same thing; any
// change (another command under the same "Do you want to proceed?") is
// another prompt. Spaces and the " · " that joins wrapped lines do not
// count, so a pane resized mid-prompt shows the same prompt. It is a
// short hash, the same in every process.
func PromptIdentity(agent, kind, question, detail string, options []string) string {
	h := sha256.New()
	for _, part := range append([]string{agent, kind, question, detail}, options...) {
		h.Write([]byte(strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || r == '·' {
				return -1
			}
			return r
		}, part)))
		h.Write([]byte{0})
	}
	return "p" + hex.EncodeToString(h.Sum(nil)[:8])
}

// clone returns a copy that shares no slices or pointers with e, so callers can
// never edit the store's copy.
// Place is where the wake happened, for one-line views: "session %pane",
// or whichever of the two is known.
func (e Wake) Place() string { return strings.TrimSpace(e.Session + " " + e.Pane) }

// Clone returns a copy of the wake that shares no slice or pointer with
// it.
func (e Wake) Clone() Wake {
	e.Evidence.Lines = slices.Clone(e.Evidence.Lines)
	e.Options = slices.Clone(e.Options)
	if e.Reminder != nil {
		r := *e.Reminder
		e.Reminder = &r
	}
	if e.Tasks != nil {
		t := *e.Tasks
		t.InProgress = slices.Clone(t.InProgress)
		e.Tasks = &t
	}
	return e
}

// WakeFilter selects wakes. The zero WakeFilter selects every open
// (unresolved), unacknowledged wake.
type WakeFilter struct {
	Reasons      []Reason // any of these; empty means all
	Session      string   // a path.Match pattern on the session name; empty means all
	SinceSeq     uint64   // only wakes with Seq > SinceSeq (a cursor)
	IncludeAcked bool
	// IncludeResolved adds wakes whose condition ended.
	IncludeResolved bool
	// Limit caps wake.Store.List to the first Limit wakes, oldest first, so a
	// reader pages with SinceSeq = last seq seen. 0 means no limit. Subscribe
	// and Wait ignore it.
	Limit int
}

// Validate reports a malformed session pattern, so a bad pattern from a user
// is rejected with a clear message instead of silently matching nothing.
func (f WakeFilter) Validate() error {
	if f.Session != "" {
		if _, err := path.Match(f.Session, ""); err != nil {
			return fmt.Errorf("session pattern %q is not a valid glob (use *, ? and [a-z]): %w", f.Session, err)
		}
	}
	if f.Limit < 0 {
		return fmt.Errorf("limit %d is negative; use 0 for no limit", f.Limit)
	}
	return nil
}

// AllWakes is the filter that selects every wake the store holds.
func AllWakes() WakeFilter { return WakeFilter{IncludeAcked: true, IncludeResolved: true} }

// Selects reports whether the filter selects e, its status included:
// acknowledged wakes only with IncludeAcked, resolved ones only with
// IncludeResolved.
func (f WakeFilter) Selects(e *Wake) bool {
	return (f.IncludeAcked || !e.Acked) && (f.IncludeResolved || !e.Resolved) && f.Matches(e)
}

// Matches reports whether the filter selects e by reason, session and
// cursor. It ignores IncludeAcked, IncludeResolved and Limit: callers
// decide how those apply (an ack notification must reach a subscriber
// that only wants unacked wakes).
func (f WakeFilter) Matches(e *Wake) bool {
	if e.Seq <= f.SinceSeq {
		return false
	}
	if len(f.Reasons) > 0 && !slices.Contains(f.Reasons, e.Reason) {
		return false
	}
	if f.Session != "" {
		if ok, _ := path.Match(f.Session, e.Session); !ok {
			return false
		}
	}
	return true
}

// WakeMessageKind says what happened to the wake of a [WakeMessage].
type WakeMessageKind string

// The kinds of [WakeMessage].
const (
	// WakeRaised: a new wake (or, with Replayed set, one that was unacked when the
	// subscription started).
	WakeRaised WakeMessageKind = "raised"
	// WakeAcked: the wake was acknowledged; Event carries the ack fields.
	WakeAcked WakeMessageKind = "acked"
	// WakeResolved: the wake's condition ended (the prompt was answered or
	// went away); Event carries Resolution. It may still be unacknowledged.
	WakeResolved WakeMessageKind = "resolved"
	// WakeResync: messages were dropped because the reader was slow. Re-read
	// wake.Store.Unacked (or wake.Store.List) and treat the messages that follow
	// idempotently, by event ID.
	WakeResync WakeMessageKind = "resync"
)

// WakeMessage is what a wake.Subscription delivers.
type WakeMessage struct {
	Kind     WakeMessageKind `json:"kind"`
	Event    Wake            `json:"event,omitzero"` // zero for Resync
	Replayed bool            `json:"replayed,omitempty"`
	Missed   uint64          `json:"missed,omitempty"` // for Resync: messages dropped so far
}

// WakeRaiser is what a producer of wakes (the supervisor's state changes,
// the validator, the coach) hands its wakes to. In a process that runs the
// monitors it is the Supervisor, which fills in what it knows of the pane
// and keeps one wake per condition through the wake store under it.
type WakeRaiser interface {
	// Raise raises ev, unless its condition (ev.Key) is already active:
	// then it returns the wake raised for it and false.
	Raise(ev Wake) (Wake, bool, error)
	// Resolve ends the condition key, saying how (why: "the prompt
	// changed"), so the next Raise of it makes a new wake.
	Resolve(key, why string) error
}
