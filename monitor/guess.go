package monitor

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// A program no agent package knows still tells two things: that it waits
// for a choice, when its screen ends with a numbered list with a selection
// marker and its output has stopped (a guess, said so in its evidence),
// and that it has exited, when the shell that ran it holds its terminal
// again.

// ruleProgramLeft decides a program no agent package knows gone from its
// pane: the pane's shell holds its terminal again.
const ruleProgramLeft = "monitor.program_left"

// rawFront reports whether the program in front of pane p takes keys one
// at a time, when that program is neither the pane's shell nor an agent:
// the command its shell runs, or the pane's own process when that is no
// shell.
func (s *Supervisor) rawFront(eng *rules.Engine, p tmux.Pane, in rules.Input) bool {
	if s.cfg.RawTerminal == nil {
		return false
	}
	front := in.Job
	if in.Shell == "" && len(in.Processes) > 0 {
		front = in.Processes[0]
	}
	if front == "" || eng.ShellFor(front) != "" || eng.IsAgentProcess(front) {
		return false
	}
	raw, ok := s.cfg.RawTerminal(p.TTY)
	return raw && ok
}

// screenMark is a screen, or a part of one, by its hash, and when it was
// first captured; zero: none yet.
type screenMark struct {
	sum   uint64
	since time.Time
}

func screenSum(text string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	return h.Sum64()
}

// see records text captured at now, starting again when it differs from
// the text last seen.
func (m *screenMark) see(text string, now time.Time) {
	if sum := screenSum(text); m.since.IsZero() || m.sum != sum {
		*m = screenMark{sum: sum, since: now}
	}
}

// guessSettle is how long the screen of a guessed prompt must stay the
// same before it is taken for a prompt: monitor.unmatched_after, the time a
// recognised agent's screen that no rule explains is given to finish
// drawing, and at least promptSettle.
func (s *Supervisor) guessSettle() time.Duration { return max(s.cfg.UnmatchedAfter, promptSettle) }

// followProgram follows a program no agent package knows in a pane, from
// the pane's classification res and the screen it was made from, and
// returns the classification to apply.
//
// The program is remembered (paneState.program) until an agent is
// recognised in the pane, the pane is dead, its shell runs another command
// in front, or, with the shell back in front, anything but the last line
// of its screen (the prompt, where a command is typed) changes: a command
// ran, however short. Until then the shell in front says the program has
// exited (applyLocked).
//
// A guessed prompt (api.RuleGuessChoice) is held back until the
// program's output has stopped: a capture guessSettle or more after the
// first that showed it shows the very same screen. Until then the pane is
// unknown, saying so; recheckGuessLocked has it captured again once
// guessSettle has passed.
func (s *Supervisor) followProgram(pane string, res rules.Result, screen string) rules.Result {
	now := s.cfg.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.panes[pane]
	if !ok {
		return res
	}
	switch {
	case res.Rule == api.RuleUnknownProgram || res.Rule == api.RuleGuessChoice:
		st.program, st.left = res.Program, screenMark{}
	case res.Rule == api.RulePaneDead || agents.IsAgent(res.Agent) || res.Rule == api.RuleShellJob && res.Program != st.program:
		st.program = ""
	case st.program != "" && agents.IsShell(res.Agent) && res.Rule != api.RuleShellJob:
		// The shell holds its terminal again.
		above := strings.TrimRight(screen, " \n")
		above = above[:max(strings.LastIndexByte(above, '\n'), 0)]
		if st.left.since.IsZero() {
			st.left.see(above, now)
		} else if screenSum(above) != st.left.sum {
			st.program = ""
		}
	}
	if res.Rule != api.RuleGuessChoice {
		st.guess = screenMark{}
		return res
	}
	st.guess.see(screen, now)
	settle := s.guessSettle()
	if quiet := now.Sub(st.guess.since); quiet >= settle {
		res.Evidence = slices.Clone(res.Evidence)
		res.Evidence[0] += fmt.Sprintf(", and its output has stopped (the same screen for %s)", quiet.Round(time.Millisecond))
		return res
	}
	held := res
	held.State, held.Kind, held.Rule = api.Unknown, "", api.RuleUnknownProgram
	held.Question, held.Detail, held.Options, held.IdentityOptions = "", "", []string{}, nil
	held.Evidence = []string{fmt.Sprintf("no agent package knows %s; a numbered list with a selection marker is on screen, taken for a prompt only once the program's output has stopped for %s", res.Program, settle)}
	return held
}

// recheckGuessLocked has a pane whose guessed prompt is held back
// (followProgram) captured again once guessSettle has passed since its
// screen was first seen, and no capture has looked since: a program
// that stopped writing sends no event that would.
func (s *Supervisor) recheckGuessLocked(st *paneState, now time.Time) {
	g := st.guess
	if g.since.IsZero() || st.sess.State == api.AwaitingInput {
		return
	}
	due := g.since.Add(s.guessSettle())
	if now.Before(due) || !st.captured.Before(due) || st.dirty {
		return
	}
	st.dirty = true
	select {
	case s.kick <- struct{}{}:
	default: // a flush is already asked for
	}
}

// errGuessed refuses to answer a guessed prompt. No key is known to choose
// an option of a program no agent package knows: a digit may type into a
// filter or do nothing, an arrow may stop on a line that is no option or
// wrap around, and Enter takes whatever is under the cursor.
func errGuessed(sess api.Session) error {
	return fmt.Errorf("%w: %s's prompt is a guess (no agent package knows %s), so system3 cannot tell which keys choose an option; nothing was typed: look at the pane and choose at its keyboard",
		api.ErrBadRequest, sess.Target, sess.Command)
}
