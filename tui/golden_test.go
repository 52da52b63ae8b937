package tui

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/system3-dev/system3/internal/testsupport/facadetest"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// The golden tests run the dashboard as a real program (teatest) at fixed
// sizes, drive it with keys, and compare the final screen with
// testdata/<test>/<case>.golden. `go test ./tui -update` rewrites them.
// The clock is fixed and every wait is for content, never for time, so
// the screens are the same on every run.

var goldenSizes = [][2]int{{80, 24}, {160, 45}}

// ready is on screen once the registry and the wakes are in.
var ready = []string{"7 panes", "3 wakes need a person"}

type goldenFlow struct {
	name string
	// svc builds the service; nil: the fixture with its wakes.
	svc  func(t *testing.T) *monitortest.Service
	opts Options
	// parts are the service's orchestrators, learning store and coach.
	parts backend.Parts
	// steps alternate what to do and what to wait for.
	steps []goldenStep
}

type goldenStep struct {
	keys []tea.KeyMsg
	text string   // typed after keys
	wait []string // output to wait for after, all of it
}

func keys(ks ...string) []tea.KeyMsg {
	out := make([]tea.KeyMsg, len(ks))
	for i, k := range ks {
		out[i] = keyMsg(k)
	}
	return out
}

func fixtureWithWakes(t *testing.T) *monitortest.Service {
	svc := newFixtureService(t)
	raiseFixtureWakes(t, svc)
	return svc
}

func TestGolden(t *testing.T) {
	mcp := func() MCPStatus { return MCPStatus{Addr: "127.0.0.1:8889", Clients: 1} }
	flows := []goldenFlow{
		{
			name: "main",
			opts: Options{MCP: mcp},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("j"), wait: []string{"3. No, and tell", "1 in progress"}},
			},
		},
		{
			name: "help",
			opts: Options{MCP: mcp},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("?"), wait: []string{"choose option"}},
			},
		},
		{
			name: "compose",
			opts: Options{MCP: mcp},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("G", "k"), wait: []string{"Read src/login.go", "1 in progress"}},
				{keys: keys("i"), text: "Use the existing session store.", wait: []string{"session store."}},
				{keys: keys("ctrl+j"), text: "Don't add a table.", wait: []string{"add a table."}},
			},
		},
		{
			name: "answered",
			opts: Options{MCP: func() MCPStatus { return MCPStatus{Err: "port taken"} }},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("j"), wait: []string{"3. No, and tell", "1 in progress"}},
				{keys: keys("a"), wait: []string{"2 wakes need a person"}},
				{keys: keys("2"), wait: []string{"(keys 2)"}},
			},
		},
		{
			name: "zoom",
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("j"), wait: []string{"3. No, and tell", "1 in progress"}},
				{keys: keys("enter"), wait: []string{"following"}},
			},
		},
		{
			name:  "spawn",
			parts: backend.Parts{Orchestrators: (&facadetest.Orchestrators{}).Plain()},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("s"), text: "auth", wait: []string{"spawn an orchestrator", "auth"}},
				{keys: keys("tab"), text: "Add OAuth login", wait: []string{"Add OAuth login"}},
				{keys: keys("tab", "tab", "tab"), text: "codex", wait: []string{"codex"}},
			},
		},
		{
			name:  "stop",
			parts: backend.Parts{Orchestrators: (&facadetest.Orchestrators{}).Plain()},
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("j"), wait: []string{"3. No, and tell"}},
				{keys: keys("S"), wait: []string{"stop orchestrator auth", "remove worktree? (y/N)"}},
			},
		},
		{
			name: "filter",
			steps: []goldenStep{
				{wait: ready},
				{keys: keys("/"), text: "claude", wait: []string{"3 of 7 panes"}},
			},
		},
		{
			name: "empty",
			svc: func(t *testing.T) *monitortest.Service {
				svc := newFixtureService(t)
				snap := fixtureSnapshot()
				snap.Sessions = nil
				svc.SetSnapshot(snap)
				return svc
			},
			steps: []goldenStep{{wait: []string{"system3 demo"}}},
		},
		{
			// The tmux server died with every pane: the dashboard says so,
			// not that nothing was started.
			name: "server_gone",
			svc: func(t *testing.T) *monitortest.Service {
				svc := newFixtureService(t)
				snap := fixtureSnapshot()
				snap.Sessions, snap.Running, snap.Problem = nil, false, "no tmux server is running on /tmp/tmux-1000/work"
				svc.SetSnapshot(snap)
				return svc
			},
			steps: []goldenStep{{wait: []string{"is not running", "system3 restore --all"}}},
		},
	}
	for _, f := range flows {
		for _, size := range goldenSizes {
			t.Run(fmt.Sprintf("%s_%dx%d", f.name, size[0], size[1]), func(t *testing.T) {
				mk := f.svc
				if mk == nil {
					mk = fixtureWithWakes
				}
				opts := f.opts
				opts.Clock = fixedClock
				m := New(backend.New(mk(t), f.parts), opts)
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(size[0], size[1]))
				for _, s := range f.steps {
					for _, k := range s.keys {
						tm.Send(k)
					}
					if s.text != "" {
						tm.Type(s.text)
					}
					if len(s.wait) > 0 {
						teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
							for _, w := range s.wait {
								if !bytes.Contains(b, []byte(w)) {
									return false
								}
							}
							return true
						}, teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
					}
				}
				tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
				final, ok := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
				if !ok {
					t.Fatal("the final model is not a Model")
				}
				golden.RequireEqual(t, []byte(final.View()))
			})
		}
	}
}
