// Package coach detects behaviour patterns (loops) in the tool calls of
// supervised agents, reminds the agent of the user's own CLAUDE.md
// directive at the right moment (before the loop's last round when the
// pattern is preventive), and measures whether each reminder worked, so
// the most effective one is chosen next time. Patterns are data from the
// rules file; alerts and effectiveness live in the learn database.
package coach

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// Errors callers can tell apart: the vocabulary's.
var (
	ErrNotFound   = api.ErrCoachNotFound
	ErrBadRequest = api.ErrCoachBadRequest
	ErrNoSender   = api.ErrCoachNoSender
)

// Config configures a Coach.
type Config struct {
	// DB is the learn database (learn.OpenDB); New migrates the coach's
	// tables.
	DB *sql.DB
	// Patterns are the behaviour patterns in force (rules.Engine.Patterns);
	// SetPatterns replaces them.
	Patterns []rules.Pattern
	// Source, when set, is asked for the patterns instead (a process that
	// does not detect but serves the CLI or MCP, reading the rules file).
	Source func() []rules.Pattern
	// Directives are the CLAUDE.md files to quote (see DirectiveFiles);
	// they are read again whenever a reminder is composed.
	Directives []DirectiveFile
	// Inject sends reminders (auto_send patterns, Send). Nil: reminders
	// are only offered.
	Inject api.Injector
	// Wakes receives a wake per alert. Nil: alerts are only recorded (a
	// process that serves MCP or the CLI but does not detect).
	Wakes  api.WakeRaiser
	Clock  func() time.Time
	Logger *slog.Logger
	// Queue bounds the tool calls waiting for Run (default 1024); Observe
	// drops calls past it and counts them.
	Queue int
	// Tick is how often Run settles alerts whose window passed (default 5s).
	Tick time.Duration
}

// Coach detects patterns in tool calls and keeps their alerts. Its
// methods are safe for concurrent use; several processes may share one
// database.
type Coach struct {
	cfg      Config
	db       *sql.DB
	patterns atomic.Pointer[[]rules.Pattern]
	queue    chan api.ToolCall
	dropped  atomic.Uint64

	mu    sync.Mutex
	panes map[string]*paneHistory
	// seen are the ids of recent calls, oldest first in seenOrder, so a
	// call reported by both a transcript and a hook counts once.
	seen      map[string]struct{}
	seenOrder []string
}

// maxSeen bounds the call ids remembered for de-duplication.
const maxSeen = 4096

// paneHistory is the recent tool calls of one pane.
type paneHistory struct {
	calls    []api.ToolCall
	language string
	// recent are the last calls with whether another source's report of
	// them was seen (see duplicate).
	recent []recentCall
	// The session the pane's calls came from, as last told.
	target, session, repo, agent string
}

// where fills what a call leaves out about its session (a hook knows the
// pane, not the repo) from the pane's earlier calls, and remembers it.
func (h *paneHistory) where(tc *api.ToolCall) {
	fill := func(dst *string, known *string) {
		if *dst == "" {
			*dst = *known
		} else {
			*known = *dst
		}
	}
	fill(&tc.Target, &h.target)
	fill(&tc.Session, &h.session)
	fill(&tc.Repo, &h.repo)
	fill(&tc.Agent, &h.agent)
}

type recentCall struct {
	tc     api.ToolCall
	paired bool
}

// Pairing one call reported by two sources (a transcript and a hook)
// without a shared id: the same tool, command, file and result, this close
// in time. maxRecent bounds the calls kept for it.
const (
	pairWithin = 5 * time.Second
	maxRecent  = 64
)

// duplicate reports whether tc is another source's report of a call
// already seen, and remembers it otherwise. Each report pairs with at
// most one other, so a call genuinely repeated still counts.
func (h *paneHistory) duplicate(tc api.ToolCall) bool {
	for i := len(h.recent) - 1; i >= 0; i-- {
		r := &h.recent[i]
		if r.paired || r.tc.Source == tc.Source {
			continue
		}
		if r.tc.ID != "" && tc.ID != "" {
			continue // both have ids, and they differ (equal ids never get here)
		}
		dt := tc.Time.Sub(r.tc.Time)
		if dt < -pairWithin || dt > pairWithin || r.tc.Tool != tc.Tool || r.tc.Failed != tc.Failed ||
			!sameText(r.tc.Command, tc.Command) || !sameText(r.tc.File, tc.File) {
			continue
		}
		r.paired = true
		return true
	}
	h.recent = append(h.recent, recentCall{tc: tc})
	if len(h.recent) > maxRecent {
		h.recent = append([]recentCall(nil), h.recent[len(h.recent)-maxRecent:]...)
	}
	return false
}

