package monitor

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// resumeRig is the fake tmux harness with a recording sender, an audit
// log and monitor.resume_after_limit on.
type resumeRig struct {
	*harness
	snd *recordingSender
	dir string
}

func newResumeRig(t *testing.T, mod func(*Config)) *resumeRig {
	t.Helper()
	dir := testkit.StateDir(t)
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) {
		c.Send, c.Audit, c.ResumeAfterLimit = snd, audit.Open(dir), true
		if mod != nil {
			mod(c)
		}
	})
	return &resumeRig{harness: h, snd: snd, dir: dir}
}

// at moves the clock to t, takes a look at the panes, and lets the
// continues due run to their end.
func (r *resumeRig) at(t time.Time) {
	r.clock.Add(t.Sub(r.clock.Now()))
	r.step()
	r.sup.resumeLimits(context.Background(), r.clock.Now())
	r.sup.resumes.Wait()
}

func (r *resumeRig) typed() []string {
	r.snd.mu.Lock()
	defer r.snd.mu.Unlock()
	return slices.Clone(r.snd.calls)
}

func (r *resumeRig) audited() []api.AuditEntry {
	r.t.Helper()
	es, err := audit.Read(filepath.Join(r.dir, audit.File))
	if err != nil {
		r.t.Fatal(err)
	}
	return es
}

// 2am (UTC) on the day after the harness's clock: the reset
// claude/rate_limited_*.txt show.
var claudeReset = time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)

// TestResumeAfterLimitOnceAfterTheReset: Claude Code's automatic continue
// was cancelled, so nothing would go on: "continue" is typed at its prompt
// once the reset has passed (and ResumeDelay after the minute the screen
// names), audited as system3's own, and the limit's wake says so. The same
// limit seen again is never continued twice.
func TestResumeAfterLimitOnceAfterTheReset(t *testing.T) {
	r := newResumeRig(t, nil)
	r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
	r.at(r.clock.Now())
	r.at(claudeReset.Add(-time.Minute))
	r.at(claudeReset.Add(90 * time.Second)) // the reset falls within 02:00, clocks differ
	if got := r.typed(); len(got) != 0 {
		t.Fatalf("typed before the reset and its delay: %q", got)
	}
	r.at(claudeReset.Add(2*time.Minute + time.Second))
	if got := r.typed(); !slices.Equal(got, []string{"text %1 continue"}) {
		t.Fatalf("typed %q, want continue once", got)
	}
	var sent *api.AuditEntry
	for _, e := range r.audited() {
		if e.Origin == api.ResumeOrigin && e.Action == "inject" && e.Text == "continue" && e.Pane == "%1" && e.Sent {
			sent = &e
		}
	}
	if sent == nil {
		t.Fatalf("the continue is not audited as system3's: %+v", r.audited())
	}
	w := r.allWakes(api.ReasonUsageLimit)
	if len(w) != 1 || !w[0].Resolved || w[0].Resolution != `continued by system3 after the reset (resume_after_limit): typed "continue"` {
		t.Fatalf("wakes = %+v", w)
	}

	// The screen still shows the limit (the agent has not drawn its turn
	// yet), and later the same limit again: nothing more is typed.
	r.at(claudeReset.Add(3 * time.Minute))
	r.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	r.at(claudeReset.Add(4 * time.Minute))
	r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
	r.at(claudeReset.Add(10 * time.Minute))
	if got := r.typed(); len(got) != 1 {
		t.Fatalf("typed %q: the same limit was continued twice", got)
	}
	if w := r.unacked(api.ReasonUsageLimit); len(w) != 1 || w[0].Resolved {
		t.Fatalf("the limit hit again has no open wake of its own: %+v", w)
	}
}

// TestResumeAfterLimitLeavesWhatContinuesByItself: Claude Code waiting to
// continue by itself at the reset ("Continuing automatically at …") gets
// nothing typed on top of it, before the reset or long after.
func TestResumeAfterLimitLeavesWhatContinuesByItself(t *testing.T) {
	r := newResumeRig(t, nil)
	r.tm.show(t, "%1", "claude", "claude/rate_limited_5h.txt")
	for _, at := range []time.Time{r.clock.Now(), claudeReset.Add(3 * time.Minute), claudeReset.Add(time.Hour)} {
		r.at(at)
	}
	if got := r.typed(); len(got) != 0 {
		t.Fatalf("typed %q over a CLI that continues by itself", got)
	}
	if w := r.unacked(api.ReasonUsageLimit); len(w) != 1 || !strings.Contains(w[0].SuggestedAction, "It continues by itself then") {
		t.Fatalf("wakes = %+v", w)
	}
}

