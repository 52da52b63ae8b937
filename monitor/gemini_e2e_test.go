package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/geminitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// TestRealGemini runs the supervisor, fed by a polling tmux watcher,
// against the real Gemini CLI talking to the fake API: the pane
// is recognised as gemini by its process (node …/gemini), each screen class
// is classified, and a shell approval raises a wake with its question and
// options that `answer 1` resolves in the real CLI.
func TestRealGemini(t *testing.T) {
	fakeAPI := geminitest.NewFakeAPI(t,
		geminitest.Rule{Contains: "slow-essay", Steps: []geminitest.Step{{Text: geminitest.Essay, Chunks: 12, ChunkDelay: 300 * time.Millisecond}}},
		geminitest.Rule{Contains: "deploy-now", Steps: []geminitest.Step{
			{Text: "I'll run the deploy script.", Call: geminitest.Shell("./deploy.sh --prod", "Deploy to production")},
			{Text: "Deployed."},
		}},
	)
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI})
	if err := os.WriteFile(filepath.Join(gs.Dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed-ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })

	s := m.waitState(api.Idle, "")
	if s.Agent != "gemini" || s.AgentBy != "process" {
		t.Fatalf("agent = %q by %q, want gemini by process (pane command %q)", s.Agent, s.AgentBy, gs.CurrentCommand())
	}

	gs.Send("write the slow-essay")
	m.waitState(api.Working, "")
	gs.Keys("Escape")
	m.waitState(api.Idle, "interrupted")

	gs.Send("deploy-now please")
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Allow execution of [Shell]?" || len(ev.Options) != 3 ||
		ev.Options[0] != "Allow once" || !strings.Contains(ev.Details, "./deploy.sh --prod") || ev.Pane != gs.Pane {
		t.Fatalf("permission wake = %+v", ev)
	}
	gs.WaitStable(300*time.Millisecond, 0)
	// Named as a supervisor names it: the prompt it read.
	ps := m.wait("a prompt on screen", func(s api.Session) bool { return s.State == api.AwaitingInput && s.Prompt != "" })
	res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: gs.Pane}, Prompt: ps.Prompt, Answer: "1", Origin: "test"})
	if err != nil {
		t.Fatalf("answer 1: %v", err)
	}
	t.Logf("answer: %+v", res)
	gs.WaitFor("deployed", 0, func(sc string) bool {
		return strings.Contains(sc, "Deployed.") && geminitest.IdleAfter("deploy-now")(sc)
	})
	m.waitState(api.Idle, "")
	if !strings.Contains(strings.Join(fakeAPI.MainPrompts(), "\n"), "deployed-ok") {
		t.Errorf("the fake API never saw the shell command's output; prompts:\n%s", strings.Join(fakeAPI.MainPrompts(), "\n"))
	}

	fakeAPI.FailNext(1, geminitest.ErrorStatus(400))
	gs.Send("bad-key please")
	m.waitState(api.Error, "auth")

	gs.Send("/quit")
	m.waitState(api.Exited, "process_gone")
}

// The tests here drive the real Gemini CLI through the screen classes
// TestRealGemini leaves out, each in a session of its own so they run in
// parallel, with the supervisor set up as TestRealGemini sets it up.

