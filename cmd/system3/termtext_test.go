package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/wake"
)

// hostilePrint holds what must never reach the operator's terminal raw:
// OSC 52 (clipboard), OSC 0 (title), OSC 8 (a disguised link), ED (clear),
// SGR 8 (concealed text), an 8-bit CSI and a bidi override.
const hostilePrint = "x\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\\x1b[2J\x1b[8mhidden\u009b31m\u202eexe.txt"

// rawTerminal finds what a terminal would act on: ESC, BEL, C1 controls,
// bidi controls.
var rawTerminal = regexp.MustCompile("[\x1b\x07\u0080-\u009f\u202a-\u202e\u2066-\u2069]")

// Every command that prints stored, screen, client or remote text prints
// it through the one sanitiser: hostile text in the wake journal, the
// learning store, the audit log, a task list and a capture file reaches
// stdout and stderr with nothing a terminal would act on.
func TestNoRawEscapeReachesTheTerminal(t *testing.T) {
	state := testkit.StateDir(t)
	tasksDir := t.TempDir()
	list := filepath.Join(tasksDir, "PRD-"+"X")
	if err := os.MkdirAll(list, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(list, "1.json"), []byte(`{"id":"1","subject":"`+jsonEscape(hostilePrint)+`","status":"in_progress","blocks":[],"blockedBy":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: state})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%1", Session: "orch-" + hostilePrint, Pane: "%1",
		Question: hostilePrint, Details: hostilePrint, Options: []string{hostilePrint, "No"}, SuggestedAction: hostilePrint}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := os.WriteFile(filepath.Join(state, "audit.jsonl"), []byte(`{"time":"2026-11-28T10:00:00Z","origin":"`+jsonEscape(hostilePrint)+`","action":"inject","target":"%1","pane":"`+jsonEscape(hostilePrint)+`","text":"`+jsonEscape(hostilePrint)+`","phase":"result","sent":true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(t.TempDir(), "screen.txt")
	if err := os.WriteFile(capture, []byte("Do you want to proceed?\n"+hostilePrint+"\n❯ 1. Yes\n  2. No\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir, "SYSTEM3_TMUX_SOCKET": "system3-none-" + t.Name()}
	// The learning store keeps text only: hostile text is refused there,
	// and the refusal prints safely too (below).
	if code, _, errOut := invoke(t, env, "outcome", "report", hostilePrint, "--outcome", "success", "--learning", "Keep "+hostilePrint); code == 0 || !strings.Contains(errOut, "byte offset") {
		t.Fatalf("outcome report with hostile text: exit %d, %s", code, errOut)
	}
	if code, _, errOut := invoke(t, env, "outcome", "report", "login", "--outcome", "success", "--learning", "Keep the tests green"); code != 0 {
		t.Fatalf("outcome report: %s", errOut)
	}
	// A learning an older system3 stored before text was checked.
	db, err := learn.OpenDB(filepath.Join(state, learn.FileName))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`INSERT INTO learnings(kind, text, norm, domain, created, last_seen, reported_by) VALUES ('pattern', ?, 'x', ?, 0, 0, ?)`,
		hostilePrint, hostilePrint, hostilePrint)
	if err != nil {
		t.Fatal(err)
	}
	planted, _ := res.LastInsertId()
	db.Close()
	for _, args := range [][]string{
		{"wakes", "--all"}, {"wakes", "--all", "--json"}, {"wait", "--include-resolved", "--timeout", "1s"},
		{"tasks"}, {"tasks", "PRD-X", "--task", "1"}, {"tasks", "--json"},
		{"audit"}, {"outcomes"}, {"reflect", hostilePrint}, {"capabilities"}, {"patterns"}, {"interventions"},
		{"learnings"}, {"learnings", "--json"}, {"learnings", "--domain", hostilePrint}, {"learnings", "delete", hostilePrint},
		{"learnings", "delete", strconv.FormatInt(planted, 10)},
		{"classify", capture}, {"classify", "--json", capture},
		{"ack", hostilePrint}, {"answer", "--session", hostilePrint, "1"},
		{"outcome", "report", hostilePrint, "--outcome", "success"},
	} {
		code, out, errOut := invoke(t, env, args...)
		if args[0] == "learnings" && len(args) == 1 && !strings.Contains(out, `\u001b]52;c;`) {
			t.Errorf("learnings does not list the planted learning:\n%s", out)
		}
		if m := rawTerminal.FindString(out + errOut); m != "" {
			t.Errorf("%s (exit %d) printed raw %q:\nstdout %q\nstderr %q", strings.Join(args, " "), code, m, out, errOut)
		}
	}
}

// jsonEscape is s as the inside of a JSON string.
func jsonEscape(s string) string {
	b := strings.Builder{}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\u00` + "0123456789abcdef"[r>>4:r>>4+1] + "0123456789abcdef"[r&15:r&15+1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Only the commands that draw on the terminal, or speak a protocol over
// it, write to it past the sanitiser: a new command that did would have to
// be named here.
func TestOnlyTerminalCommandsSkipTheSanitiser(t *testing.T) {
	allowed := map[string]bool{"app.go": true, "main.go": true, "dashboard.go": true, "demo.go": true, "fakeagent.go": true,
		"attach.go": true, "notify_cmd.go": true, "mcp.go": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || allowed[f] {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "a.term") {
			t.Errorf("%s writes to a.term, past the sanitiser: print with a.stdout, or name the file here if it draws on the terminal", f)
		}
	}
}
