package api

import (
	"errors"
	"time"
)

// The coach's vocabulary: behaviour patterns as shown, their alerts, the
// interventions that answer them and their standings (internal/coach), and
// its errors.

// Errors of the coach a caller can tell apart with errors.Is.
var (
	ErrCoachNotFound   = errors.New("not found")
	ErrCoachBadRequest = errors.New("bad request")
	ErrCoachNoSender   = errors.New("this system3 cannot type into panes")
)

// Alert statuses (CoachAlert.Status). An alert is open while active or
// sent.
const (
	CoachStatusActive   = "active"   // detected; the reminder is offered, not sent
	CoachStatusSent     = "sent"     // the reminder was typed into the pane; being measured
	CoachStatusWorked   = "worked"   // after the reminder the loop ended
	CoachStatusFailed   = "failed"   // after the reminder the loop went on
	CoachStatusResolved = "resolved" // ended without a reminder being sent
)

// CoachAlert is one detection of a pattern in one session, and what
// became of its reminder.
type CoachAlert struct {
	ID          int64  `json:"id"`
	Pattern     string `json:"pattern"`
	PatternName string `json:"pattern_name"`
	Pane        string `json:"pane"`
	Target      string `json:"target,omitempty"`
	Session     string `json:"session,omitempty"`
	Repo        string `json:"repo,omitempty"`
	Agent       string `json:"agent,omitempty"`
	Language    string `json:"language,omitempty"`
	// Context is what effectiveness is counted per besides overall:
	// "repo:<dir>" (or "agent:<name>").
	Context string `json:"context,omitempty"`
	// Subject is what repeats: the command, file, error or tool.
	Subject    string `json:"subject,omitempty"`
	Count      int    `json:"count"`
	Threshold  int    `json:"threshold"`
	Preventive bool   `json:"preventive"`
	AutoSend   bool   `json:"auto_send"`
	Status     string `json:"status"`
	// Intervention is the one chosen (the most effective so far).
	Intervention string        `json:"intervention"`
	Directive    string        `json:"directive,omitempty"`
	Reminder     string        `json:"reminder"`
	WakeKey      string        `json:"wake_key,omitempty"`
	Window       time.Duration `json:"-"`
	Detected     time.Time     `json:"detected"`
	LastSeen     time.Time     `json:"last_seen"`
	SentAt       time.Time     `json:"sent_at,omitzero"`
	SentBy       string        `json:"sent_by,omitempty"`
	SettledAt    time.Time     `json:"settled_at,omitzero"`
	// Outcome says why the alert was settled ("no recurrence within 10m").
	Outcome string `json:"outcome,omitempty"`
}

// Open reports whether the alert still waits for its outcome.
func (a CoachAlert) Open() bool {
	return a.Status == CoachStatusActive || a.Status == CoachStatusSent
}

// CoachHistoryQuery selects alerts; zero fields select all.
type CoachHistoryQuery struct {
	Pattern string    `json:"pattern,omitempty"`
	Session string    `json:"session,omitempty"` // tmux session name, target or pane
	Status  string    `json:"status,omitempty"`  // a status, or "open"
	Since   time.Time `json:"since,omitzero"`
	Limit   int       `json:"limit,omitempty"` // newest first; 0: 50
}

// CoachStats are the counts of one intervention in one context (""
// overall).
type CoachStats struct {
	Pattern        string `json:"pattern"`
	Intervention   string `json:"intervention"`
	Context        string `json:"context"`
	Shown          int    `json:"shown"`
	Worked         int    `json:"worked"`
	Reported       int    `json:"reported"`
	ReportedWorked int    `json:"reported_worked"`
	// Effectiveness is the smoothed success rate, (worked+1)/(shown+2),
	// measured and reported outcomes together.
	Effectiveness float64 `json:"effectiveness"`
}

// InterventionStanding is one intervention's counts and whether it is the
// one chosen now.
type InterventionStanding struct {
	CoachStats
	Chosen bool `json:"chosen"`
}

