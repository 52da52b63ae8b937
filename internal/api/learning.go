package api

import (
	"errors"
	"time"
)

// The learning store's vocabulary: what reporting an outcome, reflecting
// and listing learnings (internal/learn) take and return, and its errors.

// Errors of the learning store a caller can tell apart with errors.Is.
var (
	// ErrLearnInvalid marks input the store refuses; its message says what
	// to send instead.
	ErrLearnInvalid = errors.New("invalid input")
	// ErrLearnStorage matches the errors of a database that cannot be
	// written or read for a reason outside system3: a full disk, an I/O
	// error, a read-only or unreachable file. The request was fine; trying
	// again after the disk is fixed works.
	ErrLearnStorage = errors.New("the learning store cannot be written")
)

// Outcome values (Outcome.Outcome).
const (
	OutcomeSuccess = "success"
	OutcomePartial = "partial"
	OutcomeFailure = "failure"
)

// Learning kinds (LearnItem.Kind, LearnReport.Kind).
const (
	LearningPattern     = "pattern"
	LearningAntiPattern = "anti-pattern"
)

// Limits of a reported outcome.
const (
	MaxOutcomeInitiative = 500
	MaxReasoning         = 20000
	MaxLearning          = 2000
	MaxLearnings         = 50
	MaxDomain            = 64
)

// Outcome is what an orchestrator reports when an initiative ends.
type Outcome struct {
	// Initiative names what was attempted ("migrate sessions to Redis").
	Initiative string `json:"initiative"`
	// Outcome is success, partial or failure.
	Outcome string `json:"outcome"`
	// ReasoningPath is how the work was reasoned through, in prose or
	// steps; it is checked against the five criteria.
	ReasoningPath string `json:"reasoning_path"`
	// Learnings are the lessons to keep, one sentence each.
	Learnings []string `json:"learnings,omitempty"`
	// Blockers are what stood in the way.
	Blockers []string `json:"blockers,omitempty"`
	// Domain groups outcomes into a capability ("auth", "frontend");
	// empty means "general".
	Domain string `json:"domain,omitempty"`
	// ReportedBy is who reported it, as the service saw them ("cli",
	// "mcp:<client>", a socket peer): the policy judges it, and its
	// learnings are quoted as that reporter's.
	ReportedBy string `json:"reported_by,omitempty"`
}

// LearnReport is what reporting an outcome did.
type LearnReport struct {
	OutcomeID int64 `json:"outcome_id"`
	// Validated is true when the reasoning path evidences at least four
	// of the five criteria.
	Validated bool        `json:"validated"`
	Criteria  []Criterion `json:"criteria"`
	// PatternStored is true when the learnings were kept as patterns
	// (success and validated reasoning); otherwise they were kept as
	// anti-patterns.
	PatternStored bool `json:"pattern_stored"`
	// Kind is how the learnings were stored: pattern or anti-pattern.
	Kind string `json:"kind"`
	// Learnings are the stored learnings' ids; one already known is
	// counted again rather than stored twice (Merged).
	Learnings         []StoredLearning `json:"learnings"`
	CapabilityUpdated bool             `json:"capability_updated"`
	Domain            string           `json:"domain"`
	// Confidence is the domain's capability confidence after this outcome.
	Confidence float64 `json:"confidence"`
	Evidence   string  `json:"evidence"`
}

// StoredLearning is one learning as reporting an outcome kept it.
type StoredLearning struct {
	ID     int64  `json:"id"`
	Text   string `json:"text"`
	Merged bool   `json:"merged"`
}

// Criterion is one quality of a reasoning path the store looks for.
type Criterion struct {
	// Name is the criterion's id ("goal_defined").
	Name string `json:"name"`
	// Label says it in words ("goal clearly defined").
	Label string `json:"label"`
	// Evidenced is true when the reasoning path shows it.
	Evidenced bool `json:"evidenced"`
	// Evidence is the phrase of the reasoning path that shows it, with a
	// little of its context; empty when not evidenced.
	Evidence string `json:"evidence,omitempty"`
}

// OutcomeRecord is a stored outcome.
type OutcomeRecord struct {
	ID            int64       `json:"id"`
	At            time.Time   `json:"at"`
	Initiative    string      `json:"initiative"`
	Outcome       string      `json:"outcome"`
	ReasoningPath string      `json:"reasoning_path"`
	Domain        string      `json:"domain"`
	Validated     bool        `json:"validated"`
	Criteria      []Criterion `json:"criteria"`
	Learnings     []string    `json:"learnings"`
	Blockers      []string    `json:"blockers"`
}