// sameText: equal, or one a shortened form of the other (a hook's summary
// of a long command: its lines joined with " · ", cut with "…").
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	flat := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSuffix(s, "…"), " · ", " ")), " ")
	}
	a, b = flat(a), flat(b)
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 20 && strings.HasPrefix(b, a)
}

// Bounds on the history kept per pane (up to twice as much is held
// between trims).
const (
	maxHistory    = 512
	maxHistoryAge = rules.MaxPatternWindow
)

// New opens the coach on a database, migrating its tables.
func New(ctx context.Context, cfg Config) (*Coach, error) {
	if cfg.DB == nil {
		return nil, errors.New("coach: Config needs DB")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 5 * time.Second
	}
	if err := Migrate(ctx, cfg.DB); err != nil {
		return nil, err
	}
	c := &Coach{cfg: cfg, db: cfg.DB, queue: make(chan api.ToolCall, cfg.Queue), panes: map[string]*paneHistory{}, seen: map[string]struct{}{}}
	c.SetPatterns(cfg.Patterns)
	return c, nil
}

func (c *Coach) now() time.Time { return c.cfg.Clock() }

// SetPatterns replaces the patterns in force (after the rules file changed).
func (c *Coach) SetPatterns(ps []rules.Pattern) {
	cp := append([]rules.Pattern(nil), ps...)
	c.patterns.Store(&cp)
}

// Patterns returns the patterns in force.
func (c *Coach) Patterns() []rules.Pattern {
	if c.cfg.Source != nil {
		return c.cfg.Source()
	}
	return *c.patterns.Load()
}

// Pattern returns one pattern by id.
func (c *Coach) Pattern(id string) (rules.Pattern, bool) {
	for _, p := range c.Patterns() {
		if p.ID == id {
			return p, true
		}
	}
	return rules.Pattern{}, false
}

// Observe queues a tool call for Run. It never blocks: past the queue's
// bound the call is dropped and counted (Dropped).
func (c *Coach) Observe(tc api.ToolCall) {
	select {
	case c.queue <- tc:
	default:
		if c.dropped.Add(1) == 1 {
			c.cfg.Logger.Warn("coach: tool calls dropped (queue full)")
		}
	}
}

// Dropped is how many observed calls were dropped because Run fell behind.
func (c *Coach) Dropped() uint64 { return c.dropped.Load() }

// Run handles observed calls and settles alerts whose window passed, until
// ctx ends.
func (c *Coach) Run(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case tc := <-c.queue:
			if _, err := c.Handle(ctx, tc); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("coach: handle tool call", "pane", tc.Pane, "tool", tc.Tool, "err", err)
			}
		case <-tick.C:
			if err := c.Settle(ctx); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("coach: settle alerts", "err", err)
			}
		}
	}
}

// Handle takes one tool call: it records it in the pane's history, ends
// runs it resets, settles reminders it proves wrong (the loop recurred) or
// right (the loop's reset came), and raises an alert for each pattern that
// now reaches its firing count. It returns the alerts raised.
func (c *Coach) Handle(ctx context.Context, tc api.ToolCall) ([]Alert, error) {
	if tc.Pane == "" {
		return nil, fmt.Errorf("%w: a tool call needs its pane", ErrBadRequest)
	}
	now := c.now()
	if tc.Time.IsZero() {
		tc.Time = now
	}
	c.mu.Lock()
	if tc.ID != "" {
		if _, dup := c.seen[tc.ID]; dup {
			c.mu.Unlock()
			return nil, nil
		}
		c.seen[tc.ID] = struct{}{}
		c.seenOrder = append(c.seenOrder, tc.ID)
		if len(c.seenOrder) > maxSeen {
			delete(c.seen, c.seenOrder[0])
			c.seenOrder = c.seenOrder[1:]
		}
	}
	h := c.panes[tc.Pane]
	if h == nil {
		h = &paneHistory{}
		c.panes[tc.Pane] = h
	}
	if h.duplicate(tc) {
		c.mu.Unlock()
		return nil, nil
	}
	h.where(&tc)
	if lang := languageOf(tc); lang != "" {
		h.language = lang
	}
	// Appending never changes the calls a reader already holds; trimming
	// (at twice the bound, so rarely) copies into a new array.
	h.calls = append(h.calls, tc)
	if len(h.calls) > 2*maxHistory || tc.Time.Sub(h.calls[0].Time) > 2*maxHistoryAge {
		cut := 0
		for cut < len(h.calls) && (len(h.calls)-cut > maxHistory || tc.Time.Sub(h.calls[cut].Time) > maxHistoryAge) {
			cut++
		}
		h.calls = append([]api.ToolCall(nil), h.calls[cut:]...)
	}
	calls := h.calls
	lang := h.language
	c.mu.Unlock()

	call := ruleCall(tc)
	var raised []Alert
	var errs []error
	for _, p := range c.Patterns() {
		if !p.When.Applies(tc.Repo, tc.Agent, lang) {
			continue
		}
		subject := subjectOf(p, tc)
		if p.Trigger.Reset.Matches(call) {
			if err := c.reset(ctx, p, tc, subject); err != nil {
				errs = append(errs, err)
			}
		}
		if !p.Trigger.Match.Matches(call) {
			continue
		}
		a, err := c.occurrence(ctx, p, tc, subject, lang, calls)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if a != nil {
			raised = append(raised, *a)
		}
	}
	return raised, errors.Join(errs...)
}

