package api

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ReasonInfo is everything system3 says and does about one wake reason,
// in one row: every consumer (the supervisor's suggestion and clearing,
// the notifications' title, priority and urgency, the dashboard's feed,
// the wake brief, the MCP tools and prompt, the docs) reads the row, so
// adding a reason is one row here and its producer.
type ReasonInfo struct {
	Reason Reason
	// Label names it in a few words, for a notification's title and
	// one-line views: "waiting for you".
	Label string
	// What says what the session did, for the wake brief: "waits at a
	// prompt". WhatKind, when set, is said instead for a wake with a kind
	// (%s is the kind): "waits at a %s prompt".
	What, WhatKind string
	// Raised says when it is raised, and Resolved when it resolves, as
	// docs/wakes.md's table of reasons says them (a test compares).
	Raised, Resolved string
	// NeedsPerson: a wake of this reason asks someone to act. Without it
	// the wake is information (a heartbeat, a summary), resolved by the
	// next one of its reason.
	NeedsPerson bool
	// Priority is its ntfy priority (1 to 5) unless configured.
	Priority int
	// Urgency is its desktop notification urgency.
	Urgency Urgency
	// State is the session state that holds its condition: the wake is
	// resolved when the session leaves it (or, with Same, when Same says
	// the condition is another one). Empty for a reason no session state
	// holds; its producer resolves it.
	State State
	// Same reports whether cur still shows prev's condition, both in
	// State; nil means any two sessions in State do. A prompt is the same
	// only while its identity is; a usage limit while its reset is.
	Same func(prev, cur Session) bool
	// Changed is the resolution when Same says the condition is another
	// one ("the prompt changed"); now is for times in it.
	Changed func(cur Session, now time.Time) string
	// Suggest is the one-sentence next step the wake carries.
	Suggest func(cur Session, c SuggestContext) string
}

// Urgency is a desktop notification's urgency, as the freedesktop
// notification spec numbers them.
type Urgency byte

// The urgencies.
const (
	UrgencyLow Urgency = iota
	UrgencyNormal
	UrgencyCritical
)

// String is the urgency as notify-send names it.
func (u Urgency) String() string {
	switch u {
	case UrgencyLow:
		return "low"
	case UrgencyCritical:
		return "critical"
	}
	return "normal"
}

// SuggestContext is what a suggestion needs besides the session.
type SuggestContext struct {
	// Agent names the agent ("claude", or "the agent" when none is
	// known); Where is its place: "main:0.1 (pane %3)".
	Agent, Where string
	Now          time.Time
	// ErrorGrace and IdleAfter are the monitor's settings that raised an
	// api_error or session_idle wake.
	ErrorGrace, IdleAfter time.Duration
	// Resume is what system3 types at a limited agent's prompt once its
	// limit resets (monitor.resume_after_limit), "" when it types nothing.
	Resume string
}

