package coach

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// Handle takes one tool call: it records it in the pane's history, ends
// runs it resets, settles reminders it proves wrong (the loop recurred) or
// right (the loop's reset came), and raises an alert for each pattern that
// now reaches its firing count. It returns the alerts raised.
func (c *Coach) Handle(ctx context.Context, tc api.ToolCall) ([]api.CoachAlert, error) {
	if tc.Pane == "" {
		return nil, fmt.Errorf("%w: a tool call needs its pane", api.ErrCoachBadRequest)
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
	var raised []api.CoachAlert
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
func (c *Coach) occurrence(ctx context.Context, p rules.Pattern, tc api.ToolCall, subject, lang string, calls []api.ToolCall) (*api.CoachAlert, error) {
	open, err := c.openAlerts(ctx, p.ID, tc.Pane)
	if err != nil {
		return nil, err
	}
	for _, a := range open {
		if a.Subject != subject {
			continue
		}
		if a.Status == api.CoachStatusSent {
			// A recurrence is a counted occurrence (after its `after`, when
			// the pattern has one) since the reminder was sent; anything
			// else leaves the alert being measured.
			if !tc.Time.After(a.SentAt) || count(p, subject, calls, a.SentAt) == 0 {
				return nil, nil
			}
			return nil, c.settle(ctx, a, api.CoachStatusFailed, fmt.Sprintf("the loop went on: %s again at %s", describe(tc), tc.Time.UTC().Format(time.TimeOnly)))
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