// TestRealGeminiEditAndQuestion: a write_file approval and an ask_user
// question each raise an awaiting_input wake with their question and
// options that `answer 1` resolves in the real CLI (the fake API receives
// the function responses), and Ctrl-C twice leaves the pane exited with a
// worker_failed wake.
func TestRealGeminiEditAndQuestion(t *testing.T) {
	t.Parallel()
	fakeAPI := geminitest.NewFakeAPI(t)
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI})
	hello := filepath.Join(gs.Dir, "hello.go")
	fakeAPI.AddRule(geminitest.Rule{Contains: "make-file", Steps: []geminitest.Step{
		{Text: "Creating the file.", Call: geminitest.WriteFile(hello, "package main\n\nfunc main() {}\n")},
		{Text: "Written."},
	}})
	fakeAPI.AddRule(geminitest.Rule{Contains: "pick-db", Steps: []geminitest.Step{
		{Call: geminitest.AskUser("Which database should we use?", "Database", geminitest.Option{Label: "Postgres", Description: "Relational, robust"}, geminitest.Option{Label: "SQLite", Description: "Embedded file"})},
		{Text: "Using your choice."},
	}})
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	m.waitState(api.Idle, "")

	// An edit approval.
	gs.Send("make-file hello.go")
	ev := m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "permission" || ev.Question != "Apply this change?" || ev.Agent != "gemini" || ev.Pane != gs.Pane ||
		strings.Join(ev.Options, "|") != "Allow once|Allow for this session|Modify with external editor|No, suggest changes (esc)" ||
		!strings.Contains(ev.Details, "hello.go") || ev.Evidence.Rule != "gemini.permission" {
		t.Fatalf("edit approval wake = %+v", ev)
	}
	s := m.waitState(api.AwaitingInput, "permission")
	if s.Evidence.Rule != "gemini.permission" {
		t.Fatalf("edit approval decided by %q, want gemini.permission", s.Evidence.Rule)
	}
	answerGemini(t, m, gs, "Allow once")
	gs.WaitFor("written", 0, func(sc string) bool { return strings.Contains(sc, "Written.") && geminitest.IdleAfter("make-file")(sc) })
	m.waitState(api.Idle, "")
	if b, err := os.ReadFile(hello); err != nil || string(b) != "package main\n\nfunc main() {}\n" {
		t.Errorf("hello.go after the approval: %q, %v", b, err)
	}
	if p := geminiPromptWith(fakeAPI, "write_file: "); p == "" {
		t.Errorf("the fake API never saw write_file's response; prompts:\n%s", strings.Join(fakeAPI.MainPrompts(), "\n"))
	}

	// A question with options.
	gs.Send("pick-db for me")
	ev = m.waitWake(api.ReasonAwaitingInput)
	if ev.Kind != "question" || ev.Question != "Which database should we use?" || ev.Pane != gs.Pane ||
		strings.Join(ev.Options, "|") != "Postgres|SQLite|Enter a custom value" || ev.Evidence.Rule != "gemini.question" {
		t.Fatalf("question wake = %+v", ev)
	}
	m.waitState(api.AwaitingInput, "question")
	answerGemini(t, m, gs, "Postgres")
	gs.WaitFor("answered", 0, func(sc string) bool {
		return strings.Contains(sc, "Using your choice.") && geminitest.IdleAfter("pick-db")(sc)
	})
	m.waitState(api.Idle, "")
	if p := geminiPromptWith(fakeAPI, "ask_user: "); !strings.Contains(p, "Postgres") {
		t.Errorf("the fake API never saw ask_user's answer Postgres; prompts:\n%s", strings.Join(fakeAPI.MainPrompts(), "\n"))
	}

	// Ctrl-C once asks for another; the CLI is still idle.
	gs.Keys("C-c")
	gs.WaitFor("exit hint", 0, func(sc string) bool { return strings.Contains(strings.ToLower(sc), "again to exit") })
	if s := m.waitState(api.Idle, ""); s.Evidence.Rule != "gemini.idle" {
		t.Fatalf("one Ctrl-C decided by %q, want gemini.idle", s.Evidence.Rule)
	}
	gs.Keys("C-c")
	s = m.waitState(api.Exited, "process_gone")
	t.Logf("exited: decided by %s", s.Evidence.Rule)
	if s.Agent != "gemini" || (s.Evidence.Rule != api.RuleProcessGone && s.Evidence.Rule != "gemini.exited") {
		t.Fatalf("exited = %+v", s)
	}
	// Ctrl-C twice is the user's choice: Gemini says goodbye its way, and
	// no worker failed.
	if s := m.waitRule("gemini.exited"); s.State != api.Exited {
		t.Fatalf("goodbye = %+v", s)
	}
	noWake(t, m, api.ReasonWorkerFailed)
}