// ruleCall is what pattern conditions look at.
func ruleCall(tc api.ToolCall) rules.ToolCall {
	return rules.ToolCall{Tool: tc.Tool, Command: tc.Command, File: tc.File, Error: tc.Error, Failed: tc.Failed}
}

// subjectOf is what occurrences of p must share, for this call.
func subjectOf(p rules.Pattern, tc api.ToolCall) string {
	switch p.Trigger.Same {
	case "command":
		return strings.Join(strings.Fields(tc.Command), " ")
	case "file":
		return tc.File
	case "error":
		return errorSignature(tc.Error)
	case "tool":
		return tc.Tool
	}
	return ""
}

var numbers = regexp.MustCompile(`\d+`)

// errorSignature folds what changes between repeats of one error (numbers,
// spacing) and keeps its first line.
func errorSignature(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return numbers.ReplaceAllString(strings.Join(strings.Fields(s), " "), "N")
}

// count is how many occurrences of p about subject the history holds since
// since and within the window of the last call: calls matching the
// trigger with that subject, each preceded (when the pattern says so) by
// an `after` call since the previous one, and none before a reset.
func count(p rules.Pattern, subject string, calls []api.ToolCall, since time.Time) int {
	if len(calls) == 0 {
		return 0
	}
	last := calls[len(calls)-1].Time
	from := last.Add(-p.WindowDuration())
	if since.After(from) {
		from = since
	}
	n := 0
	sawAfter := false
	for _, tc := range calls {
		if tc.Time.Before(from) || (!since.IsZero() && !tc.Time.After(since)) {
			continue
		}
		call := ruleCall(tc)
		s := subjectOf(p, tc)
		if p.Trigger.Reset.Matches(call) && (s == subject || s == "") {
			n, sawAfter = 0, false
		}
		if p.Trigger.Match.Matches(call) && s == subject {
			if p.Trigger.After == nil || sawAfter {
				n++
			}
			sawAfter = false
			continue
		}
		if p.Trigger.After.Matches(call) {
			sawAfter = true
		}
	}
	return n
}

// occurrence handles a call that matches p's trigger: a recurrence after a
// sent reminder settles it as failed; an open alert counts it; else, at
// the firing count, a new alert is raised.
func (c *Coach) occurrence(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject, lang string, calls []api.ToolCall) (*Alert, error) {
	open, err := c.openAlerts(ctx, p.ID, tc.Pane)
	if err != nil {
		return nil, err
	}
	for _, a := range open {
		if a.Subject != subject {
			continue
		}
		if a.Status == StatusSent {
			// A recurrence is a counted occurrence (after its `after`, when
			// the pattern has one) since the reminder was sent; anything
			// else leaves the alert being measured.
			if !tc.Time.After(a.SentAt) || count(p, subject, calls, a.SentAt) == 0 {
				return nil, nil
			}
			return nil, c.settle(ctx, a, StatusFailed, fmt.Sprintf("the loop went on: %s again at %s", describe(tc), tc.Time.UTC().Format(time.TimeOnly)))
		}
		n := count(p, subject, calls, time.Time{})
		_, err := c.db.ExecContext(ctx, `UPDATE coach_alerts SET count = MAX(count, ?), last_seen = ? WHERE id = ?`, n, fmtTime(tc.Time), a.ID)
		return nil, err
	}
	since, err := c.lastSettled(ctx, p.ID, tc.Pane, subject)
	if err != nil {
		return nil, err
	}
	n := count(p, subject, calls, since)
	if n < p.FireAt() {
		return nil, nil
	}
	return c.raise(ctx, p, tc, subject, lang, n, "")
}