// OutcomeFilter selects outcomes.
type OutcomeFilter struct {
	// Domain keeps one domain's outcomes; empty: all.
	Domain string `json:"domain,omitempty"`
	// Limit caps how many (newest first); 0 means 50.
	Limit int `json:"limit,omitempty"`
}

// Capability is how reliably initiatives of one kind succeed.
type Capability struct {
	// Name is what the capability is: the domain, or the capability asked
	// for (initiatives matching its words) within a domain.
	Name      string `json:"name"`
	Domain    string `json:"domain"`
	Attempts  int    `json:"attempts"`
	Successes int    `json:"successes"`
	Partials  int    `json:"partials"`
	Failures  int    `json:"failures"`
	// Confidence is the smoothed success rate (successes+1)/(attempts+2):
	// 0.5 with no evidence, approaching the plain rate as outcomes add up.
	Confidence float64 `json:"confidence"`
	// Evidence says it in words: "3 successful initiatives out of 4".
	Evidence string    `json:"evidence"`
	Updated  time.Time `json:"updated"`
}

// Budget bounds how much a reflection returns and whether a reflect
// command writes one.
type Budget string

// Budgets.
const (
	BudgetLow  Budget = "low"
	BudgetMid  Budget = "mid"
	BudgetHigh Budget = "high"
)

// Budgets lists the budgets, smallest first.
func Budgets() []string { return []string{string(BudgetLow), string(BudgetMid), string(BudgetHigh)} }

// LearnItem is one pattern or anti-pattern.
type LearnItem struct {
	ID       int64     `json:"id"`
	Kind     string    `json:"kind"`
	Text     string    `json:"text"`
	Domain   string    `json:"domain"`
	Seen     int       `json:"seen"`
	Injected int       `json:"injected"`
	Created  time.Time `json:"created"`
	LastSeen time.Time `json:"last_seen"`
	// ReportedBy is who first reported it, as the service saw them
	// ("cli", "mcp:<client>", a socket peer); empty for a learning stored
	// before reporters were kept: unknown.
	ReportedBy string `json:"reported_by"`
	// Stale is set on a learning not seen for a long time: reflect and
	// wisdom leave it out until it is reported again.
	Stale bool `json:"stale,omitempty"`
	// Score is the ranking score of a reflection (0 outside one).
	Score float64 `json:"score,omitempty"`
}

// CapabilityNote is a capability relevant to a reflection, in words.
type CapabilityNote struct {
	Capability
	Note string `json:"note"`
}

// Reflection is what a reflect found.
type Reflection struct {
	Query        string           `json:"query"`
	Budget       string           `json:"budget"`
	Patterns     []LearnItem      `json:"patterns"`
	AntiPatterns []LearnItem      `json:"anti_patterns"`
	Capabilities []CapabilityNote `json:"capabilities"`
	// Confidence is how much past experience backs this reflection:
	// n/(n+3) for n patterns and anti-patterns found, 0 with none.
	Confidence float64 `json:"confidence"`
	// Mode is "retrieval" (ranked material only) or "written" (a reflect
	// command wrote Reflection from it).
	Mode       string `json:"mode"`
	Reflection string `json:"reflection,omitempty"`
	// Note says why the mode is what it is.
	Note string `json:"note"`
}

// LearningFilter selects learnings for a listing.
type LearningFilter struct {
	// Domain keeps one domain's learnings; empty: all.
	Domain string `json:"domain,omitempty"`
	// Limit caps how many (newest first); 0 means 50.
	Limit int `json:"limit,omitempty"`
}

// LearnDeleteRequest asks to delete learnings.
type LearnDeleteRequest struct {
	IDs []int64 `json:"ids"`
	// By is who asks, as the service saw them: the policy judges it, and
	// the audit log names it.
	By string `json:"by"`
}

// LearnSummary is the learning store at a glance, for the dashboard.
type LearnSummary struct {
	Outcomes     []OutcomeRecord `json:"outcomes"`
	Patterns     []LearnItem     `json:"patterns"`
	AntiPatterns []LearnItem     `json:"anti_patterns"`
	Capabilities []Capability    `json:"capabilities"`
}