// TestRealGeminiTrustDialog: with folder trust on, the real CLI opens on
// its trust dialog, which is awaiting_input/trust with its options;
// `answer 1` trusts the folder and the CLI goes idle.
func TestRealGeminiTrustDialog(t *testing.T) {
	t.Parallel()
	settings := geminitest.DefaultSettings()
	settings["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": true}}
	gs := geminitest.Start(t, geminitest.Options{Settings: settings, ReadyText: "Do you trust the files in this folder?"})
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	ev := m.waitWake(api.ReasonAwaitingInput)
	parent := filepath.Base(filepath.Dir(gs.Dir))
	if ev.Kind != "trust" || ev.Question != "Do you trust the files in this folder?" || ev.Agent != "gemini" ||
		strings.Join(ev.Options, "|") != "Trust folder (project)|Trust parent folder ("+parent+")|Don't trust" ||
		ev.Evidence.Rule != "gemini.trust" {
		t.Fatalf("trust wake = %+v", ev)
	}
	m.waitState(api.AwaitingInput, "trust")
	answerGemini(t, m, gs, "Trust folder (project)")
	gs.WaitFor("input box", 40*time.Second, func(sc string) bool {
		return geminitest.IsInputBoxShown(sc) && !strings.Contains(sc, "Do you trust the files")
	})
	if s := m.waitState(api.Idle, ""); s.Evidence.Rule != "gemini.idle" {
		t.Fatalf("after trusting, decided by %q, want gemini.idle", s.Evidence.Rule)
	}
}

// TestRealGeminiRetries: a 500 the CLI retries is hidden behind its busy
// line, so the pane is working (not error) until the retry's answer ends
// the turn; a bad key is an error each time, and the third in a row is an
// error loop with its wake.
func TestRealGeminiRetries(t *testing.T) {
	t.Parallel()
	fakeAPI := geminitest.NewFakeAPI(t, geminitest.Rule{Contains: "flaky", Steps: []geminitest.Step{{Text: "Recovered after a retry."}}})
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI})
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	m.waitState(api.Idle, "")

	fakeAPI.FailNext(1, geminitest.ErrorStatus(500))
	gs.Send("flaky request please")
	// Between the 500 and the retry (5s ±30% later) the screen shows only
	// the busy line: every classification made then must be working.
	samples := m.record(t, gs, func(s api.Session) bool { return s.State == api.Idle && len(geminiMainWith(fakeAPI, "flaky")) >= 2 })
	reqs := geminiMainWith(fakeAPI, "flaky")
	if len(reqs) != 2 || reqs[0].Status != 500 || reqs[1].Status != 200 {
		t.Fatalf("want a 500 and then a retry answered; requests:\n%s", fakeAPI.Summary())
	}
	var during []string
	for _, s := range samples {
		if s.Updated.After(reqs[0].Time) && s.Updated.Before(reqs[1].Time) {
			during = append(during, string(s.State)+"/"+s.Kind+" by "+s.Evidence.Rule)
			if s.State != api.Working || s.Kind != "" || s.Evidence.Rule != "gemini.working" {
				t.Errorf("at %s, while the CLI waited to retry a 500: %s/%s by %s; want working by gemini.working",
					s.Updated.Format("15:04:05.000"), s.State, s.Kind, s.Evidence.Rule)
			}
		}
	}
	t.Logf("retry after %v; %d classifications while waiting", reqs[1].Time.Sub(reqs[0].Time), len(during))
	if len(during) == 0 {
		t.Fatalf("the supervisor classified nothing between the 500 and its retry %v later", reqs[1].Time.Sub(reqs[0].Time))
	}
	gs.WaitFor("answer", 0, func(sc string) bool {
		return strings.Contains(sc, "Recovered after a retry.") && geminitest.IdleAfter("flaky")(sc)
	})
	if s := m.waitState(api.Idle, ""); s.Evidence.Rule != "gemini.idle" {
		t.Fatalf("after the retry's answer, decided by %q, want gemini.idle", s.Evidence.Rule)
	}

	// A bad key three times: error, error, error_loop. The held-back answer
	// keeps each turn working long enough to be seen, so each error is a
	// new occurrence.
	bad := geminitest.ErrorStatus(400)
	bad.Delay = 2 * time.Second
	for i, p := range []string{"bad-key once", "bad-key again", "bad-key thrice"} {
		fakeAPI.FailNext(1, bad)
		gs.Send(p)
		m.waitState(api.Working, "")
		if i < 2 {
			if s := m.waitState(api.Error, "auth"); s.Evidence.Rule != "gemini.auth" || s.ErrorCount != i+1 {
				t.Fatalf("bad key %d: rule %q, error count %d", i+1, s.Evidence.Rule, s.ErrorCount)
			}
		}
	}
	s := m.waitState(api.ErrorLoop, "")
	if s.Evidence.Rule != "monitor.error_loop" || s.ErrorCount != 3 {
		t.Fatalf("error loop = %+v", s)
	}
	ev := m.waitWake(api.ReasonErrorLoopDetected)
	if ev.State != "error_loop" || ev.Agent != "gemini" || ev.Pane != gs.Pane {
		t.Fatalf("error loop wake = %+v", ev)
	}
}

