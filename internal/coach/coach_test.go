package coach

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/wake"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// injector records what would be typed into panes.
type injector struct {
	mu   sync.Mutex
	sent []api.InjectRequest
}

func (f *injector) Inject(_ context.Context, req api.InjectRequest) (api.ActionResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, req)
	return api.ActionResult{Delivered: true, Verified: true, Pane: req.Pane}, nil
}

func (f *injector) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.sent {
		out = append(out, r.Text)
	}
	return out
}

type harness struct {
	t     testing.TB
	c     *Coach
	clock *clock
	inj   *injector
	wakes *wake.Store
	db    string
}

func patterns(t testing.TB, extra string) []rules.Pattern {
	t.Helper()
	srcs := []rules.Source{agents.Builtin()}
	if extra != "" {
		srcs = append(srcs, rules.Source{Name: "user.yaml", Data: []byte(extra)})
	}
	e, err := rules.New(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	return e.Patterns()
}

func newHarness(t testing.TB, extra string) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), learn.FileName)
	db, err := learn.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := &clock{t: time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)}
	ws, _, err := wake.Open(wake.Config{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	inj := &injector{}
	c, err := New(context.Background(), Config{DB: db, Patterns: patterns(t, extra), Directives: fixtureDirectiveFiles(), Inject: inj, Wakes: ws, Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, c: c, clock: clk, inj: inj, wakes: ws, db: path}
}

// call feeds one tool call, a few seconds after the last, in pane %1.
func (h *harness) call(tool, command, file string, failed bool) []api.CoachAlert {
	h.t.Helper()
	tc := api.ToolCall{Time: h.clock.advance(5 * time.Second), Pane: "%1", Target: "billing:0.0", Session: "billing", Repo: "/src/billing",
		Agent: "claude", Tool: tool, Command: command, File: file, Failed: failed, Source: "transcript"}
	if failed {
		tc.Error = "Exit code 1\n" + command + " failed"
	}
	alerts, err := h.c.Handle(context.Background(), tc)
	if err != nil {
		h.t.Fatal(err)
	}
	return alerts
}

func (h *harness) alert(id int64) api.CoachAlert {
	h.t.Helper()
	a, err := h.c.Alert(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

func (h *harness) stat(pattern, intervention string) api.CoachStats {
	h.t.Helper()
	s, err := h.c.stat(context.Background(), pattern, intervention, "")
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// editLintRound is one round of a formatter loop: the agent edits a file,
// then runs the linter, which still complains.
func (h *harness) editLintRound(file string) []api.CoachAlert {
	alerts := h.call("Edit", "", file, false)
	h.call("Bash", "npx prettier --check src", "", true)
	return alerts
}

// TestFormatterLoopPreventiveReminder is the simulated stream: a
// formatter loop gets its reminder at threshold-1 edits, before the Nth.
func TestFormatterLoopPreventiveReminder(t *testing.T) {
	h := newHarness(t, "")
	// Edits that are ordinary work do not count: no formatter ran between them.
	for range 3 {
		if a := h.call("Edit", "", "src/app.ts", false); len(a) != 0 {
			t.Fatalf("plain edits raised %+v", a)
		}
	}
	h.call("Bash", "npx prettier --check src", "", true)
	if a := h.editLintRound("src/app.ts"); len(a) != 0 { // 1st counted edit
		t.Fatalf("one loop round raised %+v", a)
	}
	// Another file's edits are another subject.
	if a := h.editLintRound("src/other.ts"); len(a) != 0 {
		t.Fatalf("a different file raised %+v", a)
	}
	alerts := h.editLintRound("src/app.ts") // 2nd counted edit: threshold 3, preventive → now
	if len(alerts) != 1 {
		t.Fatalf("at threshold-1: %d alerts, want 1", len(alerts))
	}
	a := alerts[0]
	if a.Pattern != "formatter_loop" || a.Count != 2 || a.Threshold != 3 || !a.Preventive || a.Status != api.CoachStatusActive || a.Subject != "src/app.ts" ||
		a.Intervention != "run-the-formatter" || a.Directive != "user/style-and-formatting/never-fix-formatting-by-hand" || a.Language != "typescript" {
		t.Fatalf("alert = %+v", a)
	}
	for _, want := range []string{
		"⚠️ Loop detected: Formatter loop (src/app.ts)",
		"this reminder comes before the 3rd",
		`Your directive: "Never fix formatting by hand: run the formatter (gofmt -w, prettier --write) and keep its output."`,
		"Suggestion: Stop fixing src/app.ts by hand.",
		"Expected outcome: One formatter run makes the check pass",
	} {
		if !strings.Contains(a.Reminder, want) {
			t.Errorf("reminder lacks %q:\n%s", want, a.Reminder)
		}
	}
	ws := h.wakes.Unacked()
	if len(ws) != 1 || ws[0].Reminder == nil || ws[0].Reminder.Alert != a.ID || ws[0].Reminder.Text != a.Reminder || !ws[0].Reminder.Preventive ||
		ws[0].Reason != api.ReasonErrorLoopDetected || ws[0].Evidence.Rule != "pattern.formatter_loop" || ws[0].Pane != "%1" {
		t.Fatalf("wakes = %+v", ws)
	}
	if len(h.inj.texts()) != 0 {
		t.Fatal("formatter_loop is not auto_send, yet something was typed")
	}
	// The third round counts on the open alert; no second alert.
	if more := h.editLintRound("src/app.ts"); len(more) != 0 {
		t.Fatalf("the open alert was raised again: %+v", more)
	}
	if got := h.alert(a.ID); got.Count != 3 {
		t.Fatalf("count = %d, want 3", got.Count)
	}
}

// TestAutoSendBeforeTheNth: with auto_send the reminder is typed into the
// pane after the (N-1)th occurrence, before the agent makes the Nth.
func TestAutoSendBeforeTheNth(t *testing.T) {
	h := newHarness(t, `version: 1
patterns:
  - id: formatter_loop
    name: Formatter loop
    auto_send: true
    preventive: true
    threshold: 3
    trigger:
      match: {tool: '^Edit$'}
      after: {tool: '^Bash$', command: prettier}
      same: file
    interventions:
      - {id: write, suggestion: 'Run prettier --write {{.Subject}}.', expected: The check passes.}
`)
	h.call("Bash", "npx prettier --check src", "", true)
	h.editLintRound("src/app.ts")
	if len(h.inj.texts()) != 0 {
		t.Fatal("sent after one occurrence")
	}
	alerts := h.call("Edit", "", "src/app.ts", false)
	sent := h.inj.texts()
	if len(alerts) != 1 || len(sent) != 1 || !strings.HasPrefix(sent[0], "⚠️ Loop detected: Formatter loop") || !strings.Contains(sent[0], "Run prettier --write src/app.ts.") {
		t.Fatalf("alerts %+v, sent %q", alerts, sent)
	}
	a := h.alert(alerts[0].ID)
	if a.Status != api.CoachStatusSent || a.SentBy != "auto" || h.stat("formatter_loop", "write").Shown != 1 {
		t.Fatalf("alert = %+v", a)
	}
	if h.inj.sent[0].Pane != "%1" || h.inj.sent[0].Origin != "coach:auto" {
		t.Fatalf("inject = %+v", h.inj.sent[0])
	}
}

// TestEffectivenessMeasured scripts two sessions: one recovers after the
// reminder (the test passes), one does not (the test fails again); then an
// intervention that recovered on its own window. Counts and the choice of
// the next intervention follow.
func TestEffectivenessMeasured(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	loop := func() api.CoachAlert {
		t.Helper()
		var got []api.CoachAlert
		for range 2 {
			got = h.call("Bash", "go test ./billing -run TestInvoice", "", true)
		}
		if len(got) != 1 {
			t.Fatalf("no alert at threshold-1: %+v", got)
		}
		return got[0]
	}

	// Session 1 recovers: reminder sent from the dashboard, then the test passes.
	a := loop()
	if a.Intervention != "isolate-root-cause" {
		t.Fatalf("first choice = %s", a.Intervention)
	}
	if _, err := h.c.Send(ctx, a.ID, "tui"); err != nil {
		t.Fatal(err)
	}
	h.call("Edit", "", "billing/invoice.go", false)
	h.call("Bash", "go test ./billing -run TestInvoice", "", false)
	if got := h.alert(a.ID); got.Status != api.CoachStatusWorked || !strings.Contains(got.Outcome, "succeeded") {
		t.Fatalf("recovered session: %+v", got)
	}
	if w, _ := h.wakes.List(api.WakeFilter{IncludeResolved: true}); len(w) != 1 || !w[0].Resolved { // raised, then resolved (still unacked)
		t.Fatalf("wakes = %+v", w)
	}
	if s := h.stat("test_error_loop", "isolate-root-cause"); s.Shown != 1 || s.Worked != 1 || s.Effectiveness != 2.0/3 {
		t.Fatalf("after a success: %+v", s)
	}

	// Session 2 does not: the same failing test right after the reminder.
	b := loop()
	if b.Intervention != "isolate-root-cause" {
		t.Fatalf("second choice = %s, want the one that worked", b.Intervention)
	}
	if _, err := h.c.Send(ctx, b.ID, "mcp:orchestrator"); err != nil {
		t.Fatal(err)
	}
	h.call("Bash", "go test ./billing -run TestInvoice", "", true)
	if got := h.alert(b.ID); got.Status != api.CoachStatusFailed || !strings.Contains(got.Outcome, "the loop went on") {
		t.Fatalf("session that did not recover: %+v", got)
	}
	if s := h.stat("test_error_loop", "isolate-root-cause"); s.Shown != 2 || s.Worked != 1 || s.Effectiveness != 0.5 {
		t.Fatalf("after a failure: %+v", s)
	}

	// A second failure makes the untried intervention the better bet.
	c := loop()
	h.c.Send(ctx, c.ID, "tui")
	h.call("Bash", "go test ./billing -run TestInvoice", "", true)
	if s := h.stat("test_error_loop", "isolate-root-cause"); s.Shown != 3 || s.Worked != 1 {
		t.Fatalf("after two failures: %+v", s)
	}
	d := loop()
	if d.Intervention != "narrow-the-test" {
		t.Fatalf("after 1 of 3 worked (0.40) the untried one (0.50) should be chosen, got %s", d.Intervention)
	}
	// It is sent and nothing recurs within the window: it worked.
	h.c.Send(ctx, d.ID, "tui")
	h.clock.advance(16 * time.Minute)
	if err := h.c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := h.alert(d.ID); got.Status != api.CoachStatusWorked || !strings.Contains(got.Outcome, "no recurrence within 15m") {
		t.Fatalf("quiet after the reminder: %+v", got)
	}
	st, err := h.c.Standings(ctx, mustPattern(t, h.c, "test_error_loop"), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[1].Intervention != "narrow-the-test" || !st[1].Chosen || st[1].Effectiveness != 2.0/3 || st[0].Chosen {
		t.Fatalf("standings = %+v", st)
	}
	// Per context too: every alert was in repo:/src/billing.
	if s, _ := h.c.stat(ctx, "test_error_loop", "isolate-root-cause", "repo:/src/billing"); s.Shown != 3 || s.Worked != 1 {
		t.Fatalf("context stats = %+v", s)
	}
}

// TestUnsentAlertResolves: an alert nobody acted on is resolved when the
// loop goes quiet, and counts for no intervention.
func TestUnsentAlertResolves(t *testing.T) {
	h := newHarness(t, "")
	var a []api.CoachAlert
	for range 2 {
		a = h.call("Bash", "pytest tests/test_api.py", "", true)
	}
	if len(a) != 1 || a[0].Language != "python" {
		t.Fatalf("alerts = %+v", a)
	}
	h.clock.advance(20 * time.Minute)
	if err := h.c.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.alert(a[0].ID); got.Status != api.CoachStatusResolved || got.Outcome != "no occurrence for 15m0s" {
		t.Fatalf("alert = %+v", got)
	}
	if s := h.stat("test_error_loop", "isolate-root-cause"); s.Shown != 0 {
		t.Fatalf("an unsent reminder was counted: %+v", s)
	}
	if active, _ := h.c.ActiveAlerts(context.Background()); len(active) != 0 {
		t.Fatalf("active = %+v", active)
	}
}

func TestPermissionDenialsAndCIPushLoop(t *testing.T) {
	h := newHarness(t, "")
	deny := func() []api.CoachAlert {
		tc := api.ToolCall{Time: h.clock.advance(time.Second), Pane: "%2", Agent: "claude", Tool: "Bash", Command: "rm -rf build", Failed: true,
			Error: "The user doesn't want to proceed with this tool use. The tool use was rejected."}
		a, err := h.c.Handle(context.Background(), tc)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	deny()
	if a := deny(); len(a) != 0 {
		t.Fatal("permission_denials is not preventive, yet fired at 2")
	}
	if a := deny(); len(a) != 1 || a[0].Pattern != "permission_denials" || a[0].Subject != "Bash" || a[0].Preventive {
		t.Fatalf("third denial: %+v", a)
	}

	// Push, CI fails; push, CI fails: the reminder comes before a third push.
	h.call("Bash", "git push origin feature", "", false)
	h.call("Bash", "gh run watch", "", true)
	h.call("Bash", "gh run watch", "", true) // no push in between: not another round
	h.call("Bash", "git push", "", false)
	a := h.call("Bash", "gh run watch --exit-status", "", true)
	if len(a) != 1 || a[0].Pattern != "ci_push_loop" || a[0].Count != 2 {
		t.Fatalf("CI loop: %+v", a)
	}
}

func TestRequestAndReport(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	// Nothing detected and no pattern named: a clear error.
	if _, err := h.c.RequestIntervention(ctx, api.InterventionRequest{Pane: "%1", Send: true, By: "mcp:x"}); err == nil || !strings.Contains(err.Error(), "no loop is detected") {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.c.RequestIntervention(ctx, api.InterventionRequest{Pane: "%1", Pattern: "nope"}); err == nil {
		t.Fatal("unknown pattern accepted")
	}
	// A pattern named: composed on demand, sent.
	r, err := h.c.RequestIntervention(ctx, api.InterventionRequest{Pane: "%1", Target: "billing:0.0", Pattern: "ci_push_loop", Send: true, By: "mcp:orch"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Sent || r.Alert.Status != api.CoachStatusSent || r.Alert.SentBy != "mcp:orch" || !strings.Contains(r.Alert.Reminder, "Push-and-fail CI loop") || len(r.Stats) != 1 {
		t.Fatalf("result = %+v", r)
	}
	if got := h.inj.texts(); len(got) != 1 || got[0] != r.Alert.Reminder {
		t.Fatalf("typed %q", got)
	}
	// Asking again returns the open alert without typing it twice.
	r2, err := h.c.RequestIntervention(ctx, api.InterventionRequest{Pane: "%1", Send: true, By: "mcp:orch"})
	if err != nil || r2.Alert.ID != r.Alert.ID || len(h.inj.texts()) != 1 {
		t.Fatalf("again: %+v, %v, typed %d", r2, err, len(h.inj.texts()))
	}

	st, err := h.c.ReportIntervention(ctx, api.CoachReport{Pattern: "ci_push_loop", Intervention: "reproduce-locally", Worked: true, Notes: "CI green", Alert: r.Alert.ID, By: "mcp:orch"})
	if err != nil {
		t.Fatal(err)
	}
	// The report settles the sent reminder: one outcome, counted once.
	if st.Shown != 1 || st.Worked != 1 || st.Reported != 0 || st.Effectiveness != 2.0/3 || !st.Chosen {
		t.Fatalf("standing = %+v", st)
	}
	if got := h.alert(r.Alert.ID); got.Status != api.CoachStatusWorked || got.Outcome != "reported by mcp:orch: worked (CI green)" {
		t.Fatalf("alert = %+v", got)
	}
	// A report with no alert is evidence of its own.
	st, err = h.c.ReportIntervention(ctx, api.CoachReport{Pattern: "ci_push_loop", Intervention: "reproduce-locally", Worked: false, By: "cli"})
	if err != nil || st.Reported != 1 || st.ReportedWorked != 0 || st.Effectiveness != 2.0/4 {
		t.Fatalf("standing = %+v, %v", st, err)
	}
	for _, bad := range []api.CoachReport{
		{Pattern: "nope", Intervention: "x"},
		{Pattern: "ci_push_loop", Intervention: "nope"},
		{Pattern: "ci_push_loop", Intervention: "reproduce-locally", Notes: strings.Repeat("x", api.MaxNotes+1)},
		{Pattern: "formatter_loop", Intervention: "run-the-formatter", Alert: r.Alert.ID},
	} {
		if _, err := h.c.ReportIntervention(ctx, bad); err == nil {
			t.Errorf("report %+v accepted", bad)
		}
	}
}

// TestTwoProcessesShareAlerts: a reminder sent by another process (the MCP
// server of `system3 mcp`) is measured by the one that detects.
func TestTwoProcessesShareAlerts(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	db2, err := learn.OpenDB(h.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	inj2 := &injector{}
	other, err := New(ctx, Config{DB: db2, Patterns: h.c.Patterns(), Inject: inj2, Clock: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var a []api.CoachAlert
	for range 2 {
		a = h.call("Bash", "go test ./...", "", true)
	}
	active, err := other.ActiveAlerts(ctx)
	if err != nil || len(active) != 1 || active[0].ID != a[0].ID {
		t.Fatalf("other process sees %+v, %v", active, err)
	}
	if _, err := other.Send(ctx, a[0].ID, "mcp:orch"); err != nil {
		t.Fatal(err)
	}
	h.call("Bash", "go test ./...", "", false)
	if got := h.alert(a[0].ID); got.Status != api.CoachStatusWorked {
		t.Fatalf("alert = %+v", got)
	}
	if len(inj2.texts()) != 1 || len(h.inj.texts()) != 0 {
		t.Fatal("the reminder must be typed once, by the process asked")
	}
}

func TestRunDrainsObservations(t *testing.T) {
	h := newHarness(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.c.Run(ctx) }()
	for range 2 {
		h.c.Observe(api.ToolCall{Time: h.clock.advance(time.Second), Pane: "%1", Tool: "Bash", Command: "go test ./x", Failed: true})
	}
	testkit.WaitForValue(t, 10*time.Second, "Run to raise the alert", func() ([]api.CoachAlert, bool) {
		active, err := h.c.ActiveAlerts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return active, len(active) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h.c.Dropped() != 0 {
		t.Fatalf("dropped %d", h.c.Dropped())
	}
}

func mustPattern(t *testing.T, c *Coach, id string) rules.Pattern {
	t.Helper()
	p, ok := c.Pattern(id)
	if !ok {
		t.Fatalf("no pattern %s", id)
	}
	return p
}

// TestSameCallFromTwoSources: a call reported by the transcript and by a
// hook (same tool_use id) counts once.
func TestSameCallFromTwoSources(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	tc := api.ToolCall{ID: "toolu_1", Time: h.clock.advance(time.Second), Pane: "%1", Tool: "Bash", Command: "go test ./x", Failed: true, Source: "transcript"}
	if _, err := h.c.Handle(ctx, tc); err != nil {
		t.Fatal(err)
	}
	tc.Source = "hook"
	if a, err := h.c.Handle(ctx, tc); err != nil || len(a) != 0 {
		t.Fatalf("the same call twice raised %+v, %v", a, err)
	}
	tc.ID, tc.Time = "toolu_2", h.clock.advance(time.Second)
	if a, err := h.c.Handle(ctx, tc); err != nil || len(a) != 1 || a[0].Count != 2 {
		t.Fatalf("the second call: %+v, %v", a, err)
	}
	// A day later the pane's history is forgotten.
	h.clock.advance(25 * time.Hour)
	if err := h.c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	h.c.mu.Lock()
	n := len(h.c.panes)
	h.c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d pane histories kept", n)
	}
}

// TestSameCallWithoutIDs: without tool_use ids, a hook's report of a call
// the transcript already gave (same tool, command and result, within a few
// seconds) counts once, while a real repeat still counts.
func TestSameCallWithoutIDs(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	long := "go test ./billing/... -run 'TestInvoice|TestRefund' -count=1 -v"
	at := h.clock.advance(time.Second)
	for i, tc := range []api.ToolCall{
		{Time: at, Source: "transcript", Command: long},
		{Time: at.Add(800 * time.Millisecond), Source: "hook", Command: long[:30] + "…"}, // the same call
		{Time: at.Add(2 * time.Second), Source: "transcript", Command: long},             // a repeat
	} {
		tc.Pane, tc.Tool, tc.Failed = "%1", "Bash", true
		a, err := h.c.Handle(ctx, tc)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 2; (len(a) == 1) != want {
			t.Fatalf("call %d raised %+v", i, a)
		}
		if i == 2 && a[0].Count != 2 {
			t.Fatalf("count = %d, want 2", a[0].Count)
		}
	}
}

// TestSentReminderNotDoubled: after a formatter reminder is sent, an edit
// with no formatter run before it is no recurrence, and raises no second
// alert for the same file; an edit after the linter ran again is one.
func TestSentReminderNotDoubled(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	h.call("Bash", "npx prettier --check src", "", true)
	h.editLintRound("src/app.ts")
	a := h.call("Edit", "", "src/app.ts", false)
	if len(a) != 1 {
		t.Fatalf("alerts = %+v", a)
	}
	if _, err := h.c.Send(ctx, a[0].ID, "tui"); err != nil {
		t.Fatal(err)
	}
	if more := h.call("Edit", "", "src/app.ts", false); len(more) != 0 {
		t.Fatalf("an edit right after the reminder raised %+v", more)
	}
	if got := h.alert(a[0].ID); got.Status != api.CoachStatusSent {
		t.Fatalf("an edit without a lint run settled it: %+v", got)
	}
	h.call("Bash", "npx prettier --check src", "", true)
	h.call("Edit", "", "src/app.ts", false)
	if got := h.alert(a[0].ID); got.Status != api.CoachStatusFailed {
		t.Fatalf("edit, lint, edit after the reminder: %+v", got)
	}
	if open, _ := h.c.ActiveAlerts(ctx); len(open) != 0 {
		t.Fatalf("open alerts = %+v", open)
	}
}

func TestStoredTimesSortAsText(t *testing.T) {
	whole := time.Date(2026, 11, 21, 8, 0, 5, 0, time.UTC)
	if a, b := fmtTime(whole), fmtTime(whole.Add(100*time.Millisecond)); a >= b {
		t.Fatalf("%q sorts after %q", a, b)
	}
	if got := parseTime(fmtTime(whole.Add(time.Nanosecond))); !got.Equal(whole.Add(time.Nanosecond)) {
		t.Fatalf("round trip = %s", got)
	}
}

func TestSameText(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"go test ./...", "go test ./...", true},
		{"cd web &&\n  npm test -- --watch=false", "cd web && · npm test -- --watch=false", true},
		{"go test ./billing/... -run TestInvoice -count=1", "go test ./billing/... -run T…", true},
		{"go test ./a", "go test ./b", false},
		{"go", "go test", false}, // too short to be a summary
	} {
		if got := sameText(tt.a, tt.b); got != tt.want {
			t.Errorf("sameText(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// TestHookCallsTakeThePanesContext: a hook's call names only its pane; the
// session, repo and agent come from the pane's earlier calls.
func TestHookCallsTakeThePanesContext(t *testing.T) {
	h := newHarness(t, "")
	ctx := context.Background()
	if _, err := h.c.Handle(ctx, api.ToolCall{Time: h.clock.advance(time.Second), Pane: "%1", Target: "billing:0.0", Session: "billing",
		Repo: "/src/billing", Agent: "claude", Tool: "Bash", Command: "go test ./x", Failed: true, Source: "transcript"}); err != nil {
		t.Fatal(err)
	}
	a, err := h.c.Handle(ctx, api.ToolCall{Time: h.clock.advance(time.Minute), Pane: "%1", Tool: "Bash", Command: "go test ./x", Failed: true, Source: "hook"})
	if err != nil || len(a) != 1 {
		t.Fatalf("alerts %+v, %v", a, err)
	}
	if a[0].Target != "billing:0.0" || a[0].Repo != "/src/billing" || a[0].Agent != "claude" || a[0].Context != "repo:/src/billing" {
		t.Fatalf("alert = %+v", a[0])
	}
}