// reasonTable is the one table of reasons, in the order they are
// documented.
var reasonTable = []ReasonInfo{
	{
		Reason: ReasonAwaitingInput, Label: "waiting for you",
		What: "waits at a prompt", WhatKind: "waits at a %s prompt",
		Raised:      "a prompt shows: a permission, a question, a plan, a folder-trust dialog",
		Resolved:    "it is answered, the prompt changes, the agent moves on",
		NeedsPerson: true, Priority: 4, Urgency: UrgencyCritical,
		State: AwaitingInput,
		// The same question about another command is another prompt.
		Same:    func(prev, cur Session) bool { return cur.Prompt == prev.Prompt },
		Changed: func(Session, time.Time) string { return "the prompt changed" },
		Suggest: suggestPrompt,
	},
	{
		Reason: ReasonErrorLoopDetected, Label: "error loop",
		What:        "repeats the same failing step",
		Raised:      "the same error three times within ten minutes, tool calls failing alike, or a behaviour pattern ([coaching.md](coaching.md))",
		Resolved:    "the agent moves on",
		NeedsPerson: true, Priority: 4, Urgency: UrgencyCritical,
		State: ErrorLoop,
		Suggest: func(_ Session, c SuggestContext) string {
			return fmt.Sprintf("%s keeps hitting the same error in %s; read the evidence, interrupt it and suggest a different approach.", c.Agent, c.Where)
		},
	},
	{
		Reason: ReasonWorkerFailed, Label: "agent exited",
		What:        "stopped: its process failed or went away",
		Raised:      "the agent exited without its goodbye, or its pane closed under it (see Exits)",
		Resolved:    "the agent is back",
		NeedsPerson: true, Priority: 4, Urgency: UrgencyCritical,
		State: Exited,
		Suggest: func(_ Session, c SuggestContext) string {
			return fmt.Sprintf("%s in %s has exited; read its last lines, then restart it or hand its tasks to another session.", c.Agent, c.Where)
		},
	},
	{
		Reason: ReasonAPIError, Label: "API error",
		What:        "hit an API error and stays stuck",
		Raised:      "an error state older than `monitor.error_grace` (30 s)",
		Resolved:    "the agent moves on",
		NeedsPerson: true, Priority: 4, Urgency: UrgencyNormal,
		State:   Error,
		Suggest: suggestAPIError,
	},
	{
		Reason: ReasonSessionIdle, Label: "idle",
		What:        "has been idle at its prompt",
		Raised:      "an agent idle at its prompt for `monitor.idle_after` (10 min)",
		Resolved:    "the agent moves on",
		NeedsPerson: true, Priority: 3, Urgency: UrgencyNormal,
		State: Idle,
		Suggest: func(_ Session, c SuggestContext) string {
			return fmt.Sprintf("%s in %s has been idle for %s; give it its next task or stop it.", c.Agent, c.Where, c.IdleAfter)
		},
	},
	{
		Reason: ReasonValidationFailed, Label: "validation failed",
		What:        "finished work that fails validation",
		Raised:      "finished work fails its validation command",
		Resolved:    "the validation passes",
		NeedsPerson: true, Priority: 4, Urgency: UrgencyNormal,
		Suggest: suggestLook,
	},
	{
		Reason: ReasonBudgetExceeded, Label: "budget exceeded",
		What:        "has spent more than its budget",
		Raised:      "a session's estimated cost reaches its budget",
		Resolved:    "the cost falls below it",
		NeedsPerson: true, Priority: 3, Urgency: UrgencyNormal,
		Suggest: func(_ Session, c SuggestContext) string {
			return fmt.Sprintf("%s in %s has spent its cost budget; decide whether it goes on (raise usage.budgets in the config) or stop it.", c.Agent, c.Where)
		},
	},
	{
		Reason: ReasonUsageLimit, Label: "usage limit",
		What:        "hit its usage limit and waits for it to reset",
		Raised:      "a usage limit shows (state `rate_limited`); the wake carries `resets_at`",
		Resolved:    "the agent moves on, another limit (another reset) shows, or system3 continued it",
		NeedsPerson: true, Priority: 3, Urgency: UrgencyNormal,
		State: RateLimited,
		// The same limit while it resets at the same time (a hook that did
		// not say when, then the screen that does, too).
		Same: func(prev, cur Session) bool { return prev.ResetsAt.IsZero() || cur.ResetsAt.Equal(prev.ResetsAt) },
		Changed: func(cur Session, now time.Time) string {
			return "another usage limit (" + ResetText(cur.ResetsAt, now) + ")"
		},
		Suggest: suggestLimit,
	},
	{
		Reason: ReasonHeartbeat, Label: "heartbeat",
		What:     "sends the heartbeat: nothing else happened for a while (information)",
		Raised:   "nothing else woke anyone for `monitor.heartbeat_every` (5 min)",
		Resolved: "the next heartbeat",
		Priority: 2, Urgency: UrgencyLow,
		Suggest: suggestLook,
	},
	{
		Reason: ReasonSummary, Label: "summary",
		What:     "sends a summary (information)",
		Raised:   "every `monitor.summary_every` (off by default)",
		Resolved: "the next summary",
		Priority: 2, Urgency: UrgencyLow,
		Suggest: suggestLook,
	},
}

// ReasonTable is every reason's row, in the order they are documented.
func ReasonTable() []ReasonInfo { return slices.Clone(reasonTable) }

// Info is the reason's row. A reason no row names (a newer system3 wrote
// it) gets a row that needs a person, labelled with its name.
func (r Reason) Info() ReasonInfo {
	for _, row := range reasonTable {
		if row.Reason == r {
			return row
		}
	}
	return ReasonInfo{Reason: r, Label: strings.ReplaceAll(string(r), "_", " "), What: "raised " + string(r), NeedsPerson: true, Priority: 3, Urgency: UrgencyNormal, Suggest: suggestLook}
}