// TestRealGeminiUnreachable: with nothing listening at the base URL the
// turn ends with `fetch failed sending request`: error/api_error. The CLI
// retries such errors for well over a minute behind its busy line (the
// capture api_error_unreachable_retrying.txt); general.retryFetchErrors
// off brings the final error at once.
func TestRealGeminiUnreachable(t *testing.T) {
	t.Parallel()
	settings := geminitest.DefaultSettings()
	general := settings["general"].(map[string]any)
	general["retryFetchErrors"] = false
	gs := geminitest.Start(t, geminitest.Options{URL: geminitest.UnreachableURL(t), Settings: settings})
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 40*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	m.waitState(api.Idle, "")
	gs.Send("anyone there")
	s := m.waitState(api.Error, "api_error")
	if s.Evidence.Rule != "gemini.api_error" || !strings.Contains(strings.Join(s.Evidence.Lines, "\n"), "fetch failed") {
		t.Fatalf("unreachable = %+v", s)
	}
	ev := m.waitWake(api.ReasonAPIError)
	if ev.State != "error" || ev.Kind != "api_error" || ev.Pane != gs.Pane {
		t.Fatalf("api_error wake = %+v", ev)
	}
}

// answerGemini answers the pane's prompt with option 1 once its screen has
// settled, and checks the option chosen.
func answerGemini(t *testing.T, m *liveMonitors, gs *geminitest.Session, want string) {
	t.Helper()
	gs.WaitStable(300*time.Millisecond, 0)
	// Named as a supervisor names it: the prompt it read.
	ps := m.wait("a prompt on screen", func(s api.Session) bool { return s.State == api.AwaitingInput && s.Prompt != "" })
	res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: gs.Pane}, Prompt: ps.Prompt, Answer: "1", Origin: "test"})
	if err != nil {
		t.Fatalf("answer 1: %v", err)
	}
	if res.Option != want || !res.Delivered {
		t.Fatalf("answer 1 = %+v, want option %q delivered", res, want)
	}
}

// record polls the pane's classification until done holds for it (40s
// at most) and returns one sample per capture (Session.Updated).
func (m *liveMonitors) record(t testing.TB, gs *geminitest.Session, done func(api.Session) bool) []api.Session {
	t.Helper()
	var seen []api.Session
	testkit.WaitFor(t, 40*time.Second, "the state that ends the recording", func() bool {
		s, ok := paneSession(m.sup, gs.Pane)
		if !ok {
			return false
		}
		if n := len(seen); n == 0 || !seen[n-1].Updated.Equal(s.Updated) {
			seen = append(seen, s)
		}
		return done(s)
	}, func() string {
		last := "none"
		if n := len(seen); n > 0 {
			last = fmt.Sprintf("%+v", seen[n-1])
		}
		return fmt.Sprintf("last %s; screen:\n%s", last, gs.Capture())
	})
	return seen
}

// geminiPromptWith returns the first main request's prompt that contains s.
func geminiPromptWith(f *geminitest.FakeAPI, s string) string {
	for _, p := range f.MainPrompts() {
		if strings.Contains(p, s) {
			return p
		}
	}
	return ""
}

// geminiMainWith returns the main requests whose body mentions marker.
func geminiMainWith(f *geminitest.FakeAPI, marker string) []geminitest.Request {
	var out []geminitest.Request
	for _, r := range f.Requests() {
		if r.Kind == geminitest.KindMain && strings.Contains(string(r.Body), marker) {
			out = append(out, r)
		}
	}
	return out
}

