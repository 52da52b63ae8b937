package rules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// A numbered choice list with a selection marker at the bottom of the
// screen is read with its question and options; a numbered list that is
// no choice (output, a document, a quotation, a list a REPL printed above
// its prompt) is not.
func TestGuessChoice(t *testing.T) {
	for _, tc := range []struct {
		name, screen string
		question     string
		options      []string // nil: no choice list
		marked       string
	}{
		{name: "caret and digits",
			screen:   "Installing hooks\n\nDo you want to proceed?\n❯ 1. Yes\n  2. Yes, and don't ask again\n  3. No\n\nEsc to cancel · Tab to amend\n",
			question: "Do you want to proceed?", options: []string{"Yes", "Yes, and don't ask again", "No"}, marked: "❯ 1. Yes"},
		{name: "angle and parenthesis, marker on the second",
			screen:   "Which environment?\n  1) staging\n> 2) production\n",
			question: "Which environment?", options: []string{"staging", "production"}, marked: "> 2) production"},
		{name: "codex-like, indented",
			screen:   "  Would you like to run the following command?\n\n  › 1. Yes, proceed (y)\n    2. No, and tell me what to do differently (esc)\n\n  Press enter to confirm or esc to cancel\n",
			question: "Would you like to run the following command?", options: []string{"Yes, proceed (y)", "No, and tell me what to do differently (esc)"}, marked: "› 1. Yes, proceed (y)"},
		{name: "in a box",
			screen:   "╭──────────────────────╮\n│ Pick a database:     │\n│ ❯ 1. Postgres        │\n│   2. SQLite          │\n╰──────────────────────╯\n",
			question: "Pick a database:", options: []string{"Postgres", "SQLite"}, marked: "│ ❯ 1. Postgres        │"},
		{name: "descriptions under the options",
			screen:   "Which database should we use?\n\n❯ 1. Postgres\n     Relational, runs as a server\n  2. SQLite\n     Embedded, one file\n\nEnter to select · ↑/↓ to navigate\n",
			question: "Which database should we use?", options: []string{"Postgres", "SQLite"}, marked: "❯ 1. Postgres"},
		{name: "a rule above: no question",
			screen:  "──────────────────────\n❯ 1. Continue\n  2. Quit\n",
			options: []string{"Continue", "Quit"}, marked: "❯ 1. Continue"},
		{name: "ten options",
			screen:   "Pick:\n  1. a\n  2. b\n  3. c\n  4. d\n  5. e\n  6. f\n  7. g\n  8. h\n❯ 9. i\n  10. j\n",
			question: "Pick:", options: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, marked: "❯ 9. i"},

		{name: "output: no marker", screen: "Steps to reproduce:\n1. build\n2. run the tests\n3. read the log\n"},
		{name: "a document in a pager", screen: "# Release\n\n1. Tag the commit\n2. Push the tag\n3. Publish\n:"},
		{name: "a quotation: a marker on every line", screen: "> 1. first\n> 2. second\n> 3. third\n"},
		{name: "a shell prompt under it", screen: "> 1. first\n  2. second\n$ "},
		{name: "a REPL prompt under it", screen: ">>> print(menu)\n> 1. first\n  2. second\n>>> "},
		{name: "one option", screen: "Ready?\n❯ 1. Start\n"},
		{name: "a gap in the numbers", screen: "❯ 1. first\n  3. third\n"},
		{name: "not from 1", screen: "❯ 2. second\n  3. third\n"},
		{name: "numbers out of line", screen: "❯ 1. first\n      2. second\n"},
		{name: "two markers", screen: "❯ 1. first\n❯ 2. second\n"},
		{name: "output after it", screen: "❯ 1. first\n  2. second\nbuilding\ncompiling a\ncompiling b\nlinking\ndone\n"},
		{name: "text between the options", screen: "❯ 1. first\nsome output\n  2. second\n"},
		{name: "an empty screen", screen: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := guessChoice(NewScreen(tc.screen))
			if tc.options == nil {
				if ok {
					t.Fatalf("read as a choice: %+v", c)
				}
				return
			}
			if !ok {
				t.Fatal("no choice list read")
			}
			if c.question != tc.question || !slices.Equal(c.options, tc.options) || c.marked != tc.marked {
				t.Fatalf("read %q %q marked %q; want %q %q marked %q", c.question, c.options, c.marked, tc.question, tc.options, tc.marked)
			}
		})
	}
}

