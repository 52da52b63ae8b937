package monitor

import (
	"fmt"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// The decide stage: which wakes a pane's session calls for, as a table
// over the previous and the current session (decide) and over how long
// the current state has lasted (decideLate). It reads each reason's row
// (the state that holds its condition, how another condition in that
// state is told) and the few facts a session does not carry (paneFacts).
// It is pure: no tmux, no lock, no store; the supervisor carries its
// decisions out (stateWakesLocked, timeChecksLocked).

// paneFacts are what decide needs to know of a pane besides its sessions.
type paneFacts struct {
	// held: the approval policy holds the pane's permission request, so
	// its ask's wake stands for the dialog on screen.
	held bool
	// cleanExit: the agent's exit was its user's choice (cleanExit).
	cleanExit bool
	// resuming: system3 is typing the continue of the pane's usage limit
	// (resume_after_limit); the limit's wake is left to it to resolve,
	// saying whether it typed.
	resuming bool
}

// clearing resolves the wake of a reason, saying why.
type clearing struct {
	reason api.Reason
	why    string
}

// decision is what a change of a session calls for: wakes to resolve,
// and at most one to raise.
type decision struct {
	clear []clearing
	raise api.Reason
}

// decide is the decision for a pane whose session changed from prev to
// cur. Each reason a state holds is resolved when the session leaves that
// state, or shows another condition in it (the row's Same): the same
// question about another command is a new prompt, a usage limit with
// another reset another limit. A prompt, an error loop and a usage limit
// raise their wake as they show; an agent's pane that died raises
// worker_failed at once (its status is final), unless the agent's exit
// was clean. The other states raise theirs once they have lasted
// (decideLate).
func decide(prev, cur api.Session, f paneFacts, now time.Time) decision {
	var d decision
	for _, row := range api.ReasonTable() {
		if row.State == "" || prev.State != row.State || sameCondition(row, prev, cur) {
			continue
		}
		why := fmt.Sprintf("the agent moved on (now %s)", cur.State)
		if row.Reason == api.ReasonUsageLimit && f.resuming {
			continue
		}
		if cur.State == row.State && row.Changed != nil {
			why = row.Changed(cur, now)
		}
		d.clear = append(d.clear, clearing{row.Reason, why})
	}
	same := func(r api.Reason) bool { return sameCondition(r.Info(), prev, cur) }
	switch cur.State {
	case api.AwaitingInput:
		// A prompt a hook announced before the screen draws it has no
		// question, options or identity yet: its wake waits for the
		// screen, which follows within a moment, so the prompt raises one
		// wake that says what it asks (or for promptWait: decideLate).
		if !same(api.ReasonAwaitingInput) && !f.held && cur.Prompt != "" {
			d.raise = api.ReasonAwaitingInput
		}
	case api.ErrorLoop:
		if prev.State != api.ErrorLoop {
			d.raise = api.ReasonErrorLoopDetected
		}
	case api.RateLimited:
		if !same(api.ReasonUsageLimit) {
			d.raise = api.ReasonUsageLimit
		}
	case api.Exited:
		// An agent that left its shell may yet show its goodbye:
		// decideLate decides after ExitGrace.
		if prev.State != api.Exited && cur.IsAgent() && cur.Evidence.Rule == api.RulePaneDead && !f.cleanExit {
			d.raise = api.ReasonWorkerFailed
		}
	}
	return d
}

// sameCondition reports whether prev and cur show the same condition of
// row's reason: both in its state, and the same by its row's Same.
func sameCondition(row api.ReasonInfo, prev, cur api.Session) bool {
	if prev.State != row.State || cur.State != row.State {
		return false
	}
	return row.Same == nil || row.Same(prev, cur)
}

// graces are how long a state lasts before it raises its wake.
type graces struct {
	err, idle, exit time.Duration
	// prompt: a prompt a hook announced that the screen has not drawn.
	prompt time.Duration
}

// promptWait is how long a prompt a hook announced may go undrawn before
// its wake is raised without what it asks: the screen draws it within a
// moment, and a wake with its question and options is the one a person
// or a supervising agent can act on.
const promptWait = 2 * time.Second

// decideLate is the wake cur's state calls for once it has lasted age: a
// prompt a hook announced that the screen has not drawn for promptWait,
// an error past its grace (not a shell's failed command, which is for
// whoever typed it), an agent idle for IdleAfter, an agent gone without
// its goodbye for ExitGrace. done says the state has had its decision:
// nothing more is decided until the state changes (a clean exit raises
// nothing, and is done).
func decideLate(cur api.Session, age time.Duration, f paneFacts, g graces) (raise api.Reason, done bool) {
	switch {
	case cur.State == api.Error && cur.Kind != "command" && age >= g.err:
		return api.ReasonAPIError, true
	case cur.State == api.Idle && cur.IsAgent() && age >= g.idle:
		return api.ReasonSessionIdle, true
	case cur.State == api.AwaitingInput && cur.Prompt == "" && !f.held && age >= g.prompt:
		return api.ReasonAwaitingInput, true
	case cur.State == api.Exited && cur.IsAgent() && age >= g.exit:
		if f.cleanExit {
			return "", true
		}
		return api.ReasonWorkerFailed, true
	}
	return "", false
}
