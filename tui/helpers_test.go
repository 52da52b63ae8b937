package tui

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestMain(m *testing.M) {
	// Goldens are plain text: no colour, whatever the terminal running
	// the tests, and no background query.
	lipgloss.SetColorProfile(termenv.Ascii)
	lipgloss.SetHasDarkBackground(true)
	os.Exit(m.Run())
}

// now is the dashboard's fixed clock in tests.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return now }

// fixturePrompt is the identity of orch-auth's prompt: the dashboard's
// answers name it.
const fixturePrompt = "p00f1x7ure0a07h0"

// fixture sessions: one in every state, those needing a person first as
// api.SortSessions puts them.
func fixtureSessions() []api.Session {
	ss := []api.Session{
		{
			Pane: "%1", Session: "orch-auth", Window: "claude", WindowIndex: 0, PaneIndex: 0, Target: "orch-auth:0.0",
			Command: "claude", Path: "/home/dev/src/auth", Agent: "claude", State: api.AwaitingInput, Kind: "permission",
			Evidence: api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want to make this edit to login.go?", "❯ 1. Yes"}},
			Question: "Do you want to make this edit to login.go?",
			Options:  []string{"Yes", "Yes, allow all edits during this session (shift+tab)", "No, and tell Claude what to do differently (esc)"},
			Prompt:   fixturePrompt,
			Since:    now.Add(-2*time.Minute - 10*time.Second), LastLine: "❯ 1. Yes",
			TaskList: "auth-list", Tasks: &api.TaskProgress{Completed: 3, Total: 7, InProgress: []string{"Implement login"}, Blocked: 1},
			Usage: &api.Usage{Tokens: api.Tokens{Input: 1250, Output: 48200, CacheWrite: 120000, CacheRead: 2400000}, Responses: 41,
				ByModel: map[string]api.Tokens{"claude-opus-5-5": {}}, CostUSD: 9.87},
		},
		{
			Pane: "%4", Session: "api", Window: "codex", WindowIndex: 1, Target: "api:1.0", Command: "node", Agent: "codex",
			State: api.ErrorLoop, Evidence: api.Evidence{Source: "screen", Rule: "generic.error-loop", Lines: []string{"TypeError: Cannot read properties of undefined (reading 'map')"}},
			Detail: "TypeError: Cannot read properties of undefined (reading 'map')", ErrorCount: 4,
			Since: now.Add(-6 * time.Minute), LastLine: "    at render (src/list.tsx:42:17)",
		},
		{
			Pane: "%7", Session: "web", Window: "gemini", PaneIndex: 1, Target: "web:0.1", Command: "gemini", Agent: "gemini",
			State: api.Error, Kind: "rate_limited", Evidence: api.Evidence{Source: "screen", Rule: "gemini.rate-limit", Lines: []string{"Quota exceeded for quota metric 'Requests per minute'"}},
			Detail: "Rate limit reached; resets at 12:05", Since: now.Add(-40 * time.Second), LastLine: "Quota exceeded",
		},
		{
			Pane: "%9", Session: "db", Window: "aider", Target: "db:0.0", Command: "bash", Agent: "aider", State: api.Exited, Kind: "process_gone",
			Evidence: api.Evidence{Source: "process", Rule: "process.gone"}, Since: now.Add(-72 * time.Minute), LastLine: "$ ",
		},
		{
			Pane: "%2", Session: "orch-auth", Window: "worker", WindowIndex: 1, Target: "orch-auth:1.0", Command: "claude", Agent: "claude",
			State: api.Working, Kind: "tool", Evidence: api.Evidence{Source: "screen", Rule: "claude.working", Lines: []string{"✻ Implementing login… (esc to interrupt)"}},
			Since: now.Add(-15 * time.Minute), LastLine: "✻ Implementing login… (esc to interrupt)",
			TaskList: "auth-list", Tasks: &api.TaskProgress{Completed: 3, Total: 7, InProgress: []string{"Implement login"}, Blocked: 1},
		},
		{
			Pane: "%11", Session: "docs", Window: "claude", Target: "docs:0.0", Command: "claude", Agent: "claude", State: api.Idle,
			Evidence: api.Evidence{Source: "screen", Rule: "claude.idle", Lines: []string{"> "}}, Since: now.Add(-3*time.Hour - 5*time.Minute), LastLine: "Done. The README now documents every flag.",
		},
		{
			Pane: "%12", Session: "scratch", Window: "bash", Target: "scratch:0.0", Command: "bash", State: api.Unknown,
			Since: now.Add(-49 * time.Hour), LastLine: "dev@box:~$ make test",
		},
	}
	api.SortSessions(ss)
	return ss
}