// A program no agent package knows that takes keys one at a time is
// unknown, saying why, or a guessed prompt when its screen ends with a
// choice list; a shell, a pager, a pane where an agent is recognised, and
// a command that does not take keys one at a time are what they were.
func TestUnknownProgram(t *testing.T) {
	e := engine(t)
	menu := "Deploy to production?\n❯ 1. Yes\n  2. No\n"
	permission, err := os.ReadFile(filepath.Join("..", "testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		in    Input
		state api.State
		rule  string
		agent string
	}{
		{"a shell's job with a choice list", Input{Screen: menu, Processes: []string{"picker"}, Shell: "bash", Job: "picker", Raw: true}, api.AwaitingInput, api.RuleGuessChoice, ""},
		{"a shell's job with no list", Input{Screen: "CPU 12%  MEM 40%\n", Processes: []string{"htop"}, Shell: "bash", Job: "htop", Raw: true}, api.Unknown, api.RuleUnknownProgram, ""},
		{"the pane's own program", Input{Screen: menu, Processes: []string{"picker"}, Raw: true}, api.AwaitingInput, api.RuleGuessChoice, ""},
		{"a job that does not take keys one at a time", Input{Screen: menu, Processes: []string{"picker"}, Shell: "bash", Job: "picker"}, api.Working, api.RuleShellJob, "shell"},
		{"the pane's own program, not raw", Input{Screen: menu, Processes: []string{"picker"}}, api.Unknown, api.RuleNoMatch, ""},
		{"the shell at its prompt", Input{Screen: "> 1. first\n  2. second\n$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "shell.prompt", "shell"},
		{"a child shell", Input{Screen: menu, Processes: []string{"bash"}, Shell: "bash", Job: "bash", Raw: true}, api.Working, api.RuleShellJob, "shell"},
		{"a pager", Input{Screen: menu, Processes: []string{"less"}, Shell: "bash", Job: "less", Raw: true}, api.Unknown, api.RuleNoMatch, ""},
		{"a pager under git", Input{Screen: menu, Processes: []string{"git", "less"}, Shell: "bash", Job: "git", Raw: true}, api.Working, api.RuleShellJob, "shell"},
		{"a known agent", Input{Screen: string(permission), Processes: []string{"claude"}, Shell: "bash", Job: "claude", Raw: true}, api.AwaitingInput, "claude.permission", "claude"},
		{"a known agent by its arguments", Input{Screen: menu, Processes: []string{"node"}, Cmdlines: []string{"node /usr/lib/node_modules/@google/gemini-cli/dist/index.js"}, Shell: "bash", Job: "node", Raw: true}, api.Unknown, api.RuleNoMatch, "gemini"},
		{"a dead pane", Input{Screen: menu, Processes: []string{"picker"}, Raw: true, Dead: true}, api.Exited, api.RulePaneDead, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.Classify(tc.in)
			if got.State != tc.state || got.Rule != tc.rule || got.Agent != tc.agent {
				t.Fatalf("%s by %s, agent %q (evidence %q); want %s by %s, agent %q", got.State, got.Rule, got.Agent, got.Evidence, tc.state, tc.rule, tc.agent)
			}
			switch got.Rule {
			case api.RuleGuessChoice:
				if got.Kind != "other" || got.Question != "Deploy to production?" || !slices.Equal(got.Options, []string{"Yes", "No"}) ||
					got.Program != "picker" || len(got.Evidence) != 2 || !strings.HasPrefix(got.Evidence[0], "a guess: no agent package knows picker") || got.Evidence[1] != "❯ 1. Yes" {
					t.Fatalf("guess = %+v", got)
				}
			case api.RuleUnknownProgram:
				if got.Program != "htop" || len(got.Evidence) != 1 || !strings.Contains(got.Evidence[0], "no agent package knows htop (bash runs it in the foreground and takes keys one at a time)") {
					t.Fatalf("unknown program = %+v", got)
				}
			}
		})
	}
}

// No agent's screen is taken for an unknown program's, whatever keys its
// terminal takes: each agent's own rules decide its panes.
func TestKnownAgentsAreNeverGuessed(t *testing.T) {
	e := engine(t)
	root := filepath.Join("..", "testdata", "captures")
	for _, p := range captureFiles(t) {
		rel, _ := filepath.Rel(root, p)
		owner, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		proc, ok := processOf[owner]
		if !ok {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseCapture(rel, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []Input{
			{Screen: c.Screen, Processes: []string{proc}, Shell: "bash", Job: proc, Raw: true},
			{Screen: c.Screen, Processes: []string{proc}, Raw: true},
		} {
			if got := e.Classify(in); got.Agent != owner || got.Rule == api.RuleGuessChoice || got.Rule == api.RuleUnknownProgram {
				t.Errorf("%s with %s taking keys one at a time: %q, %s by %s", rel, proc, got.Agent, got.State, got.Rule)
			}
		}
	}
}

// FuzzGuessChoice reads any screen: a list it reads has at least two
// options, none blank or untrimmed, and its marked line is on the screen.
func FuzzGuessChoice(f *testing.F) {
	for _, p := range captureFiles(f) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("Pick:\n❯ 1. a\n  2. b\n")
	f.Add("│ ❯ 1. a │\n│   2. b │\n")
	f.Add("> 1) a\n  2) b\n\n\n\nhint\n")
	f.Fuzz(func(t *testing.T, screen string) {
		s := NewScreen(screen)
		c, ok := guessChoice(s)
		if !ok {
			return
		}
		if len(c.options) < 2 {
			t.Fatalf("a choice of %d options: %+v", len(c.options), c)
		}
		for _, o := range c.options {
			if o == "" || o != strings.TrimSpace(o) {
				t.Fatalf("option %q is blank or untrimmed", o)
			}
		}
		if !slices.ContainsFunc(s.Lines, func(l string) bool { return strings.TrimSpace(l) == c.marked }) {
			t.Fatalf("marked line %q is not on the screen", c.marked)
		}
	})
}

// A capture of an unknown program's pane keeps that its terminal took keys
// one at a time ("raw: yes"), so it classifies as the monitor saw it.
func TestCaptureOfAnUnknownProgram(t *testing.T) {
	data := "# system3 capture v1\n# state: awaiting_input\n# kind: other\n# process: picker\n# shell: bash\n# job: picker\n# raw: yes\n# ---\nDeploy?\n❯ 1. Yes\n  2. No\n"
	c, err := ParseCapture("picker.txt", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := engine(t).Classify(c.Input()); got.State != c.State || got.Kind != c.Kind || got.Rule != api.RuleGuessChoice {
		t.Fatalf("%s/%s by %s", got.State, got.Kind, got.Rule)
	}
	c, err = ParseCapture("picker.txt", []byte(strings.Replace(data, "# raw: yes\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := engine(t).Classify(c.Input()); got.Rule != api.RuleShellJob {
		t.Fatalf("without raw: %s by %s", got.State, got.Rule)
	}
}