// describe is a call in a few words, for outcomes and evidence.
func describe(tc api.ToolCall) string {
	what := tc.Tool
	switch {
	case tc.Command != "":
		what += " " + clip(tc.Command, 80)
	case tc.File != "":
		what += " " + tc.File
	}
	if tc.Failed {
		what += " (failed)"
	}
	return what
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// contextOf is what effectiveness is counted per besides overall.
func contextOf(repo, agent string) string {
	if repo != "" {
		return "repo:" + repo
	}
	if agent != "" {
		return "agent:" + agent
	}
	return ""
}

// raise records a new alert with the best intervention, raises its wake,
// and sends it when the pattern says so. by is who asked ("" when detected).
func (c *Coach) raise(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject, lang string, n int, by string) (*Alert, error) {
	now := c.now()
	a := Alert{
		Pattern: p.ID, PatternName: p.Name, Pane: tc.Pane, Target: tc.Target, Session: tc.Session, Repo: tc.Repo, Agent: tc.Agent,
		Language: lang, Context: contextOf(tc.Repo, tc.Agent), Subject: subject, Count: n, Threshold: p.Threshold,
		Preventive: p.Preventive && n < p.Threshold, AutoSend: p.AutoSend, Status: StatusActive, Window: p.WindowDuration(),
		Detected: now, LastSeen: tc.Time,
	}
	iv, err := c.Best(ctx, p, a.Context)
	if err != nil {
		return nil, err
	}
	a.Intervention = iv.ID
	link := c.link(p)
	a.Directive = link.Directive
	if link.By == "missing" {
		a.Directive = ""
	}
	a.Reminder, err = compose(p, iv, a, link, tc)
	if err != nil {
		return nil, err
	}
	if err := c.insertAlert(ctx, &a); err != nil {
		return nil, err
	}
	if c.cfg.Wakes != nil {
		// One wake per alert: the coach clears it when the alert settles.
		a.WakeKey = fmt.Sprintf("pattern/%s/%s/%d", p.ID, tc.Pane, a.ID)
		if _, err := c.db.ExecContext(ctx, `UPDATE coach_alerts SET wake_key = ? WHERE id = ?`, a.WakeKey, a.ID); err != nil {
			return nil, fmt.Errorf("record alert: %w", err)
		}
		ev := api.Wake{
			Reason: api.ReasonErrorLoopDetected, Key: a.WakeKey, Session: a.Session, Pane: a.Pane, Agent: a.Agent,
			State: string(rules.ErrorLoop),
			Evidence: api.Evidence{Source: "coach", Rule: "pattern." + p.ID, Lines: []string{
				fmt.Sprintf("%s: %d of %d within %s", p.Name, a.Count, p.Threshold, p.Window),
				"last: " + describe(tc),
			}},
			SuggestedAction: fmt.Sprintf("%s looks stuck in a loop (%s) in %s; send it the reminder (key r in the dashboard, or request_intervention) or give it other guidance.", agentName(a.Agent), p.Name, a.Target),
			Details:         a.Reminder,
			Reminder: &api.Reminder{Alert: a.ID, Pattern: p.ID, Intervention: a.Intervention, Directive: a.Directive, Text: a.Reminder,
				Preventive: a.Preventive, AutoSend: a.AutoSend},
		}
		if _, _, err := c.cfg.Wakes.Raise(ev); err != nil {
			c.cfg.Logger.Warn("coach: raise wake", "pattern", p.ID, "pane", a.Pane, "err", err)
		}
	}
	c.cfg.Logger.Info("coach: pattern detected", "pattern", p.ID, "pane", a.Pane, "count", a.Count, "intervention", a.Intervention, "alert", a.ID)
	if p.AutoSend && c.cfg.Inject != nil && by == "" {
		if _, err := c.Send(ctx, a.ID, "auto"); err != nil {
			c.cfg.Logger.Warn("coach: send reminder", "alert", a.ID, "err", err)
		} else {
			a.Status = StatusSent
		}
	}
	return &a, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

func agentName(a string) string {
	if a == "" {
		return "The agent"
	}
	return a
}

// link is the directive a pattern's reminders quote.
func (c *Coach) link(p rules.Pattern) Link {
	ds, errs := LoadDirectives(c.cfg.Directives)
	for _, err := range errs {
		c.cfg.Logger.Warn("coach: directives", "err", err)
	}
	return LinkDirective(p, ds)
}

// compose writes the reminder: the loop, the directive quoted, a concrete
// suggestion and the outcome to expect.
func compose(p rules.Pattern, iv rules.Intervention, a Alert, link Link, tc api.ToolCall) (string, error) {
	subject := a.Subject
	if subject == "" {
		subject = describe(tc)
	}
	window := p.Window
	suggestion, expected, err := iv.Render(rules.TemplateData{Pattern: p.Name, Subject: subject, Count: a.Count, Threshold: p.Threshold,
		Window: window, Agent: a.Agent, Repo: a.Repo})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ Loop detected: %s", p.Name)
	if a.Subject != "" {
		fmt.Fprintf(&b, " (%s)", clip(a.Subject, 80))
	}
	b.WriteString("\n")
	if a.Count > 0 {
		if a.Count < p.Threshold {
			fmt.Fprintf(&b, "Seen %d times in %s; this reminder comes before the %s.\n", a.Count, window, ordinal(p.Threshold))
		} else {
			fmt.Fprintf(&b, "Seen %d times in %s.\n", a.Count, window)
		}
	}
	if link.Directive != "" && link.Text != "" {
		fmt.Fprintf(&b, "Your directive: %q\n", link.Text)
	}
	fmt.Fprintf(&b, "Suggestion: %s\n", suggestion)
	fmt.Fprintf(&b, "Expected outcome: %s", expected)
	return b.String(), nil
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// reset ends runs of p in tc's pane that a reset call (the test passed)
// proves over: a sent reminder worked, an unsent alert is resolved.
func (c *Coach) reset(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject string) error {
	open, err := c.openAlerts(ctx, p.ID, tc.Pane)
	if err != nil {
		return err
	}
	for _, a := range open {
		if subject != "" && a.Subject != subject {
			continue
		}
		why := fmt.Sprintf("left the loop: %s succeeded", describe(tc))
		status := StatusResolved
		if a.Status == StatusSent {
			if !tc.Time.After(a.SentAt) {
				continue
			}
			status = StatusWorked
		}
		if err := c.settle(ctx, a, status, why); err != nil {
			return err
		}
	}
	return nil
}

// Settle closes alerts whose window passed: a sent reminder with no
// recurrence worked; an alert never acted on whose loop went quiet is
// resolved.
func (c *Coach) Settle(ctx context.Context) error {
	open, err := c.ActiveAlerts(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	c.forgetQuiet(now)
	var errs []error
	for _, a := range open {
		switch {
		case a.Status == StatusSent && now.Sub(a.SentAt) >= a.Window:
			errs = append(errs, c.settle(ctx, a, StatusWorked, fmt.Sprintf("no recurrence within %s of the reminder", a.Window)))
		case a.Status == StatusActive && now.Sub(a.LastSeen) >= a.Window:
			errs = append(errs, c.settle(ctx, a, StatusResolved, fmt.Sprintf("no occurrence for %s", a.Window)))
		}
	}
	return errors.Join(errs...)
}

// forgetQuiet drops the history of panes with no call for a day (closed
// panes, finished agents).
func (c *Coach) forgetQuiet(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pane, h := range c.panes {
		if n := len(h.calls); n == 0 || now.Sub(h.calls[n-1].Time) > maxHistoryAge {
			delete(c.panes, pane)
		}
	}
}

// settle closes an alert, counts a sent reminder's outcome, and clears its
// wake.
func (c *Coach) settle(ctx context.Context, a Alert, status, outcome string) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE coach_alerts SET status = ?, settled_at = ?, outcome = ? WHERE id = ? AND status = ?`,
		status, fmtTime(c.now()), outcome, a.ID, a.Status)
	if err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // another process settled or sent it first
	}
	if status == StatusWorked {
		if err := c.bump(ctx, tx, a.Pattern, a.Intervention, a.Context, 0, 1, 0, 0); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("settle alert %d: %w", a.ID, err)
	}
	c.cfg.Logger.Info("coach: alert settled", "alert", a.ID, "pattern", a.Pattern, "status", status, "outcome", outcome)
	if c.cfg.Wakes != nil && a.WakeKey != "" {
		if err := c.cfg.Wakes.Resolve(a.WakeKey, "the pattern's alert settled ("+string(status)+")"); err != nil {
			c.cfg.Logger.Warn("coach: resolve wake", "key", a.WakeKey, "err", err)
		}
	}
	return nil
}

// Best is the intervention to use for p in a context: the highest
// smoothed effectiveness, counted in that context once it has three
// outcomes there, else overall; ties go to the one listed first.
func (c *Coach) Best(ctx context.Context, p rules.Pattern, context string) (rules.Intervention, error) {
	best, bestScore := p.Interventions[0], -1.0
	for _, iv := range p.Interventions {
		s, err := c.effectiveness(ctx, p.ID, iv.ID, context)
		if err != nil {
			return rules.Intervention{}, err
		}
		if s.Effectiveness > bestScore+1e-9 {
			best, bestScore = iv, s.Effectiveness
		}
	}
	return best, nil
}

// minContextOutcomes is how many outcomes a context needs before its own
// counts are trusted over the overall ones.
const minContextOutcomes = 3

func (c *Coach) effectiveness(ctx context.Context, pattern, intervention, context string) (Stats, error) {
	if context != "" {
		s, err := c.stat(ctx, pattern, intervention, context)
		if err != nil || s.Shown+s.Reported >= minContextOutcomes {
			return s, err
		}
	}
	return c.stat(ctx, pattern, intervention, "")
}

// MarkSent records that an alert's reminder was typed into its pane (by
// "tui", "auto", "mcp:<client>"...): its effectiveness is measured from
// now. A reminder already sent is not counted twice.
func (c *Coach) MarkSent(ctx context.Context, id int64, by string) (Alert, error) {
	a, err := c.Alert(ctx, id)
	if err != nil {
		return Alert{}, err
	}
	if a.Status != StatusActive {
		return a, nil
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	defer tx.Rollback()
	now := c.now()
	res, err := tx.ExecContext(ctx, `UPDATE coach_alerts SET status = ?, sent_at = ?, sent_by = ? WHERE id = ? AND status = ?`,
		StatusSent, fmtTime(now), by, id, StatusActive)
	if err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if err := c.bump(ctx, tx, a.Pattern, a.Intervention, a.Context, 1, 0, 0, 0); err != nil {
			return Alert{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Alert{}, fmt.Errorf("mark alert %d sent: %w", id, err)
	}
	return c.Alert(ctx, id)
}

// Send types an open alert's reminder into its pane and marks it sent.
func (c *Coach) Send(ctx context.Context, id int64, by string) (api.ActionResult, error) {
	if c.cfg.Inject == nil {
		return api.ActionResult{}, ErrNoSender
	}
	a, err := c.Alert(ctx, id)
	if err != nil {
		return api.ActionResult{}, err
	}
	if !a.Open() {
		return api.ActionResult{}, fmt.Errorf("%w: alert %d is %s (%s); only an open alert's reminder is sent", ErrBadRequest, id, a.Status, a.Outcome)
	}
	return api.SendReminder(ctx, c.cfg.Inject, a.Pane, api.Reminder{Alert: a.ID, Pattern: a.Pattern, Text: a.Reminder}, "coach:"+by,
		func(ctx context.Context, id int64) error {
			_, err := c.MarkSent(ctx, id, by)
			return err
		})
}

// InterventionRequest asks for a reminder in one pane.
type InterventionRequest = api.InterventionRequest

// InterventionResult is the alert the reminder belongs to and, when sent,
// what the pane did with it.
type InterventionResult = api.InterventionResult

// RequestIntervention composes (and, if asked, sends) a reminder for a
// pane.
func (c *Coach) RequestIntervention(ctx context.Context, req InterventionRequest) (InterventionResult, error) {
	if req.Pane == "" {
		return InterventionResult{}, fmt.Errorf("%w: name the pane", ErrBadRequest)
	}
	var p rules.Pattern
	if req.Pattern != "" {
		var ok bool
		if p, ok = c.Pattern(req.Pattern); !ok {
			return InterventionResult{}, fmt.Errorf("%w: no pattern %q", ErrNotFound, req.Pattern)
		}
	}
	open, err := c.queryAlerts(ctx, `SELECT `+alertCols+` FROM coach_alerts WHERE status IN ('active', 'sent') AND pane = ? ORDER BY id DESC`, req.Pane)
	if err != nil {
		return InterventionResult{}, err
	}
	var a *Alert
	for i := range open {
		if req.Pattern == "" || open[i].Pattern == req.Pattern {
			a = &open[i]
			break
		}
	}
	if a == nil {
		if req.Pattern == "" {
			return InterventionResult{}, fmt.Errorf("%w: no loop is detected in %s now; name a pattern to remind it of one anyway", ErrNotFound, req.Pane)
		}
		c.mu.Lock()
		lang := ""
		if h := c.panes[req.Pane]; h != nil {
			lang = h.language
		}
		c.mu.Unlock()
		tc := api.ToolCall{Time: c.now(), Pane: req.Pane, Target: req.Target, Session: req.Session, Repo: req.Repo, Agent: req.Agent}
		if a, err = c.raise(ctx, p, tc, "", lang, 0, req.By); err != nil {
			return InterventionResult{}, err
		}
	}
	out := InterventionResult{Alert: *a}
	if req.Send && a.Status == StatusActive {
		res, err := c.Send(ctx, a.ID, req.By)
		if err != nil {
			return out, err
		}
		out.Action, out.Sent = &res, res.Delivered
		if out.Alert, err = c.Alert(ctx, a.ID); err != nil {
			return out, err
		}
	}
	if pp, ok := c.Pattern(a.Pattern); ok {
		out.Stats, _ = c.Standings(ctx, pp, a.Context)
	}
	return out, nil
}

// Report is a user's or agent's word on whether an intervention worked.
type Report = api.CoachReport

// MaxNotes caps a report's notes.
const MaxNotes = api.MaxNotes

// ReportIntervention records a report and returns the intervention's
// standing after it.
func (c *Coach) ReportIntervention(ctx context.Context, r Report) (InterventionStanding, error) {
	p, ok := c.Pattern(r.Pattern)
	if !ok {
		return InterventionStanding{}, fmt.Errorf("%w: no pattern %q", ErrNotFound, r.Pattern)
	}
	if _, ok := p.Intervention(r.Intervention); !ok {
		ids := make([]string, len(p.Interventions))
		for i, iv := range p.Interventions {
			ids[i] = iv.ID
		}
		return InterventionStanding{}, fmt.Errorf("%w: pattern %s has no intervention %q (it has %s)", ErrNotFound, r.Pattern, r.Intervention, strings.Join(ids, ", "))
	}
	if len(r.Notes) > MaxNotes {
		return InterventionStanding{}, fmt.Errorf("%w: notes are %d bytes; keep them under %d", ErrBadRequest, len(r.Notes), MaxNotes)
	}
	context := ""
	// A report on a sent reminder still being measured settles it: one
	// outcome, counted once.
	var measured *Alert
	if r.Alert != 0 {
		a, err := c.Alert(ctx, r.Alert)
		if err != nil {
			return InterventionStanding{}, err
		}
		if a.Pattern != r.Pattern {
			return InterventionStanding{}, fmt.Errorf("%w: alert %d is about pattern %s, not %s", ErrBadRequest, r.Alert, a.Pattern, r.Pattern)
		}
		context = a.Context
		if a.Status == StatusSent && a.Intervention == r.Intervention {
			measured = &a
		}
	}
	if measured != nil {
		status, verdict := StatusFailed, "did not work"
		if r.Worked {
			status, verdict = StatusWorked, "worked"
		}
		outcome := fmt.Sprintf("reported by %s: %s", orUnknown(r.By), verdict)
		if r.Notes != "" {
			outcome += " (" + clip(r.Notes, 200) + ")"
		}
		if err := c.settle(ctx, *measured, status, outcome); err != nil {
			return InterventionStanding{}, err
		}
	}
	reported, reportedWorked := 1, b2i(r.Worked)
	if measured != nil {
		reported, reportedWorked = 0, 0
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO coach_reports(pattern_id, intervention, alert_id, worked, notes, by, time) VALUES(?,?,?,?,?,?,?)`,
		r.Pattern, r.Intervention, r.Alert, b2i(r.Worked), r.Notes, r.By, fmtTime(c.now())); err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	if reported > 0 {
		if err := c.bump(ctx, tx, r.Pattern, r.Intervention, context, 0, 0, reported, reportedWorked); err != nil {
			return InterventionStanding{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return InterventionStanding{}, fmt.Errorf("record report: %w", err)
	}
	st, err := c.Standings(ctx, p, context)
	if err != nil {
		return InterventionStanding{}, err
	}
	for _, s := range st {
		if s.Intervention == r.Intervention {
			return s, nil
		}
	}
	return InterventionStanding{}, nil
}

// InterventionStanding is one intervention's counts and whether it is the
// one chosen now.
type InterventionStanding = api.InterventionStanding

// Standings are a pattern's interventions with their effectiveness in a
// context (as Best counts it), the chosen one marked.
func (c *Coach) Standings(ctx context.Context, p rules.Pattern, context string) ([]InterventionStanding, error) {
	best, err := c.Best(ctx, p, context)
	if err != nil {
		return nil, err
	}
	out := make([]InterventionStanding, 0, len(p.Interventions))
	for _, iv := range p.Interventions {
		s, err := c.effectiveness(ctx, p.ID, iv.ID, context)
		if err != nil {
			return nil, err
		}
		out = append(out, InterventionStanding{CoachStats: s, Chosen: iv.ID == best.ID})
	}
	return out, nil
}

// PatternInfo is a pattern as the CLI and MCP show it.
type PatternInfo = api.PatternInfo

// PatternInfos describes every pattern in force.
func (c *Coach) PatternInfos(ctx context.Context) ([]PatternInfo, error) {
	ds, _ := LoadDirectives(c.cfg.Directives)
	var out []PatternInfo
	for _, p := range c.Patterns() {
		pi, err := c.patternInfo(ctx, p, ds)
		if err != nil {
			return nil, err
		}
		out = append(out, pi)
	}
	return out, nil
}

// PatternInfo describes one pattern.
func (c *Coach) PatternInfo(ctx context.Context, id string) (PatternInfo, error) {
	p, ok := c.Pattern(id)
	if !ok {
		return PatternInfo{}, fmt.Errorf("%w: no pattern %q", ErrNotFound, id)
	}
	ds, _ := LoadDirectives(c.cfg.Directives)
	return c.patternInfo(ctx, p, ds)
}

func (c *Coach) patternInfo(ctx context.Context, p rules.Pattern, ds []Directive) (PatternInfo, error) {
	st, err := c.Standings(ctx, p, "")
	if err != nil {
		return PatternInfo{}, err
	}
	var open int
	if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM coach_alerts WHERE pattern_id = ? AND status IN ('active', 'sent')`, p.ID).Scan(&open); err != nil {
		return PatternInfo{}, fmt.Errorf("read alerts: %w", err)
	}
	return PatternInfo{CoachPattern: patternOf(p), Link: LinkDirective(p, ds), Interventions: st, Open: open}, nil
}

// Directives reads the CLAUDE.md files now, with the pattern each
// directive is linked to.
func (c *Coach) Directives() (DirectivesView, error) {
	ds, errs := LoadDirectives(c.cfg.Directives)
	v := DirectivesView{Files: c.cfg.Directives, Directives: ds, Links: []Link{}}
	if v.Directives == nil {
		v.Directives = []Directive{}
	}
	for _, p := range c.Patterns() {
		v.Links = append(v.Links, LinkDirective(p, ds))
	}
	for _, err := range errs {
		v.Problems = append(v.Problems, err.Error())
	}
	return v, nil
}

// DirectivesView is what `system3 directives` and system3://directives show.
type DirectivesView = api.DirectivesView

// patternOf is p's definition as the vocabulary shows it.
func patternOf(p rules.Pattern) api.CoachPattern {
	cond := func(c *rules.ToolCond) *api.CoachToolCond {
		if c == nil {
			return nil
		}
		return &api.CoachToolCond{Tool: c.Tool, Command: c.Command, File: c.File, Error: c.Error, Failed: c.Failed}
	}
	var ivs []api.CoachIntervention
	if p.Interventions != nil {
		ivs = make([]api.CoachIntervention, len(p.Interventions))
		for i, iv := range p.Interventions {
			ivs[i] = api.CoachIntervention{ID: iv.ID, Suggestion: iv.Suggestion, Expected: iv.Expected}
		}
	}
	return api.CoachPattern{
		ID: p.ID, Name: p.Name, Description: p.Description,
		Trigger:   api.CoachTrigger{Match: *cond(&p.Trigger.Match), After: cond(p.Trigger.After), Reset: cond(p.Trigger.Reset), Same: p.Trigger.Same},
		When:      api.CoachPatternContext{Repos: p.When.Repos, Agents: p.When.Agents, Languages: p.When.Languages},
		Threshold: p.Threshold, Window: p.Window, Preventive: p.Preventive, AutoSend: p.AutoSend,
		Directive: p.Directive, Keywords: p.Keywords, Interventions: ivs, Source: p.Source, Line: p.Line,
	}
}

// languageOf guesses the language a call is about, from the file's
// extension or the command's tool.
func languageOf(tc api.ToolCall) string {
	if tc.File != "" {
		if l, ok := extLanguage[strings.ToLower(filepath.Ext(tc.File))]; ok {
			return l
		}
	}
	cmd := " " + tc.Command + " "
	for _, k := range commandLanguage {
		if strings.Contains(cmd, k.word) {
			return k.lang
		}
	}
	return ""
}

var extLanguage = map[string]string{
	".go": "go", ".py": "python", ".ts": "typescript", ".tsx": "typescript", ".js": "javascript", ".jsx": "javascript",
	".mjs": "javascript", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".c": "c", ".h": "c",
	".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".swift": "swift", ".ex": "elixir", ".exs": "elixir",
	".sh": "shell", ".scala": "scala", ".dart": "dart", ".lua": "lua", ".zig": "zig",
}

var commandLanguage = []struct{ word, lang string }{
	{" go ", "go"}, {" gofmt ", "go"}, {" pytest", "python"}, {" python", "python"}, {" ruff ", "python"}, {" black ", "python"},
	{" cargo ", "rust"}, {" rustfmt ", "rust"}, {" npm ", "javascript"}, {" npx ", "javascript"}, {" yarn ", "javascript"},
	{" pnpm ", "javascript"}, {" tsc", "typescript"}, {" mvn ", "java"}, {" gradle", "java"}, {" bundle ", "ruby"}, {" rspec", "ruby"},
	{" mix ", "elixir"}, {" dotnet ", "csharp"},
}