func fixtureSnapshot() api.Snapshot {
	return api.Snapshot{Server: "tmux server -L work", Running: true, Sessions: fixtureSessions(), Taken: now}
}

func fixtureTaskLists() []api.TaskListDoc {
	str := func(s string) *string { return &s }
	return []api.TaskListDoc{{
		ID: "auth-list", Session: "orch-auth", Agent: "claude", LastChange: str("2026-11-21T11:58:00Z"),
		Progress: api.TaskProgressDoc{Completed: 3, Total: 7,
			InProgress: []api.TaskActiveDoc{{ID: "4", Subject: "Implement login", ActiveForm: "Implementing login"}},
			Blocked:    []api.TaskBlockedDoc{{ID: "6", Subject: "Deploy to staging", WaitingOn: []string{"4", "5"}}},
		},
		Tasks: []api.TaskDoc{
			{ID: "1", Subject: "Read the auth spec", Status: "completed"},
			{ID: "2", Subject: "Add the users table", Status: "completed"},
			{ID: "3", Subject: "Hash passwords with argon2", Status: "completed"},
			{ID: "4", Subject: "Implement login", ActiveForm: "Implementing login", Status: "in_progress"},
			{ID: "5", Subject: "Write login tests", Status: "pending"},
			{ID: "6", Subject: "Deploy to staging", Status: "pending", Blocked: true, BlockedBy: []string{"4", "5"}},
			{ID: "7", Subject: "Write the changelog", Status: "pending"},
		},
		Errors: []api.TaskErrorDoc{},
	}}
}

// fixturePreview is what the pane of the awaiting session shows, with
// colours as capture-pane -e writes them.
var fixturePreview = []string{
	"\x1b[38;5;174m╭───────────────────────────────────────────╮\x1b[39m",
	"\x1b[38;5;174m│\x1b[39m \x1b[1mEdit file\x1b[0m                                 \x1b[38;5;174m│\x1b[39m",
	"\x1b[38;5;174m│\x1b[39m  login.go: +12 -3                         \x1b[38;5;174m│\x1b[39m",
	"\x1b[38;5;174m╰───────────────────────────────────────────╯\x1b[39m",
	" Do you want to make this edit to login.go?",
	" \x1b[36m❯ 1. Yes\x1b[39m",
	"   2. Yes, allow all edits during this session (shift+tab)",
	"   3. No, and tell Claude what to do differently (esc)",
	"",
	"",
}