// Known reports whether r is one of the documented reasons. Readers accept
// unknown reasons (a newer system3 may have written them); wake.Store.Raise does not.
func (r Reason) Known() bool {
	return slices.ContainsFunc(reasonTable, func(row ReasonInfo) bool { return row.Reason == r })
}

// NeedsPerson reports whether a wake of this reason asks someone to act;
// heartbeats and summaries are information, each resolved by the next.
func (r Reason) NeedsPerson() bool { return r.Info().NeedsPerson }

// Reasons lists every reason, in the order they are documented, for help
// texts and MCP enums.
func Reasons() []Reason {
	out := make([]Reason, len(reasonTable))
	for i, row := range reasonTable {
		out[i] = row.Reason
	}
	return out
}

// PersonReasons lists the reasons whose wakes ask someone to act, in the
// order they are documented: what a supervisor waits for by default.
func PersonReasons() []Reason {
	var out []Reason
	for _, row := range reasonTable {
		if row.NeedsPerson {
			out = append(out, row.Reason)
		}
	}
	return out
}

// WhatOf says what the wake's session did, from its reason's row.
func WhatOf(w Wake) string {
	row := w.Reason.Info()
	if row.WhatKind != "" && w.Kind != "" {
		return fmt.Sprintf(row.WhatKind, w.Kind)
	}
	return row.What
}

func suggestLook(_ Session, c SuggestContext) string { return fmt.Sprintf("Look at %s.", c.Where) }

func suggestPrompt(cur Session, c SuggestContext) string {
	if cur.Evidence.Rule == RuleGuessChoice {
		return fmt.Sprintf("A program no agent package knows (%s) seems to wait for a choice in %s: a guess, from the numbered list with a selection marker on its screen. Look at the pane and choose at its keyboard; system3 does not type into a prompt it guessed.", cur.Command, c.Where)
	}
	switch cur.Kind {
	case "permission":
		return fmt.Sprintf("Check what %s asks to do in %s and approve or decline it.", c.Agent, c.Where)
	case "question":
		return fmt.Sprintf("Answer %s's question in %s: pick an option or type guidance.", c.Agent, c.Where)
	case "plan":
		return fmt.Sprintf("Review %s's plan in %s and approve it or say what to change.", c.Agent, c.Where)
	case "trust":
		return fmt.Sprintf("Decide whether %s may work in %s (folder-trust dialog in %s).", c.Agent, cur.Path, c.Where)
	}
	return fmt.Sprintf("%s waits for input in %s; look at the pane and answer.", c.Agent, c.Where)
}

func suggestAPIError(cur Session, c SuggestContext) string {
	switch cur.Kind {
	case "rate_limited":
		if cur.Detail != "" {
			// The rule read when the limit resets ("… · resets 8:10pm").
			return fmt.Sprintf("%s in %s is held by a rate or usage limit (%s); wait for the reset or switch credentials, then tell it to continue.", c.Agent, c.Where, cur.Detail)
		}
		return fmt.Sprintf("%s in %s is held by a rate or usage limit; wait for the reset or switch credentials, then tell it to continue.", c.Agent, c.Where)
	case "auth":
		return fmt.Sprintf("%s in %s cannot authenticate; fix the API key or log in, then resend the last message.", c.Agent, c.Where)
	}
	return fmt.Sprintf("%s in %s has been failing on an API error for over %s; check the API and tell it to retry.", c.Agent, c.Where, c.ErrorGrace)
}

func suggestLimit(cur Session, c SuggestContext) string {
	what := fmt.Sprintf("%s in %s hit its usage limit, which %s", c.Agent, c.Where, ResetText(cur.ResetsAt, c.Now))
	if cur.ResetsAt.IsZero() {
		what = fmt.Sprintf("%s in %s hit its usage limit; its screen does not say when it resets", c.Agent, c.Where)
	}
	if cur.Kind == KindAutoResume {
		return what + ". It continues by itself then: nothing to do, unless you switch accounts (Escape in its pane cancels its automatic continue)."
	}
	if c.Resume != "" && !cur.ResetsAt.IsZero() {
		return what + fmt.Sprintf(". Nothing continues it by itself: system3 types %q at its prompt once the limit has reset (monitor.resume_after_limit), if the screen still shows this limit then.", c.Resume)
	}
	return what + ". Nothing continues it by itself: tell it to continue once the limit has reset, or switch accounts."
}