// InterventionRequest asks for a reminder in one pane: the open alert's
// (of Pattern, when set), or, with Pattern and no alert open, a new one.
type InterventionRequest struct {
	Pane    string `json:"pane"`
	Target  string `json:"target,omitempty"`
	Session string `json:"session,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	// Send types the reminder; false only composes it.
	Send bool   `json:"send"`
	By   string `json:"by"`
}

// InterventionResult is the alert the reminder belongs to and, when sent,
// what the pane did with it.
type InterventionResult struct {
	Alert  CoachAlert             `json:"alert"`
	Sent   bool                   `json:"sent"`
	Action *ActionResult          `json:"action,omitempty"`
	Stats  []InterventionStanding `json:"interventions,omitempty"`
}

// CoachReport is a user's or agent's word on whether an intervention
// worked.
type CoachReport struct {
	Pattern      string `json:"pattern"`
	Intervention string `json:"intervention"`
	Worked       bool   `json:"worked"`
	Notes        string `json:"notes,omitempty"`
	// Alert, when known, ties the report to one alert.
	Alert int64  `json:"alert,omitempty"`
	By    string `json:"by,omitempty"`
}

// MaxNotes caps a coach report's notes.
const MaxNotes = 4000

// PatternInfo is a pattern as the CLI and MCP show it: its definition, the
// directive it is linked to, and its interventions' standings.
type PatternInfo struct {
	CoachPattern
	Link          DirectiveLink          `json:"directive_link"`
	Interventions []InterventionStanding `json:"intervention_stats"`
	Open          int                    `json:"open_alerts"`
}

// CoachPattern is a behaviour pattern's definition as the rules file
// gives it (monitor/rules reads and checks it).
type CoachPattern struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Trigger says which tool calls count as one occurrence.
	Trigger CoachTrigger `json:"trigger"`
	// When limits the pattern to some repos, agents or languages.
	When CoachPatternContext `json:"when,omitzero"`
	// Threshold is N: the pattern holds after N occurrences.
	Threshold int `json:"threshold"`
	// Window is how far back occurrences count ("10m"), and how long
	// after a reminder system3 watches whether it worked.
	Window string `json:"window"`
	// Preventive fires the reminder at N-1 occurrences, before the Nth.
	Preventive bool `json:"preventive"`
	// AutoSend types the reminder into the agent's pane without asking.
	AutoSend bool `json:"auto_send"`
	// Directive is the id of the CLAUDE.md directive the reminder quotes;
	// empty: the best text match is used.
	Directive string `json:"directive,omitempty"`
	// Keywords help match the pattern to a directive by text.
	Keywords []string `json:"keywords,omitempty"`
	// Interventions are the reminders system3 can send; the most effective
	// one (as measured) is chosen.
	Interventions []CoachIntervention `json:"interventions"`
	// Source is the file that defined the pattern and Line where.
	Source string `json:"source"`
	Line   int    `json:"line,omitempty"`
}

// CoachTrigger says what one occurrence of a pattern is.
type CoachTrigger struct {
	// Match is what the tool call itself must look like.
	Match CoachToolCond `json:"match"`
	// After, when set, must have been seen since the previous occurrence.
	After *CoachToolCond `json:"after,omitempty"`
	// Reset is a call that ends the run: occurrences before it no longer
	// count.
	Reset *CoachToolCond `json:"reset,omitempty"`
	// Same is what occurrences must share: command, file, error, tool, or
	// "" (any call in the session).
	Same string `json:"same,omitempty"`
}

// CoachToolCond matches one tool call; every field set must hold. Text
// fields are regular expressions.
type CoachToolCond struct {
	Tool    string `json:"tool,omitempty"`
	Command string `json:"command,omitempty"`
	File    string `json:"file,omitempty"`
	Error   string `json:"error,omitempty"`
	Failed  *bool  `json:"failed,omitempty"`
}

// CoachPatternContext limits where a pattern applies; an empty list
// allows all.
type CoachPatternContext struct {
	// Repos are path.Match globs against the session's directory or its
	// last element ("system3", "/src/*").
	Repos     []string `json:"repos,omitempty"`
	Agents    []string `json:"agents,omitempty"`
	Languages []string `json:"languages,omitempty"`
}

// CoachIntervention is one reminder: a concrete suggestion and the outcome
// it should bring, both templates.
type CoachIntervention struct {
	ID         string `json:"id"`
	Suggestion string `json:"suggestion"`
	Expected   string `json:"expected"`
}

// Directive is one instruction from a user's CLAUDE.md: a bullet, or a
// paragraph, under its heading.
type Directive struct {
	// ID is stable while the text's first words and heading stay the same:
	// "<source>/<heading>/<first words>", e.g.
	// "user/testing/never-rerun-a-failing-test".
	ID      string `json:"id"`
	Source  string `json:"source"` // "user" or "project"
	File    string `json:"file"`
	Line    int    `json:"line"`
	Heading string `json:"heading,omitempty"`
	Text    string `json:"text"`
}

// DirectiveFile is a CLAUDE.md to read, and the source name its
// directives get.
type DirectiveFile struct {
	Source string `json:"source"`
	Path   string `json:"path"`
}

// DirectiveLink is which directive a pattern's reminders quote, and why.
type DirectiveLink struct {
	Pattern   string `json:"pattern"`
	Directive string `json:"directive,omitempty"`
	// Score is 1 for an explicit link, else the text match's strength in
	// [0, 1]; By says which: "explicit", "text match", "none" (no
	// directive matched well enough), or "missing" (the rules file names a
	// directive that no CLAUDE.md has now).
	Score float64 `json:"score"`
	By    string  `json:"by"`
	Text  string  `json:"text,omitempty"`
}

// DirectivesView is what `system3 directives` and system3://directives
// show.
type DirectivesView struct {
	Files      []DirectiveFile `json:"files"`
	Directives []Directive     `json:"directives"`
	// Links say which directive each pattern quotes, by id or text match,
	// with the match's score, so the user can correct it in the rules file
	// (a pattern's `directive:`).
	Links    []DirectiveLink `json:"links"`
	Problems []string        `json:"problems,omitempty"`
}
