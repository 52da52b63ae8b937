package monitor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/tmux"
)

// front is a fake of who holds a pane's terminal: the shell's name, the
// job it runs ("" at its prompt), and whether the terminal takes keys one
// at a time.
type front struct {
	mu       sync.Mutex
	shell    string
	job      string
	raw      bool
	rawAsked int
}

func (f *front) set(job string, raw bool) {
	f.mu.Lock()
	f.job, f.raw = job, raw
	f.mu.Unlock()
}

func (f *front) foreground(int) (string, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shell, f.job, true
}

func (f *front) rawTerminal(string) (bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rawAsked++
	return f.raw, true
}

// showText puts text on a pane's screen with cmd in the foreground.
func (f *fakeTmux) showText(pane, cmd, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.screens[pane] = text
	for i := range f.panes {
		if f.panes[i].ID == pane {
			f.panes[i].Command = cmd
			f.panes[i].Activity = f.panes[i].Activity.Add(time.Second)
			return
		}
	}
	f.panes = append(f.panes, tmux.Pane{ID: pane, SessionName: "orch-" + strings.TrimPrefix(pane, "%"), Command: cmd, PID: 100, Width: 100, Height: 30, Activity: time.Unix(1, 0)})
}

const pickerMenu = "Deploy v2 to production?\n❯ 1. Yes\n  2. No\n\n↑/↓ to move · enter to choose\n"

// A program no agent package knows, run from a shell, that shows a
// numbered choice list with a selection marker: unknown while its screen
// keeps changing, a guessed awaiting_input with its wake once the same
// screen has stayed unchanged for unmatched_after, never answered by
// system3, and exited (with no wake) once the shell holds its terminal
// again, until the shell runs another command.
func TestGuessedPromptOfAnUnknownProgram(t *testing.T) {
	f := &front{shell: "bash"}
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) {
		c.Foreground, c.RawTerminal = f.foreground, f.rawTerminal
		c.Send, c.Audit = snd, audit.Open(t.TempDir())
	})
	session := func() api.Session { return h.session("%1") }

	f.set("picker", true)
	h.tm.showText("%1", "picker", "Loading 1\n"+pickerMenu)
	h.step()
	if s := session(); s.State != api.Unknown || s.Evidence.Rule != api.RuleUnknownProgram || s.Agent != "" ||
		len(s.Evidence.Lines) != 1 || !strings.Contains(s.Evidence.Lines[0], "no agent package knows picker") {
		t.Fatalf("a list just drawn = %+v", s)
	}
	// Still printing: each screen differs, so none has settled.
	for i := 2; i <= 5; i++ {
		h.clock.Add(time.Second)
		h.tm.showText("%1", "picker", "Loading "+string(rune('0'+i))+"\n"+pickerMenu)
		h.step()
		if s := session(); s.State != api.Unknown {
			t.Fatalf("while printing (%d s) = %s by %s", i, s.State, s.Evidence.Rule)
		}
	}
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 0 {
		t.Fatalf("wakes while printing: %+v", w)
	}
	// It stops: no event comes, the monitor looks again by itself.
	h.clock.Add(h.sup.guessSettle())
	h.step()
	h.step()
	s := session()
	if s.State != api.AwaitingInput || s.Kind != "other" || s.Evidence.Rule != api.RuleGuessChoice || s.Evidence.Source != "screen" ||
		s.Question != "Deploy v2 to production?" || !slices.Equal(s.Options, []string{"Yes", "No"}) || s.Agent != "" || s.Prompt == "" {
		t.Fatalf("once stopped = %+v", s)
	}
	if l := s.Evidence.Lines; len(l) != 2 || !strings.HasPrefix(l[0], "a guess: no agent package knows picker") ||
		!strings.Contains(l[0], "output has stopped (the same screen for 3s)") || l[1] != "❯ 1. Yes" {
		t.Fatalf("evidence = %q", l)
	}
	w := h.unacked(api.ReasonAwaitingInput)
	if len(w) != 1 || w[0].Evidence.Rule != api.RuleGuessChoice || !slices.Equal(w[0].Options, []string{"Yes", "No"}) ||
		!strings.Contains(w[0].SuggestedAction, "a guess") || !strings.Contains(w[0].SuggestedAction, "does not type into a prompt it guessed") {
		t.Fatalf("wakes = %+v", w)
	}

	// system3 chooses no key for it, by session or by its wake.
	for _, req := range []api.AnswerRequest{
		{Target: api.Target{Pane: "%1"}, Answer: "1", Origin: "test"},
		{Wake: w[0].ID, Answer: "yes", Origin: "test"},
	} {
		_, err := h.sup.Answer(context.Background(), req)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "is a guess") {
			t.Fatalf("answer %+v = %v", req, err)
		}
	}
	if len(snd.calls) != 0 {
		t.Fatalf("typed into a guessed prompt: %q", snd.calls)
	}

	// The program exits: its shell holds the terminal again.
	f.set("", false)
	h.tm.showText("%1", "bash", "$ picker\n$ ")
	h.step()
	s = session()
	if s.State != api.Exited || s.Kind != "process_gone" || s.Evidence.Rule != ruleProgramLeft || s.Evidence.Source != "process" ||
		s.Agent != "" || !strings.Contains(s.Evidence.Lines[0], "picker (a program no agent package knows) is no longer running") {
		t.Fatalf("after the program exited = %+v", s)
	}
	if w := h.allWakes(api.ReasonAwaitingInput); len(w) != 1 || !w[0].Resolved {
		t.Fatalf("the guessed prompt's wake after the exit: %+v", w)
	}
	if w := h.allWakes(api.ReasonWorkerFailed); len(w) != 0 {
		t.Fatalf("worker_failed for a program that is no agent: %+v", w)
	}
	// A minute later, and while a command is typed at the prompt, it
	// still has.
	h.clock.Add(time.Minute)
	h.tm.showText("%1", "bash", "$ picker\n$ l")
	h.step()
	if s := session(); s.State != api.Exited {
		t.Fatalf("typing at the prompt after it = %s", s.State)
	}
	// A command ran, too short for any capture to see it in front: the
	// pane is the shell's again.
	h.tm.showText("%1", "bash", "$ picker\n$ ls\nREADME.md\n$ ")
	h.step()
	if s := session(); s.State != api.Idle || s.Agent != "shell" {
		t.Fatalf("after ls = %+v", s)
	}

	// Again, and the shell runs a command seen in front.
	f.set("picker", true)
	h.tm.showText("%1", "picker", pickerMenu)
	h.step()
	f.set("", false)
	h.tm.showText("%1", "bash", "$ picker\n$ ")
	h.step()
	if s := session(); s.State != api.Exited {
		t.Fatalf("after the program exited again = %s", s.State)
	}
	f.set("sleep", false)
	h.tm.showText("%1", "sleep", "$ picker\n$ sleep 1\n")
	h.step()
	if s := session(); s.State != api.Working || s.Evidence.Rule != api.RuleShellJob {
		t.Fatalf("running sleep = %+v", s)
	}
	f.set("", false)
	h.tm.showText("%1", "bash", "$ picker\n$ sleep 1\n$ ")
	h.step()
	if s := session(); s.State != api.Idle {
		t.Fatalf("after sleep = %+v", s)
	}
}