// raiseFixtureWakes raises the wakes the fixture sessions would have: the
// prompt, the error loop, the exited worker, and an acknowledged
// heartbeat.
func raiseFixtureWakes(t *testing.T, svc *monitortest.Service) []api.Wake {
	t.Helper()
	hb := svc.Raise(t, api.Wake{Reason: api.ReasonHeartbeat, SuggestedAction: "Nothing needed attention for 30m0s: 7 sessions."})
	if _, err := svc.Store.Ack(hb.ID, "cli"); err != nil {
		t.Fatal(err)
	}
	return []api.Wake{
		hb,
		svc.Raise(t, api.Wake{Reason: api.ReasonWorkerFailed, Key: "worker_failed/%9", Session: "db", Pane: "%9", Agent: "aider", State: "exited",
			SuggestedAction: "aider in db:0.0 (pane %9) has exited; read its last lines, then restart it or hand its tasks to another session."}),
		svc.Raise(t, api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "error_loop_detected/%4", Session: "api", Pane: "%4", Agent: "codex", State: "error_loop",
			SuggestedAction: "codex keeps hitting the same error in api:1.0 (pane %4); read the evidence, interrupt it and suggest a different approach."}),
		svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%1", Session: "orch-auth", Pane: "%1", Agent: "claude", State: "awaiting_input", Kind: "permission",
			Question: "Do you want to make this edit to login.go?", Options: []string{"Yes", "Yes, allow all edits during this session (shift+tab)", "No, and tell Claude what to do differently (esc)"},
			SuggestedAction: "Check what claude asks to do in orch-auth:0.0 (pane %1) and approve or decline it."}),
	}
}

// newFixtureService is a fake service with the fixture registry, wakes,
// preview and task list. Wakes are stamped a minute apart, ten minutes
// before the dashboard's clock.
func newFixtureService(t *testing.T) *monitortest.Service {
	t.Helper()
	svc := monitortest.NewService(t, monitortest.Ticking(now.Add(-10*time.Minute)))
	svc.SetSnapshot(fixtureSnapshot())
	svc.SetPreview("%1", fixturePreview...)
	svc.SetPreview("%2", "✻ Implementing login… (esc to interrupt)", "", "  ⎿  Read src/login.go (120 lines)")
	svc.SetTaskLists(fixtureTaskLists())
	return svc
}

// funcPtr identifies the code of a function value; every method value of
// one method shares it.
func funcPtr(f any) uintptr { return reflect.ValueOf(f).Pointer() }

var (
	readUpdateCode = funcPtr(updateReader{}.read)
	readWakeCode   = funcPtr(wakeReader{}.read)
	readScreenCode = funcPtr(screenReader{}.read)
	timerCode      = funcPtr(timer{}.wait)
)

// harness drives a Model the way a tea.Program would, synchronously:
// every command runs at once and its message is fed back, except the
// commands that wait (stream reads, ticks). Stream reads (registry
// updates, wakes, the preview's screens after its first) run in the
// background and their messages are handled only when the test calls
// read, so a test decides when events arrive. Ticks are sent by hand.
type harness struct {
	t    testing.TB
	svc  *monitortest.Service
	m    Model
	bell *testkit.SyncBuffer
	quit bool

	reads chan tea.Msg
}

// newHarness starts a dashboard on svc at w×h and lets it connect: the
// registry, the wakes and the selected session's preview and task list
// are in when it returns.
func newHarness(t testing.TB, svc *monitortest.Service, opts Options, w, h int) *harness {
	t.Helper()
	return newPartsHarness(t, svc, backend.Parts{}, opts, w, h)
}

// newPartsHarness is newHarness on a service with parts (orchestrators,
// a learning store, a coach).
func newPartsHarness(t testing.TB, svc *monitortest.Service, parts backend.Parts, opts Options, w, h int) *harness {
	t.Helper()
	return newStyledPartsHarness(t, svc, parts, opts, nil, w, h)
}

// newStyledHarness is newHarness with given styles (nil: New's).
func newStyledHarness(t testing.TB, svc *monitortest.Service, opts Options, st *styles, w, h int) *harness {
	t.Helper()
	return newStyledPartsHarness(t, svc, backend.Parts{}, opts, st, w, h)
}

// bare is svc as the one service, without orchestrators, learning store
// or coach.
func bare(svc api.Service) facade.Service { return backend.New(svc, backend.Parts{}) }

func newStyledPartsHarness(t testing.TB, svc *monitortest.Service, parts backend.Parts, opts Options, st *styles, w, h int) *harness {
	t.Helper()
	return newFacadeHarness(t, svc, backend.New(svc, parts), opts, st, w, h)
}

