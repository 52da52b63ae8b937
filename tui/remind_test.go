package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

const reminderText = "⚠️ Loop detected: Error loop on the same test (go test ./api)\nSeen 2 times in 15m; this reminder comes before the 3rd.\nSuggestion: Stop re-running it.\nExpected outcome: The test passes."

// raiseReminder raises a pattern wake with a reminder on api (%4).
func raiseReminder(t *testing.T, svc *monitortest.Service) api.Wake {
	t.Helper()
	return svc.Raise(t, api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "pattern/test_error_loop/%4/42", Session: "api", Pane: "%4", Agent: "codex", State: "error_loop",
		Evidence:        api.Evidence{Source: "coach", Rule: "pattern.test_error_loop", Lines: []string{"Error loop on the same test: 2 of 3 within 15m"}},
		SuggestedAction: "codex looks stuck in a loop; send it the reminder.",
		Reminder:        &api.Reminder{Alert: 42, Pattern: "test_error_loop", Intervention: "isolate-root-cause", Text: reminderText, Preventive: true}})
}

func TestRemindKey(t *testing.T) {
	inject := func(text string) monitortest.Call {
		return monitortest.Call{Method: "inject", Target: api.Target{Pane: "%4"}, Text: text, Origin: "tui"}
	}
	tests := []struct {
		name     string
		sentErr  error
		setup    func(h *harness)
		keys     []string
		calls    []monitortest.Call
		sent     []int64
		status   string
		noRecord bool
	}{
		{name: "r sends the selected session's reminder", setup: func(h *harness) { h.selectPane("%4") }, keys: []string{"r"},
			calls: []monitortest.Call{inject(reminderText)}, sent: []int64{42},
			status: "test_error_loop reminder sent to api:1.0 ✓ verified; system3 measures whether it works"},
		{name: "r on the wake feed sends the selected wake's reminder", keys: []string{"tab", "g", "r"},
			calls: []monitortest.Call{inject(reminderText)}, sent: []int64{42}, status: "reminder sent to api:1.0"},
		{name: "r without a loop sends nothing", setup: func(h *harness) { h.selectPane("%2") }, keys: []string{"r"},
			status: "no reminder for orch-auth:1.0: system3 has detected no loop there"},
		{name: "a reminder typed but not recorded says so", sentErr: errors.New("database is locked"), setup: func(h *harness) { h.selectPane("%4") }, keys: []string{"r"},
			calls: []monitortest.Call{inject(reminderText)}, sent: []int64{42},
			status: "reminder sent to api:1.0, but its effect will not be measured: database is locked"},
		{name: "without a coach it is only typed", setup: func(h *harness) { h.selectPane("%4") }, keys: []string{"r"}, noRecord: true,
			calls: []monitortest.Call{inject(reminderText)}, status: "reminder sent to api:1.0 ✓ verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newFixtureService(t)
			raiseFixtureWakes(t, svc)
			raiseReminder(t, svc)
			co := &facadetest.Coach{}
			co.Fail("mark_sent", tt.sentErr)
			parts := backend.Parts{Coach: co}
			if tt.noRecord {
				parts.Coach = nil
			}
			h := newPartsHarness(t, svc, parts, Options{}, 120, 36)
			if tt.setup != nil {
				tt.setup(h)
			}
			h.press(tt.keys...)
			if got := h.calls(); !slices.EqualFunc(got, tt.calls, callEqual) {
				t.Errorf("calls:\n got %+v\nwant %+v", got, tt.calls)
			}
			var sent []int64
			for _, m := range co.Marks() {
				sent = append(sent, m.ID)
			}
			if !slices.Equal(sent, tt.sent) {
				t.Errorf("recorded %v, want %v", sent, tt.sent)
			}
			if !strings.Contains(h.statusText(), tt.status) {
				t.Errorf("status %q does not contain %q", h.statusText(), tt.status)
			}
		})
	}
}

// TestReminderShown: the detail pane shows the reminder's first line and
// the key that sends it, the help bar offers the key, and both go once
// the loop's wake is cleared.
func TestReminderShown(t *testing.T) {
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	ev := raiseReminder(t, svc)
	h := newHarness(t, svc, Options{}, 200, 40)
	h.selectPane("%4")
	view := ansi.Strip(h.m.View())
	if !strings.Contains(view, "remindr sends ⚠ Loop detected: Error loop on the same test (go test ./api)") {
		t.Fatalf("no reminder line in the detail:\n%s", view)
	}
	if !strings.Contains(view, "r send reminder") {
		t.Fatalf("no reminder key in the help bar:\n%s", view)
	}
	if err := svc.Store.Resolve(ev.Key, "the test ended it"); err != nil {
		t.Fatal(err)
	}
	h.read()
	view = ansi.Strip(h.m.View())
	if strings.Contains(view, "Loop detected") || strings.Contains(view, "send reminder") {
		t.Fatalf("a cleared loop still offers its reminder:\n%s", view)
	}
	h.press("r")
	if len(h.calls()) != 0 || !strings.Contains(h.statusText(), "no reminder for api:1.0") {
		t.Fatalf("calls %+v, status %q", h.calls(), h.statusText())
	}
}

// A reminder typed by the daemon but not recorded there comes back over
// the socket as a sentence matching api.ErrNotRecorded: the status line
// says it was sent and why it will not be measured, once.
func TestRemindNotRecordedAcrossTheSocket(t *testing.T) {
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	raiseReminder(t, svc)
	fs := remoteRemind{Service: backend.New(svc, backend.Parts{})}
	h := newFacadeHarness(t, svc, fs, Options{}, nil, 120, 36)
	h.selectPane("%4")
	h.press("r")
	want := "reminder sent to api:1.0, but its effect will not be measured: database is locked"
	if s := h.statusText(); !strings.Contains(s, want) || strings.Count(s, "not recorded") != 0 {
		t.Fatalf("status %q, want %q", s, want)
	}
}

// remoteRemind answers Remind as a daemon's service does when its record
// failed: the result, and the error as the socket carries it.
type remoteRemind struct{ facade.Service }

func (r remoteRemind) Remind(context.Context, facade.RemindRequest) (api.ActionResult, error) {
	return api.ActionResult{Delivered: true, Verified: true, Pane: "%4", Target: "api:1.0"}, socketNotRecorded{}
}

type socketNotRecorded struct{}

func (socketNotRecorded) Error() string {
	return "reminder of alert 42 was sent but not recorded: database is locked"
}
func (socketNotRecorded) Is(target error) bool { return target == api.ErrNotRecorded }
