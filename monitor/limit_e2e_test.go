package monitor

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/codextest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

var saveAfterLimit = flag.Bool("update-after-limit-capture", false, "save the screen of Claude Code gone on by itself after a usage limit to testdata/captures/claude/idle_after_limit.txt")

// limitRun is the real Claude Code, with a subscription, whose first
// request meets a spent 5-hour allowance resetting 20 s later, watched by
// monitors with resume_after_limit on.
type limitRun struct {
	cs    *claudetest.Session
	m     *liveMonitors
	audit string
	reset time.Time
}

// resumeDelay is the monitors' ResumeDelay here: past the minute the
// screen names, so the continue cannot come before the real reset.
const resumeDelay = time.Minute + 2*time.Second

func startLimitRun(t *testing.T) *limitRun {
	t.Helper()
	fake := claudetest.NewFakeAPI(t, claudetest.Rule{Contains: "hello there", Steps: []claudetest.Step{{Text: "Hello again."}}})
	fake.SetDefault(claudetest.Step{Text: "Continued fine."})
	reset := time.Now().Add(20 * time.Second)
	fake.FailNext(1, claudetest.SpentAllowance(reset))
	cs := claudetest.Start(t, claudetest.Options{API: fake, Env: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=" + claudetest.FakeOAuthToken}})
	dir := t.TempDir()
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 30*time.Second, func(c *Config) {
		c.ResumeAfterLimit, c.ResumeDelay, c.Audit, c.Zone = true, resumeDelay, audit.Open(dir), PaneZone
	})
	m.waitState(api.Idle, "")
	cs.Send("hello there")
	s := m.waitState(api.RateLimited, api.KindAutoResume)
	if s.ResetsAt.After(reset) || reset.Sub(s.ResetsAt) >= time.Minute {
		t.Fatalf("resets at %s, want the minute of %s", s.ResetsAt, reset)
	}
	ev := m.waitWake(api.ReasonUsageLimit)
	if !ev.ResetsAt.Equal(s.ResetsAt) || !strings.Contains(ev.SuggestedAction, "It continues by itself then") {
		t.Fatalf("wake = %+v", ev)
	}
	return &limitRun{cs: cs, m: m, audit: filepath.Join(dir, audit.File), reset: reset}
}

// mainAfter waits (up to timeout) for the fake API's first main request
// after the limit, and returns it.
func (r *limitRun) mainAfter(t *testing.T, timeout time.Duration) claudetest.Request {
	t.Helper()
	var after claudetest.Request
	testkit.WaitFor(t, timeout, "a request after the limit", func() bool {
		var mains []claudetest.Request
		for _, q := range r.cs.API.Requests() {
			if q.Kind == claudetest.KindMain {
				mains = append(mains, q)
			}
		}
		if len(mains) > 1 {
			after = mains[1]
		}
		return len(mains) > 1
	}, func() string { return "screen:\n" + r.cs.Capture() })
	return after
}

// resumes are the continues system3 typed, as the audit log has them.
func (r *limitRun) resumes(t *testing.T) []api.AuditEntry {
	t.Helper()
	es, err := audit.Read(r.audit)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return slices.DeleteFunc(es, func(e api.AuditEntry) bool { return e.Origin != api.ResumeOrigin })
}

// TestRealClaudeResumeAfterLimit: the real Claude Code at a usage limit,
// its automatic continue cancelled (Escape), would wait for a person.
// With resume_after_limit on, once the reset has passed the monitors type
// "continue" at its prompt, once: the fake API sees that request after
// the reset, Claude Code answers it, the limit's wake says who continued
// it, and nothing else is typed.
func TestRealClaudeResumeAfterLimit(t *testing.T) {
	t.Parallel()
	r := startLimitRun(t)
	r.cs.Keys("Escape")
	s := r.m.waitState(api.RateLimited, "")
	if s.Evidence.Rule != "claude.usage_limit" {
		t.Fatalf("cancelled: %+v", s)
	}
	q := r.mainAfter(t, 20*time.Second+resumeDelay+time.Minute)
	if q.Prompt != "continue" || q.Time.Before(r.reset) {
		t.Fatalf("the request after the limit: %q at %s, want continue after %s", q.Prompt, q.Time.Format(time.TimeOnly), r.reset.Format(time.TimeOnly))
	}
	r.m.waitState(api.Idle, "")
	if !strings.Contains(r.cs.Capture(), "Continued fine.") {
		t.Fatalf("the continue's answer is not on screen:\n%s", r.cs.Capture())
	}
	res := r.resumes(t)
	if len(res) != 1 || res[0].Text != "continue" || !res[0].Sent || res[0].Pane != r.cs.Pane {
		t.Fatalf("audited continues = %+v", res)
	}
	w, err := r.m.store.List(api.WakeFilter{Reasons: []api.Reason{api.ReasonUsageLimit}, IncludeAcked: true, IncludeResolved: true})
	if err != nil || len(w) != 1 || w[0].Resolution != `continued by system3 after the reset (resume_after_limit): typed "continue"` {
		t.Fatalf("usage_limit wakes = %+v, %v", w, err)
	}
	t.Logf("reset %s, continue typed %s, its request %s", r.reset.Format(time.TimeOnly), res[0].Time.Format(time.TimeOnly), q.Time.Format(time.TimeOnly))
	if n := len(r.cs.API.MainPrompts()); n != 2 {
		t.Fatalf("%d main requests, want the limited one and the continue: %q", n, r.cs.API.MainPrompts())
	}
}

// TestRealClaudeContinuesByItselfAfterLimit: left alone, Claude Code goes
// on by itself 30 to 120 s after the reset ("Usage limit reset ·
// Continuing automatically"). With resume_after_limit on, system3 types
// nothing on top of it, before or after; the monitors see it go on, and
// the limit it left behind on screen is not taken for a limit still in
// force.
func TestRealClaudeContinuesByItselfAfterLimit(t *testing.T) {
	t.Parallel()
	r := startLimitRun(t)
	q := r.mainAfter(t, 20*time.Second+3*time.Minute)
	if !strings.Contains(q.Prompt, "usage limit has reset") || q.Time.Before(r.reset) {
		t.Fatalf("the request after the limit: %q at %s, want Claude Code's own continue after %s", q.Prompt, q.Time.Format(time.TimeOnly), r.reset.Format(time.TimeOnly))
	}
	r.m.waitState(api.Idle, "")
	screen := r.cs.Capture()
	if !strings.Contains(screen, "Continued fine.") || !strings.Contains(screen, "You've hit your 5-hour limit") {
		t.Fatalf("screen after it went on:\n%s", screen)
	}
	if *saveAfterLimit {
		if err := os.WriteFile("testdata/captures/claude/idle_after_limit.txt", []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Past the time a continue would have been typed, nothing was.
	limitMinute := r.reset.Truncate(time.Minute)
	if d := time.Until(limitMinute.Add(resumeDelay + 3*time.Second)); d > 0 {
		time.Sleep(d)
	}
	if res := r.resumes(t); len(res) != 0 {
		t.Fatalf("system3 typed on top of Claude Code's own continue: %+v", res)
	}
	if p := r.cs.API.MainPrompts(); len(p) != 2 || slices.Contains(p, "continue") {
		t.Fatalf("main requests %q", p)
	}
	w, err := r.m.store.List(api.WakeFilter{Reasons: []api.Reason{api.ReasonUsageLimit}, IncludeAcked: true, IncludeResolved: true})
	if err != nil || len(w) != 1 || !w[0].Resolved || !strings.HasPrefix(w[0].Resolution, "the agent moved on") {
		t.Fatalf("usage_limit wakes = %+v, %v", w, err)
	}
}

// TestRealCodexResumeAfterLimit: the real Codex CLI ends its turn at a
// usage limit ("Try again at 12:19 AM.", its local time, here New
// York's) and never goes on by itself; with resume_after_limit on, system3
// types "continue" once, after the reset, and Codex sends that request.
func TestRealCodexResumeAfterLimit(t *testing.T) {
	t.Parallel()
	fake := codextest.NewFakeAPI(t, codextest.Rule{Contains: "continue", Steps: []codextest.Step{{Text: "Continued fine."}}})
	reset := time.Now().Add(20 * time.Second)
	fake.FailNext(1, codextest.UsageLimit(reset))
	cs := codextest.Start(t, codextest.Options{API: fake, Provider: []string{"request_max_retries = 0", "stream_max_retries = 0"}, Env: []string{"TZ=America/New_York"}})
	dir := t.TempDir()
	m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, 45*time.Second, func(c *Config) {
		c.ResumeAfterLimit, c.ResumeDelay, c.Audit, c.Zone = true, resumeDelay, audit.Open(dir), PaneZone
	})
	m.waitState(api.Idle, "")
	cs.Send("hello there")
	s := m.waitState(api.RateLimited, "")
	if s.ResetsAt.After(reset) || reset.Sub(s.ResetsAt) >= time.Minute {
		t.Fatalf("resets at %s, want the minute of %s (read in New York's zone)", s.ResetsAt, reset)
	}
	testkit.Poll(20*time.Second+resumeDelay+time.Minute, func() bool { return fake.CountMain("continue") > 0 })
	var cont codextest.Request
	for _, q := range fake.Requests() {
		if q.Kind == codextest.KindMain && q.Prompt == "continue" {
			cont = q
		}
	}
	if cont.Time.IsZero() || cont.Time.Before(reset) {
		t.Fatalf("continue request at %s, want one after %s; prompts %q\n%s", cont.Time, reset, fake.MainPrompts(), cs.Capture())
	}
	m.waitState(api.Idle, "")
	es, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	es = slices.DeleteFunc(es, func(e api.AuditEntry) bool { return e.Origin != api.ResumeOrigin })
	if len(es) != 1 || !es[0].Sent || fake.CountMain("continue") != 1 {
		t.Fatalf("continues: audited %+v, requests %q", es, fake.MainPrompts())
	}
}