// TestRealGeminiUsageLimit: a spent quota whose answer says to retry in an
// hour makes the real Gemini CLI show its usage-limit dialog with when
// access resets: awaiting_input/other with its question, options and that
// time, which system3 answers Stop with the CLI's keys; the turn then ends
// on the quota's error with the CLI's "Suggested retry after 3600s": a
// usage limit (rate_limited) resetting an hour on, with its wake. A spent
// daily quota's dialog names no reset, and its error after Stop is the
// rate limit's error (error/rate_limited), not a usage limit.
func TestRealGeminiUsageLimit(t *testing.T) {
	t.Parallel()
	fakeAPI := geminitest.NewFakeAPI(t)
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI})
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 60*time.Second, func(c *Config) { c.Cmdlines = ProcessCmdlines })
	m.waitState(api.Idle, "")
	stop := func(withReset bool) {
		t.Helper()
		ps := m.wait("the usage-limit dialog", func(s api.Session) bool {
			return s.State == api.AwaitingInput && s.Prompt != "" && s.Evidence.Rule == "gemini.usage_limit_dialog"
		})
		if ps.Kind != "other" || !strings.HasPrefix(ps.Question, "Usage limit reached for ") || !slices.Equal(ps.Options, []string{"Keep trying", "Stop"}) ||
			strings.Contains(gs.Capture(), "Access resets at ") != withReset {
			t.Fatalf("usage-limit dialog = %+v\n%s", ps, gs.Capture())
		}
		res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: gs.Pane}, Prompt: ps.Prompt, Answer: "Stop", Origin: "test"})
		if err != nil || res.Option != "Stop" {
			t.Fatalf("answer Stop: %+v %v", res, err)
		}
	}

	fakeAPI.FailNext(1000, geminitest.QuotaRetry(time.Hour))
	sent := time.Now()
	gs.Send("usage-limit please")
	if ev := m.waitWake(api.ReasonAwaitingInput); ev.Kind != "other" || !strings.HasPrefix(ev.Question, "Usage limit reached for ") {
		t.Fatalf("dialog wake = %+v", ev)
	}
	stop(true)
	s := m.waitState(api.RateLimited, "")
	if d := s.ResetsAt.Sub(sent); s.Evidence.Rule != "gemini.usage_limit" || d < 59*time.Minute || d > 62*time.Minute {
		t.Fatalf("after Stop: %s by %s, resets %s after the prompt", s.State, s.Evidence.Rule, d)
	}
	if ev := m.waitWake(api.ReasonUsageLimit); !ev.ResetsAt.Equal(s.ResetsAt) {
		t.Fatalf("usage_limit wake = %+v", ev)
	}

	fakeAPI.FailNext(1000, geminitest.DailyQuota())
	gs.Send("daily-quota please")
	stop(false)
	if s := m.waitState(api.Error, "rate_limited"); s.Evidence.Rule != "gemini.rate_limited" || !s.ResetsAt.IsZero() {
		t.Fatalf("after Stop on the daily quota: %+v", s)
	}
}