// A guessed prompt that goes before its screen has settled is never
// taken: the settle starts again with each new screen.
func TestGuessSettlesOnTheSameScreenOnly(t *testing.T) {
	f := &front{shell: "bash"}
	h := newHarness(t, func(c *Config) { c.Foreground, c.RawTerminal = f.foreground, f.rawTerminal })
	f.set("picker", true)
	h.tm.showText("%1", "picker", pickerMenu)
	h.step()
	h.clock.Add(h.sup.guessSettle() - time.Millisecond)
	h.tm.showText("%1", "picker", strings.Replace(pickerMenu, "❯ 1. Yes\n  2. No", "  1. Yes\n❯ 2. No", 1))
	h.step()
	if s := h.session("%1"); s.State != api.Unknown {
		t.Fatalf("a new screen just drawn = %s by %s", s.State, s.Evidence.Rule)
	}
	h.clock.Add(h.sup.guessSettle())
	h.step()
	h.step()
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Evidence.Lines[1] != "❯ 2. No" {
		t.Fatalf("settled = %+v", s)
	}
}

// A plain shell pane is never a guessed prompt nor an exited program:
// a command it runs that does not take keys one at a time is work, the
// shell at its prompt is idle, whatever list they printed, and the
// terminal's mode is not even read while the shell holds it.
func TestPlainShellIsNeverGuessedNorExited(t *testing.T) {
	f := &front{shell: "bash"}
	h := newHarness(t, func(c *Config) { c.Foreground, c.RawTerminal = f.foreground, f.rawTerminal })
	list := "$ cat menu.txt\n> 1. Yes\n  2. No\n"
	steps := []struct {
		job, cmd, screen string
		state            api.State
	}{
		{"", "bash", "$ ", api.Idle},
		{"cat", "cat", list, api.Working},
		{"", "bash", list + "$ ", api.Idle},
		{"ls", "ls", "$ ls\n", api.Working},
		{"", "bash", list + "$ ls\nREADME.md\n$ ", api.Idle},
	}
	for _, st := range steps {
		f.set(st.job, false)
		h.tm.showText("%1", st.cmd, st.screen)
		for range 2 {
			h.step()
			h.clock.Add(h.sup.guessSettle())
		}
		if s := h.session("%1"); s.State != st.state || s.Agent != "shell" {
			t.Fatalf("%s %q = %+v", st.cmd, st.screen, s)
		}
	}
	f.mu.Lock()
	asked := f.rawAsked
	f.mu.Unlock()
	if asked != 2 {
		t.Fatalf("the terminal's mode was read %d times; want once while cat ran and once while ls did", asked)
	}
	if w := h.store.Unacked(); len(w) != 0 {
		t.Fatalf("wakes for a shell pane: %+v", w)
	}
}