// TestResumeAfterLimitTypesNothingIfTheScreenChanged: the keystroke is for
// the limit on screen now. When the pane, read again right before typing,
// shows something else (the agent went on, or says it will by itself),
// nothing is typed, the audit log says why, and the limit is not tried
// again.
func TestResumeAfterLimitTypesNothingIfTheScreenChanged(t *testing.T) {
	for _, now := range []string{"claude/idle.txt", "claude/rate_limited_5h.txt", "claude/awaiting_input_limit_options.txt"} {
		t.Run(now, func(t *testing.T) {
			r := newResumeRig(t, nil)
			r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
			r.at(claudeReset.Add(-time.Hour))
			// The screen changes after the monitors' last look.
			r.tm.show(t, "%1", "claude", now)
			r.clock.Add(time.Hour + 3*time.Minute)
			r.sup.resumeLimits(context.Background(), r.clock.Now())
			r.sup.resumes.Wait()
			if got := r.typed(); len(got) != 0 {
				t.Fatalf("typed %q into a screen that no longer shows the limit", got)
			}
			var refused *api.AuditEntry
			for _, e := range r.audited() {
				if e.Origin == api.ResumeOrigin && e.Phase == audit.PhaseRefused {
					refused = &e
				}
			}
			if refused == nil || !strings.Contains(refused.Error, "the usage limit is no longer on screen as it was") || !strings.Contains(refused.Error, "nothing was typed") {
				t.Fatalf("refusal not audited: %+v", r.audited())
			}
			r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
			r.at(claudeReset.Add(2 * time.Hour))
			if got := r.typed(); len(got) != 0 {
				t.Fatalf("tried the same limit again: %q", got)
			}
		})
	}
}

// TestResumeAfterLimitOff: without the option, nothing is typed, and the
// wake says to continue the agent by hand.
func TestResumeAfterLimitOff(t *testing.T) {
	r := newResumeRig(t, func(c *Config) { c.ResumeAfterLimit = false })
	r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
	r.at(r.clock.Now())
	r.at(claudeReset.Add(time.Hour))
	if got := r.typed(); len(got) != 0 {
		t.Fatalf("typed %q with resume_after_limit off", got)
	}
	if w := r.unacked(api.ReasonUsageLimit); len(w) != 1 || !strings.Contains(w[0].SuggestedAction, "tell it to continue once the limit has reset") {
		t.Fatalf("wakes = %+v", w)
	}
}

// TestResumeAfterLimitCodex: Codex never goes on by itself after its usage
// limit; it is continued at its prompt like Claude Code, and its wake
// says it will be.
func TestResumeAfterLimitCodex(t *testing.T) {
	r := newResumeRig(t, func(c *Config) { c.Zone = func(int) *time.Location { return time.UTC } })
	r.tm.show(t, "%2", "codex", "codex/rate_limited_usage.txt")
	r.at(r.clock.Now())
	if w := r.unacked(api.ReasonUsageLimit); len(w) != 1 || !strings.Contains(w[0].SuggestedAction, `system3 types "continue" at its prompt once the limit has reset`) {
		t.Fatalf("wakes = %+v", w)
	}
	reset := r.session("%2").ResetsAt // 10:01 PM
	if reset.Hour() != 22 || reset.Minute() != 1 {
		t.Fatalf("reset = %s", reset)
	}
	r.at(reset.Add(time.Minute))
	r.at(reset.Add(2*time.Minute + time.Second))
	if got := r.typed(); !slices.Equal(got, []string{"text %2 continue"}) {
		t.Fatalf("typed %q", got)
	}
}

// TestResumeAfterLimitOnceAcrossRestarts: monitors started again (a
// dashboard taking over a daemon that died) do not continue the same
// limit a second time.
func TestResumeAfterLimitOnceAcrossRestarts(t *testing.T) {
	path := filepath.Join(testkit.StateDir(t), StatesFile)
	r := newResumeRig(t, func(c *Config) { c.StatesPath = path })
	r.tm.show(t, "%1", "claude", "claude/rate_limited_cancelled.txt")
	r.at(r.clock.Now())
	r.at(claudeReset.Add(3 * time.Minute))
	r.sup.saveStates(r.clock.Now())
	if got := r.typed(); len(got) != 1 {
		t.Fatalf("typed %q", got)
	}
	r.clock.Add(2 * time.Second)
	h2 := r.restart(path)
	r2 := &resumeRig{harness: h2, snd: r.snd, dir: r.dir}
	h2.sup.cfg.Send, h2.sup.cfg.Audit, h2.sup.cfg.ResumeAfterLimit = r.snd, audit.Open(r.dir), true
	r2.at(r.clock.Now())
	r2.at(claudeReset.Add(time.Hour))
	if s := h2.session("%1"); s.State != api.RateLimited || !s.ResetsAt.Equal(claudeReset) {
		t.Fatalf("after the restart: %+v", s)
	}
	if got := r.typed(); len(got) != 1 {
		t.Fatalf("typed %q: continued again after a restart", got)
	}
}
