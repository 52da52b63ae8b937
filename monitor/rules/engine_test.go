package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

func TestAgentDetection(t *testing.T) {
	e := engine(t)
	idle, err := os.ReadFile("../testdata/captures/claude/idle.txt")
	if err != nil {
		t.Fatal(err)
	}
	exited, err := os.ReadFile("../testdata/captures/claude/exited_shell.txt")
	if err != nil {
		t.Fatal(err)
	}
	permission, err := os.ReadFile("../testdata/captures/claude/permission_bash.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		in        Input
		agent, by string
		state     api.State
		rule      string
	}{
		{"claude process, plain screen", Input{Screen: "hello\n", Processes: []string{"claude"}}, "claude", "process", api.Unknown, api.RuleNoMatch},
		{"wrapper shell running claude", Input{Screen: string(idle), Processes: []string{"bash", "claude"}}, "claude", "process", api.Idle, "claude.idle"},
		{"claude through node, by screen", Input{Screen: string(idle), Processes: []string{"node"}}, "claude", "screen", api.Idle, "claude.idle"},
		{"claude screen left over in a shell", Input{Screen: string(idle), Processes: []string{"zsh"}}, "claude", "screen", api.Exited, api.RuleProcessGone},
		{"claude exit screen in a shell", Input{Screen: string(exited), Processes: []string{"bash"}}, "claude", "screen", api.Exited, "claude.exited"},
		{"dead pane", Input{Screen: string(idle), Processes: []string{"claude"}, Dead: true, DeadStatus: 137}, "claude", "process", api.Exited, api.RulePaneDead},
		{"given agent", Input{Screen: string(idle), Agent: "claude"}, "claude", "given", api.Idle, "claude.idle"},
		{"plain shell", Input{Screen: "$ ls\nfile\n$ ", Processes: []string{"bash"}}, "shell", "process", api.Idle, "shell.prompt"},
		{"unknown program", Input{Screen: "compiling...\n", Processes: []string{"make"}}, "", "", api.Unknown, api.RuleNoMatch},
		// A pager or editor showing an agent's screen is not the agent.
		{"claude's prompt in less", Input{Screen: string(permission), Processes: []string{"less"}}, "", "", api.Unknown, api.RuleNoMatch},
		{"claude's screen in vim", Input{Screen: string(idle), Processes: []string{"vim"}}, "", "", api.Unknown, api.RuleNoMatch},
		// Claude Code's own external editor (ctrl-g) runs under claude.
		{"vim opened by claude", Input{Screen: string(idle), Processes: []string{"vim", "claude"}}, "claude", "process", api.Idle, "claude.idle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.Classify(tt.in)
			if got.Agent != tt.agent || got.AgentBy != tt.by || got.State != tt.state || got.Rule != tt.rule {
				t.Fatalf("got agent %q by %q, %s by %s; want %q by %q, %s by %s (evidence %q)",
					got.Agent, got.AgentBy, got.State, got.Rule, tt.agent, tt.by, tt.state, tt.rule, got.Evidence)
			}
			if len(got.Evidence) == 0 && got.Rule != api.RuleNoMatch {
				t.Errorf("no evidence")
			}
			if p := tt.in.Processes; len(p) == 1 && (p[0] == "less" || p[0] == "vim") &&
				(got.Kind != "viewer" || len(got.Evidence) != 1 || !strings.Contains(got.Evidence[0], "pager or editor")) {
				t.Errorf("a viewer's result = kind %q, evidence %q", got.Kind, got.Evidence)
			}
		})
	}
}