// newFacadeHarness is a harness on fs, a service over svc.
func newFacadeHarness(t testing.TB, svc *monitortest.Service, fs facade.Service, opts Options, st *styles, w, h int) *harness {
	t.Helper()
	bell := &testkit.SyncBuffer{}
	if opts.Clock == nil {
		opts.Clock = fixedClock
	}
	if opts.BellOut == nil {
		opts.BellOut = bell
	}
	hs := &harness{t: t, svc: svc, bell: bell, reads: make(chan tea.Msg, 64)}
	hs.m = newModel(context.Background(), fs, opts, st)
	t.Cleanup(hs.m.stop)
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	hs.exec(hs.m.Init())
	hs.drainReplay()
	return hs
}

// send hands msg to Update and runs the commands it returns.
func (h *harness) send(msg tea.Msg) {
	h.t.Helper()
	next, cmd := h.m.Update(msg)
	h.m = next.(Model)
	h.exec(cmd)
}

func (h *harness) exec(cmd tea.Cmd) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	switch funcPtr(cmd) {
	case readUpdateCode, readWakeCode, readScreenCode:
		go func() { h.reads <- cmd() }()
		return
	case timerCode:
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			h.exec(c)
		}
	case tea.QuitMsg:
		h.quit = true
	default:
		h.send(msg)
	}
}

// read handles the next event a stream delivers, failing after a while.
// The end of a preview stream the dashboard has left (another pane was
// selected) is handled on the way, not counted as the event.
func (h *harness) read() tea.Msg {
	h.t.Helper()
	for {
		select {
		case msg := <-h.reads:
			s, screen := msg.(screenMsg)
			h.send(msg)
			if screen && !s.ok && s.gen != h.m.preview.gen {
				continue
			}
			return msg
		case <-time.After(5 * time.Second):
			h.t.Fatal("no stream event arrived")
			return nil
		}
	}
}

// drainReplay handles the replay of unacknowledged wakes that a new
// subscription delivers, so a test starts from a settled dashboard.
func (h *harness) drainReplay() {
	h.t.Helper()
	want := 0
	evs, err := h.svc.Store.List(api.WakeFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	want = len(evs)
	for range want {
		h.read()
	}
}

// press types keys: single characters, or key names ("enter", "esc",
// "ctrl+j", "alt+enter", "up").
func (h *harness) press(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.send(keyMsg(k))
	}
}

// typeText types text rune by rune, as a terminal would.
func (h *harness) typeText(s string) {
	h.t.Helper()
	for _, r := range s {
		h.send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

func keyMsg(k string) tea.KeyMsg {
	names := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
		"up": tea.KeyUp, "down": tea.KeyDown, "home": tea.KeyHome, "end": tea.KeyEnd,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "backspace": tea.KeyBackspace,
		"ctrl+c": tea.KeyCtrlC, "ctrl+j": tea.KeyCtrlJ, "ctrl+t": tea.KeyCtrlT, "ctrl+u": tea.KeyCtrlU,
	}
	if t, ok := names[k]; ok {
		return tea.KeyMsg{Type: t}
	}
	if k == "alt+enter" {
		return tea.KeyMsg{Type: tea.KeyEnter, Alt: true}
	}
	if k == " " {
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// selectPane moves the selection to the session in pane with j/k.
func (h *harness) selectPane(pane string) {
	h.t.Helper()
	h.press("g")
	for range h.m.table.Len() {
		if s, ok := h.m.table.Selected(); ok && s.Pane == pane {
			return
		}
		h.press("j")
	}
	h.t.Fatalf("pane %s is not listed", pane)
}

// statusText is the status line as plain text.
func (h *harness) statusText() string { return strings.TrimSpace(h.m.status.text) }

// calls are the actions the fake service received.
func (h *harness) calls() []monitortest.Call { return h.svc.Calls() }