// TestRealGeminiResumeAfterLimit: once the usage-limit dialog of the real
// Gemini CLI is answered Stop, the turn ends on the quota's error naming
// its retry and the CLI waits at its prompt. The CLI shows that dialog
// only for a retry more than five minutes away (a shorter one it waits
// out itself), so the monitors' clock is moved past the reset rather than
// the test waiting for it. Nothing is typed before; once the clock has
// passed the reset, with resume_after_limit on, the monitors type
// "continue" at the prompt, once: the fake API sees it, the CLI answers
// it, the audit log has the one continue under the resume origin, and the
// limit's wake says system3 continued it.
func TestRealGeminiResumeAfterLimit(t *testing.T) {
	t.Parallel()
	fakeAPI := geminitest.NewFakeAPI(t,
		geminitest.Rule{Contains: "continue", Steps: []geminitest.Step{{Text: "Continued fine."}}},
		geminitest.Rule{Contains: "hello there", Steps: []geminitest.Step{{Text: "Hello."}}})
	gs := geminitest.Start(t, geminitest.Options{API: fakeAPI})
	dir := t.TempDir()
	var ahead atomic.Int64 // how far the monitors' clock is ahead
	const delay = 3 * time.Second
	m := watchLive(t, gs.Socket(), gs.Pane, gs.Capture, 60*time.Second, func(c *Config) {
		c.Cmdlines = ProcessCmdlines
		c.ResumeAfterLimit, c.ResumeDelay, c.Audit, c.Zone = true, delay, audit.Open(dir), PaneZone
		c.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	m.waitState(api.Idle, "")
	fakeAPI.FailNext(1000, geminitest.QuotaRetry(10*time.Minute))
	gs.Send("hello there")
	ps := m.wait("the usage-limit dialog", func(s api.Session) bool {
		return s.State == api.AwaitingInput && s.Prompt != "" && s.Evidence.Rule == "gemini.usage_limit_dialog"
	})
	if res, err := m.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: gs.Pane}, Prompt: ps.Prompt, Answer: "Stop", Origin: "test"}); err != nil || res.Option != "Stop" {
		t.Fatalf("answer Stop: %+v %v", res, err)
	}
	s := m.waitState(api.RateLimited, "")
	fakeAPI.FailNext(0, geminitest.APIError{})
	limited := len(fakeAPI.Requests())
	if in := time.Until(s.ResetsAt); s.Evidence.Rule != "gemini.usage_limit" || in < 9*time.Minute || in > 11*time.Minute {
		t.Fatalf("after Stop: %+v", s)
	}
	if ev := m.waitWake(api.ReasonUsageLimit); !ev.ResetsAt.Equal(s.ResetsAt) || !strings.Contains(ev.SuggestedAction, `system3 types "continue" at its prompt`) {
		t.Fatalf("usage_limit wake = %+v", ev)
	}
	continues := func() []geminitest.Request {
		var out []geminitest.Request
		for _, q := range fakeAPI.Requests()[limited:] {
			if q.Kind == geminitest.KindMain && strings.Contains(q.Prompt, "continue") {
				out = append(out, q)
			}
		}
		return out
	}
	// Before the reset, longer than the delay: nothing is typed.
	time.Sleep(2 * delay)
	if c := continues(); len(c) != 0 {
		t.Fatalf("a continue was sent before the reset:\n%s", fakeAPI.Summary())
	}

	passed := time.Now()
	ahead.Store(int64(time.Until(s.ResetsAt) + time.Second))
	var cont geminitest.Request
	gs.WaitFor("the continue's request", delay+time.Minute, func(string) bool {
		c := continues()
		if len(c) > 0 {
			cont = c[0]
		}
		return len(c) > 0
	})
	if cont.Time.Before(passed) {
		t.Fatalf("the continue was sent at %s, before the clock passed the reset at %s", cont.Time.Format(time.TimeOnly), passed.Format(time.TimeOnly))
	}
	gs.WaitForText("Continued fine.", 60*time.Second)
	// Idle, the limit's error of the turn before still on screen.
	m.waitState(api.Idle, "")
	if *saveChatAfterLimit {
		screen := gs.WaitStable(time.Second, 10*time.Second)
		if err := os.WriteFile(filepath.Join("testdata", "captures", "gemini", "idle_after_limit.txt"), []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	es, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	es = slices.DeleteFunc(es, func(e api.AuditEntry) bool { return e.Origin != api.ResumeOrigin })
	if len(es) != 1 || es[0].Text != "continue" || !es[0].Sent || es[0].Pane != gs.Pane {
		t.Fatalf("audited continues = %+v", es)
	}
	w, err := m.store.List(api.WakeFilter{Reasons: []api.Reason{api.ReasonUsageLimit}, IncludeAcked: true, IncludeResolved: true})
	if err != nil || len(w) != 1 || w[0].Resolution != `continued by system3 after the reset (resume_after_limit): typed "continue"` {
		t.Fatalf("usage_limit wakes = %+v, %v", w, err)
	}
	mains := 0
	for _, q := range fakeAPI.Requests()[limited:] {
		if q.Kind == geminitest.KindMain {
			mains++
		}
	}
	if mains != 1 {
		t.Fatalf("%d requests after the limit, want the continue alone:\n%s", mains, fakeAPI.Summary())
	}
	t.Logf("clock past the reset at %s, continue typed %s (by the monitors' clock), its request %s", passed.Format(time.TimeOnly), es[0].Time.Format(time.TimeOnly), cont.Time.Format(time.TimeOnly))
}