func TestIsAgentProcess(t *testing.T) {
	e := engine(t)
	for name, want := range map[string]bool{"claude": true, "codex": true, "bash": false, "node": false, "less": false, "vim": false, "": false} {
		if got := e.IsAgentProcess(name); got != want {
			t.Errorf("IsAgentProcess(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestStaleErrorAboveNewTurnIsIgnored(t *testing.T) {
	// An API error from an earlier turn stays on screen after the user sends
	// a new prompt; only the current turn may decide the state.
	screen := strings.Join([]string{
		"❯ first try",
		"● API Error: 500 Internal server error. This is a server-side issue",
		"❯ try again please",
		"● Done, all tests pass.",
		"✻ Brewed for 3s · done 5:40 AM",
		strings.Repeat("─", 40),
		"❯ ",
		strings.Repeat("─", 40),
		"  ⏸ manual mode on · ? for shortcuts",
	}, "\n")
	got := engine(t).Classify(Input{Screen: screen, Processes: []string{"claude"}})
	if got.State != api.Idle {
		t.Fatalf("state = %s by %s (%q), want idle", got.State, got.Rule, got.Evidence)
	}
}

func TestUserRulesExtendAndOverride(t *testing.T) {
	user := Source{Name: "/home/u/.config/system3/rules.yaml", Data: []byte(`
version: 1
agents:
  - name: mybot
    processes: ['^mybot$']
rules:
  - id: mybot.asks
    agents: [mybot]
    state: awaiting_input
    kind: question
    priority: 50
    match:
      - regexp: '^\? (.+)$'
    extract:
      question: '^\? (?P<question>.+)$'
      option: '^\s+\[(?P<label>\w+(?: for \S+)?)\]'
      option_scope: ' for \S+$'
  - id: shell.prompt
    agents: [shell]
    state: idle
    priority: 10
    region: bottom:1
    match:
      - contains: 'READY>'
disable: [claude.compacting]
`)}
	e, err := New(Builtin(), user)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Classify(Input{Screen: "working\n? Deploy now\n  [yes]\n  [no]\n", Processes: []string{"mybot"}})
	if got.Rule != "mybot.asks" || got.Question != "Deploy now" || strings.Join(got.Options, ",") != "yes,no" {
		t.Fatalf("user rule: %+v", got)
	}
	// option_scope: the part an agent may redraw is shown, not counted.
	got = e.Classify(Input{Screen: "? Deploy now\n  [always for prod]\n  [no]\n", Processes: []string{"mybot"}})
	if strings.Join(got.Options, ",") != "always for prod,no" || strings.Join(got.IdentityOptions, ",") != "always,no" {
		t.Fatalf("option_scope: options %q, identity options %q", got.Options, got.IdentityOptions)
	}
	if got := e.Classify(Input{Screen: "$ ", Processes: []string{"bash"}}); got.State != api.Unknown {
		t.Fatalf("overridden shell.prompt still matches a $ prompt: %+v", got)
	}
	if got := e.Classify(Input{Screen: "READY>", Processes: []string{"bash"}}); got.Rule != "shell.prompt" {
		t.Fatalf("override not applied: %+v", got)
	}
	for _, r := range e.Rules() {
		if r.ID == "claude.compacting" {
			t.Fatalf("disabled rule still active")
		}
		if r.ID == "shell.prompt" && r.Source != user.Name {
			t.Fatalf("source of overridden rule = %q", r.Source)
		}
	}
}

func TestRuleFileErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"bad version", "version: 9\n", "version 9"},
		{"unknown field", "version: 1\nrules:\n  - id: x\n    stat: idle\n", "stat"},
		{"unknown state", "version: 1\nrules:\n  - id: x\n    state: sleepy\n    match: [{contains: a}]\n", `unknown state "sleepy"`},
		{"wrong kind", "version: 1\nrules:\n  - id: x\n    state: error\n    kind: permission\n    match: [{contains: a}]\n", "kind"},
		{"no match", "version: 1\nrules:\n  - id: x\n    state: idle\n", "no match"},
		{"bad regexp", "version: 1\nrules:\n  - id: x\n    state: idle\n    match: [{regexp: '('}]\n", "regexp"},
		{"bad option_scope", "version: 1\nrules:\n  - id: x\n    state: awaiting_input\n    kind: question\n    match: [{contains: a}]\n    extract: {option_scope: '[z-a]'}\n", "option_scope regexp"},
		{"bad region", "version: 1\nrules:\n  - id: x\n    state: idle\n    region: middle\n    match: [{contains: a}]\n", "unknown region"},
		{"both kinds of match", "version: 1\nrules:\n  - id: x\n    state: idle\n    match: [{contains: a, regexp: b}]\n", "not both"},
		{"unknown agent", "version: 1\nrules:\n  - id: x\n    agents: [nobody]\n    state: idle\n    match: [{contains: a}]\n", `agent "nobody"`},
		{"duplicate id", "version: 1\nrules:\n  - {id: x, state: idle, match: [{contains: a}]}\n  - {id: x, state: idle, match: [{contains: b}]}\n", "defined twice"},
		{"disable unknown", "version: 1\ndisable: [nope]\n", "no rule with id nope"},
		{"error loop from screen", "version: 1\nrules:\n  - id: x\n    state: error_loop\n    match: [{contains: a}]\n", "error_loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Builtin(), Source{Name: "user.yaml", Data: []byte(tt.yaml)})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "user.yaml") {
				t.Fatalf("err = %v, want it to name user.yaml and mention %q", err, tt.want)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := LoadFile(filepath.Join(dir, "rules.yaml")); ok || err != nil {
		t.Fatalf("missing file: ok=%v err=%v", ok, err)
	}
	p := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(p, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, ok, err := LoadFile(p)
	if !ok || err != nil || src.Name != p {
		t.Fatalf("ok=%v err=%v src=%v", ok, err, src.Name)
	}
}

func TestRegions(t *testing.T) {
	rule := strings.Repeat("─", 20)
	s := NewScreen("history\n❯ do it\nout 1\nout 2\n\n" + rule + "\n❯ typed text\n" + rule + "\n  footer hint\n\n\n")
	tests := []struct {
		region string
		want   []string
	}{
		{"input", []string{"❯ typed text"}},
		{"footer", []string{"  footer hint"}},
		{"above_input:2", []string{"out 1", "out 2", ""}},
		{"turn", []string{"❯ do it", "out 1", "out 2", ""}},
		{"bottom:2", []string{rule, "  footer hint"}},
		{"whole", s.Lines},
	}
	for _, tt := range tests {
		r, err := parseRegion(tt.region)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := s.bounds(r)
		if got := s.Lines[lo:hi]; strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s = %q, want %q", tt.region, got, tt.want)
		}
	}
	if s.InputText() != "typed text" {
		t.Errorf("input text = %q", s.InputText())
	}
}

// TestTurnEndsAtTheRuleAboveAnInputLine: with no input box, the turn ends
// at the last rule near the bottom when only an input line and a footer
// follow it (what is typed there is not submitted); a rule with more below
// it is the conversation's, and the turn runs to the bottom.
func TestTurnEndsAtTheRuleAboveAnInputLine(t *testing.T) {
	rule := strings.Repeat("─", 20)
	turn := func(screen string) []string {
		s := NewScreen(screen)
		s.prompts = regexp.MustCompile(`^ > \S`)
		r, err := parseRegion("turn")
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := s.bounds(r)
		return s.Lines[lo:hi]
	}
	got := turn(" > do it\n✕ failed\n" + rule + "\n hint\n > typed\n footer 1\n footer 2\n")
	if want := []string{" > do it", "✕ failed"}; !slices.Equal(got, want) {
		t.Errorf("turn above an input line = %q, want %q", got, want)
	}
	long := " > first\nold error\n" + rule + "\n" + strings.Repeat("output\n", 6) + " > second\nnew error\n footer\n"
	if got := turn(long); len(got) == 0 || got[0] != " > second" || got[len(got)-1] != " footer" {
		t.Errorf("turn below a rule of the conversation = %q, want from \" > second\" to the bottom", got)
	}
}

func TestStripANSI(t *testing.T) {
	in := "\x1b[1;31mred\x1b[0m \x1b]0;title\x07plain \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b(Bdone\x1b"
	if got := StripANSI(in); got != "red plain link done" {
		t.Fatalf("StripANSI = %q", got)
	}
}

func bigCapture(lines int) string {
	data, err := os.ReadFile("../testdata/captures/claude/permission_bash.txt")
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for i := 0; i < lines-30; i++ {
		fmt.Fprintf(&b, "● line %d of output: the quick brown fox jumps over the lazy dog\n", i)
	}
	b.Write(data)
	return b.String()
}

func BenchmarkClassify2000Lines(b *testing.B) {
	e, err := New(Builtin())
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Screen: bigCapture(2000), Processes: []string{"claude"}}
	b.SetBytes(int64(len(in.Screen)))
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Classify(in); r.State != api.AwaitingInput {
			b.Fatalf("state %s", r.State)
		}
	}
}

