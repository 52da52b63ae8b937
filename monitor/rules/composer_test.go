package rules

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBorderlessComposer: Codex's composer (a "› text" line between blank
// lines above its footer) is an input box; its numbered menus, whose first
// option starts with the same glyph, are not.
func TestBorderlessComposer(t *testing.T) {
	for name, want := range map[string]string{
		"codex/idle.txt":              "Ask Codex to do anything",
		"codex/working_streaming.txt": "Ask Codex to do anything",
		"codex/permission_exec.txt":   "",
		"codex/question.txt":          "",
		"codex/trust_dialog.txt":      "",
		"codex/exited_shell.txt":      "",
	} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "captures", name))
		if err != nil {
			t.Fatal(err)
		}
		s := NewScreen(string(data))
		if s.HasInputBox() != (want != "") || s.InputText() != want {
			t.Errorf("%s: input box %v %q, want %q", name, s.HasInputBox(), s.InputText(), want)
		}
	}
	// A composer holding typed text, and the same line with text under it
	// that is not a footer, from a made-up screen.
	if s := NewScreen("• Done.\n\n› fix the bug\n\n  model · ~/p\n  ? for shortcuts\n"); s.InputText() != "fix the bug" {
		t.Errorf("typed composer: %q", s.InputText())
	}
	if s := NewScreen("› 1. Yes, proceed (y)\n  2. No (esc)\n\n  Press enter to confirm\n"); s.HasInputBox() {
		t.Errorf("a menu was taken for the composer")
	}
}
