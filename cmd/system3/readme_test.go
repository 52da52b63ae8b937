package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// readmeRunnable are the README usage commands that run here as written:
// they need no agent, no daemon and no terminal.
var readmeRunnable = map[string]bool{
	"status": true, "tasks": true, "audit": true, "outcome": true, "outcomes": true, "learnings": true, "reflect": true,
	"capabilities": true, "patterns": true, "directives": true, "interventions": true, "rules": true, "version": true, "wakes": true,
}

// isPlaceholder: an argument like PANE or DIR shows the form of a command
// rather than a line to run.
func isPlaceholder(arg string) bool {
	return len(arg) > 1 && strings.ToUpper(arg) == arg && strings.Trim(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// TestReadmeExamples runs README's usage examples exactly as written, in
// order, against a private tmux server and a throwaway home: the learning
// example must recall what it taught.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, ok := usageBlock(string(readme))
	if !ok {
		t.Fatal("README.md has no ```sh block under ## Usage")
	}
	srv := tmuxtest.NewServer(t, "sleep", "600")
	home := t.TempDir()
	list := filepath.Join(home, ".claude", "tasks", "PRD-AUTH-001")
	if err := os.MkdirAll(list, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(list, "1.json"), []byte(`{"id":"1","subject":"Add the login form","status":"in_progress","blocks":[],"blockedBy":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(list, "3.json"), []byte(`{"id":"3","subject":"Document the login","status":"pending","blocks":[],"blockedBy":["1"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "SYSTEM3_STATE_DIR": testkit.StateDir(t), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	ran := map[string]string{}
	for _, line := range strings.Split(block, "\n") {
		args, ok := shellWords(stripComment(line))
		if !ok || len(args) < 2 || args[0] != "system3" || !readmeRunnable[args[1]] || slices.ContainsFunc(args, isPlaceholder) {
			continue
		}
		code, out, errOut := invoke(t, env, args[1:]...)
		if code != 0 {
			t.Errorf("README line %q: exit %d\nstdout: %s\nstderr: %s", line, code, out, errOut)
		}
		ran[args[1]] += out
	}
	for c := range readmeRunnable {
		if _, ok := ran[c]; !ok {
			t.Errorf("README's usage no longer shows `system3 %s`; update readmeRunnable", c)
		}
	}
	if !strings.Contains(ran["reflect"], "Keep tokens in the session store") {
		t.Errorf("README's reflect example does not recall the learning its outcome example taught:\n%s", ran["reflect"])
	}
	if !strings.Contains(ran["learnings"], "Keep tokens in the session store") || !strings.Contains(ran["learnings"], "cli") {
		t.Errorf("README's learnings example does not list the learning its outcome example taught, with its reporter:\n%s", ran["learnings"])
	}
	if !strings.Contains(ran["tasks"], "Add the login form") {
		t.Errorf("README's tasks examples do not show the list:\n%s", ran["tasks"])
	}
}

// usageBlock is the first ```sh block after "## Usage".
func usageBlock(readme string) (string, bool) {
	_, rest, ok := strings.Cut(readme, "\n## Usage")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		return "", false
	}
	block, _, ok := strings.Cut(rest, "\n```")
	return block, ok
}

// stripComment drops a trailing "  # comment" (a '#' after white space,
// outside quotes).
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// shellWords splits a command line as sh would for the simple quoting
// README uses; ok is false for pipelines and unbalanced quotes.
func shellWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == '|' || r == ';' || r == '&':
			return nil, false
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		words = append(words, cur.String())
	}
	return words, true
}