func BenchmarkClassify2000LinesDetectByScreen(b *testing.B) {
	e, err := New(Builtin())
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Screen: bigCapture(2000)}
	b.ReportAllocs()
	for b.Loop() {
		e.Classify(in)
	}
}

func FuzzClassify(f *testing.F) {
	files := captureFiles(f)
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data), "")
		}
	}
	f.Add("\x1b[", "claude")
	f.Add("────────────\n❯\n────────────", "")
	e, err := New(Builtin())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, screen, proc string) {
		in := Input{Screen: screen}
		if proc != "" {
			in.Processes = []string{proc}
		}
		r := e.Classify(in)
		if !r.State.Valid() || r.Rule == "" || r.Evidence == nil || r.Options == nil {
			t.Fatalf("invalid result %+v", r)
		}
		if !validKind(r.State, r.Kind) {
			t.Fatalf("kind %q not valid for %s", r.Kind, r.State)
		}
	})
}

func TestShellStates(t *testing.T) {
	e := engine(t)
	tests := []struct {
		name  string
		in    Input
		state api.State
		kind  string
		rule  string
	}{
		{"at its prompt", Input{Screen: "$ ls\nfile\nuser@host:~$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "", "shell.prompt"},
		{"prompt no rule knows, shell in front", Input{Screen: "$ ls\nfile\n[user@host ~]: ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "", api.RuleShellPrompt},
		{"prompt no rule knows, foreground unknown", Input{Screen: "$ ls\nfile\n[user@host ~]: ", Processes: []string{"bash"}}, api.Unknown, "", api.RuleNoMatch},
		{"running a command", Input{Screen: "$ sleep 30\n", Processes: []string{"sleep"}, Shell: "bash", Job: "sleep"}, api.Working, "", api.RuleShellJob},
		{"running a script in a child shell", Input{Screen: "$ ./build.sh\ncompiling\n$ ", Processes: []string{"bash", "bash", "make"}, Shell: "bash", Job: "bash"}, api.Working, "", api.RuleShellJob},
		{"running a command that printed a prompt", Input{Screen: "$ cat notes\n$ ", Processes: []string{"cat"}, Shell: "sh", Job: "cat"}, api.Working, "", api.RuleShellJob},
		{"a pager is not work", Input{Screen: "some text\n:", Processes: []string{"less"}, Shell: "bash", Job: "less"}, api.Unknown, "viewer", api.RuleNoMatch},
		{"command not found", Input{Screen: "$ nosuch\nbash: nosuch: command not found\n$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Error, "command", "shell.failed"},
		{"dash not found", Input{Screen: "$ nosuch\nsh: 1: nosuch: not found\n$ ", Processes: []string{"sh"}, Shell: "sh"}, api.Error, "command", "shell.failed"},
		{"zsh not found", Input{Screen: "% nosuch\nzsh: command not found: nosuch\n% ", Processes: []string{"zsh"}, Shell: "zsh"}, api.Error, "command", "shell.failed"},
		{"killed by a signal", Input{Screen: "$ ./server\nKilled\n$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Error, "command", "shell.failed"},
		{"core dump", Input{Screen: "$ ./a.out\nSegmentation fault (core dumped)\n$ ", Processes: []string{"bash"}}, api.Error, "command", "shell.failed"},
		{"status in the prompt", Input{Screen: "$ false\n✘ 1 ~/src $ ", Processes: []string{"bash"}, Shell: "bash"}, api.Error, "command", "shell.failed"},
		{"status zero in the prompt", Input{Screen: "$ true\n[exit 0] ~/src $ ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "", "shell.prompt"},
		{"a failure the user moved past", Input{Screen: "$ nosuch\nbash: nosuch: command not found\n$ \n$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "", "shell.prompt"},
		{"a failure message the command printed, then more", Input{Screen: "$ ./t\nbash: x: command not found\nall good\n$ ", Processes: []string{"bash"}, Shell: "bash"}, api.Idle, "", "shell.prompt"},
		{"dead pane", Input{Screen: "$ exit\n", Processes: []string{"bash"}, Dead: true, DeadStatus: 1}, api.Exited, "dead", api.RulePaneDead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.Classify(tt.in)
			if got.State != tt.state || got.Kind != tt.kind || got.Rule != tt.rule {
				t.Fatalf("got %s/%s by %s (agent %q, evidence %q); want %s/%s by %s", got.State, got.Kind, got.Rule, got.Agent, got.Evidence, tt.state, tt.kind, tt.rule)
			}
			if len(got.Evidence) == 0 {
				t.Errorf("no evidence")
			}
			if tt.state != api.Unknown && got.Agent != "shell" {
				t.Errorf("agent = %q, want shell", got.Agent)
			}
		})
	}
}

func TestScreenVersion(t *testing.T) {
	e := engine(t)
	screen := " ▐▛███▜▌   Claude Code v2.1.330\n▝▜█████▛▘  Sonnet 4.5 · API Usage Billing\n\n❯ \n"
	if got := e.ScreenVersion("claude", screen); got != "2.1.330" {
		t.Errorf("claude version = %q, want 2.1.330", got)
	}
	if got := e.ScreenVersion("claude", "no banner\n"); got != "" {
		t.Errorf("version without a banner = %q", got)
	}
	if got := e.ScreenVersion("shell", screen); got != "" {
		t.Errorf("shell has no version pattern, got %q", got)
	}
	if _, err := New(Builtin(), Source{Name: "u", Data: []byte("version: 1\nagents:\n  - name: x\n    version: 'v\\d+'\n")}); err == nil || !strings.Contains(err.Error(), "group") {
		t.Errorf("a version pattern without a group: err = %v", err)
	}
}

// TestGeminiByArguments: the Gemini CLI runs as node, so it is recognised
// by its command line, and only by a command line that runs it.
func TestGeminiByArguments(t *testing.T) {
	e := engine(t)
	screen := "$ \n"
	for _, tc := range []struct {
		cmdlines []string
		want     string
	}{
		{[]string{"node /home/u/e2e/node_modules/.bin/gemini"}, "gemini"},
		{[]string{"bash", "/opt/node22/bin/node --max-old-space-size=12052 /home/u/project/node_modules/.bin/gemini --resume latest"}, "gemini"},
		{[]string{"node /usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js -m gemini-2.5-pro"}, "gemini"},
		{[]string{"node /usr/local/bin/gemini"}, "gemini"},
		{[]string{"less /usr/lib/node_modules/@google/gemini-cli/README.md"}, "shell"},
		{[]string{"node server.js gemini"}, "shell"},
		{[]string{"node /srv/gemini-proxy/index.js"}, "shell"},
		{[]string{"vim /home/u/.gemini/settings.json"}, "shell"},
		{nil, "shell"},
	} {
		got := e.Classify(Input{Screen: screen, Processes: []string{"bash", "node"}, Cmdlines: tc.cmdlines})
		if got.Agent != tc.want || got.AgentBy != "process" {
			t.Errorf("%q: agent %q by %q, want %q by process", tc.cmdlines, got.Agent, got.AgentBy, tc.want)
		}
	}
	if !e.WantsArgs([]string{"bash", "node"}) {
		t.Error("WantsArgs(bash, node) = false; node may be the Gemini CLI")
	}
	if e.WantsArgs([]string{"bash", "claude"}) {
		t.Error("WantsArgs(bash, claude) = true; claude is known by name")
	}
}

func TestArgsRejectedOnShellsAndBadPatterns(t *testing.T) {
	for _, src := range []string{
		"version: 1\nagents:\n  - name: sh2\n    shell: true\n    processes: ['^sh2$']\n    args: ['x']\n",
		"version: 1\nagents:\n  - name: bad\n    args: ['(']\n",
	} {
		if _, err := New(Builtin(), Source{Name: "user.yaml", Data: []byte(src)}); err == nil {
			t.Errorf("accepted %q", src)
		}
	}
}
