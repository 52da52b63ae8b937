package tmux

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		offset   int // -1: accepted
		bytes    string
		visible  string
	}{
		{"plain", "Run the tests before committing.", -1, "", ""},
		{"newlines and tabs", "line one\n\tline two\n", -1, "", ""},
		{"tmux key names are text", "C-c Enter Escape BTab", -1, "", ""},
		{"unicode", "déjà vu ✻ 日本 \ufffd", -1, "", ""},
		{"ctrl-c", "\u0003", 0, "\x03", "^C"},
		{"bracketed paste end", "echo a\necho b\x1b[201~\rtouch $HOME/PWNED\r", 13, "\x1b", "echo a\necho b^[[201~^Mtouch $HOME/PWNED^M"},
		{"bracketed paste start", "\x1b[200~x", 0, "\x1b", "^[[200~x"},
		{"shift-tab", "\x1b[Z", 0, "\x1b", "^[[Z"},
		{"nul", "abc\x00defg", 3, "\x00", "abc^@defg"},
		{"carriage return", "a\r\nb", 1, "\r", "a^M\nb"},
		{"del", "x\x7f", 1, "\x7f", "x^?"},
		{"c1 csi", "é\u009b201~", 2, "\u009b", "é\\u009b201~"},
		{"c1 nel", "\u0085", 0, "\u0085", "\\u0085"},
		{"invalid utf-8", "ok \xff\xfe", 3, "\xff", "ok \\xff\\xfe"},
		{"truncated rune", "ab\xe2\x9c", 2, "\xe2", "ab\\xe2\\x9c"},
		{"surrogate half", "\xed\xa0\x80", 0, "\xed", "\\xed\\xa0\\x80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckText(tc.in)
			if tc.offset < 0 {
				if err != nil || VisibleText(tc.in) != tc.in {
					t.Fatalf("CheckText(%q) = %v, VisibleText = %q; want it accepted as is", tc.in, err, VisibleText(tc.in))
				}
				return
			}
			var te *TextError
			if !errors.As(err, &te) || !errors.Is(err, ErrNotText) || te.Offset != tc.offset || te.Bytes != tc.bytes {
				t.Fatalf("CheckText(%q) = %#v; want offset %d, bytes %q", tc.in, err, tc.offset, tc.bytes)
			}
			if msg := err.Error(); !strings.Contains(msg, "offset ") || !strings.Contains(msg, "--visible-controls") || !strings.Contains(msg, "visible_controls") {
				t.Errorf("message %q does not name the offset and the way out", msg)
			}
			if got := VisibleText(tc.in); got != tc.visible || CheckText(got) != nil {
				t.Errorf("VisibleText(%q) = %q (check %v), want %q", tc.in, got, CheckText(got), tc.visible)
			}
		})
	}
	if err := CheckText("\x1b"); !strings.Contains(err.Error(), "byte 0x1b (escape) at byte offset 0") {
		t.Errorf("ESC message: %v", err)
	}
	if err := CheckText("\u009b"); !strings.Contains(err.Error(), "character U+009B (a C1 control character)") {
		t.Errorf("C1 message: %v", err)
	}
	if err := CheckSize(MaxText); err != nil {
		t.Errorf("CheckSize(MaxText) = %v", err)
	}
	if err := CheckSize(1 << 20); !errors.Is(err, ErrTextTooLong) || !strings.Contains(err.Error(), "262144") {
		t.Errorf("CheckSize(1 MB) = %v", err)
	}
}

// TestBracketedPasteCannotBeForged: every marker a terminal uses to start
// or end a bracketed paste holds ESC (or is the C1 CSI), so no text that
// passes CheckText, and no VisibleText result, can hold one.
func TestBracketedPasteCannotBeForged(t *testing.T) {
	markers := []string{"\x1b[200~", "\x1b[201~", "\u009b200~", "\u009b201~"}
	for _, m := range markers {
		for _, in := range []string{m, "before" + m + "after", "a\n" + m + "\rtouch x\r"} {
			if CheckText(in) == nil {
				t.Errorf("CheckText accepts %q", in)
			}
			v := VisibleText(in)
			for _, mm := range markers {
				if strings.Contains(v, mm) {
					t.Errorf("VisibleText(%q) = %q still holds the marker %q", in, v, mm)
				}
			}
		}
	}
}

// FuzzText: CheckText accepts exactly the texts made of printable
// characters, "\n" and "\t"; VisibleText always yields such a text, keeps
// accepted texts as they are, and never loses a printable character.
func FuzzText(f *testing.F) {
	for _, s := range []string{"", "hello", "a\nb\tc", "\x1b[201~\r", "\x00", "\xff", "\u009b", "é", "\x7f", "C-c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckText(s)
		ok := utf8.ValidString(s)
		for _, r := range s {
			if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f {
				ok = false
			}
		}
		if (err == nil) != ok {
			t.Fatalf("CheckText(%q) = %v, want accepted %v", s, err, ok)
		}
		var te *TextError
		if err != nil && (!errors.As(err, &te) || te.Offset < 0 || te.Offset >= len(s) || !strings.HasPrefix(s[te.Offset:], te.Bytes) || CheckText(s[:te.Offset]) != nil) {
			t.Fatalf("CheckText(%q) = %#v: not the first offending byte", s, err)
		}
		v := VisibleText(s)
		if CheckText(v) != nil {
			t.Fatalf("VisibleText(%q) = %q is not text: %v", s, v, CheckText(v))
		}
		if err == nil && v != s {
			t.Fatalf("VisibleText changed the text %q to %q", s, v)
		}
		// Every character that is text is kept, in order.
		rest := v
		for i, r := range s {
			if r == utf8.RuneError || CheckText(string(r)) != nil {
				continue
			}
			j := strings.IndexRune(rest, r)
			if j < 0 {
				t.Fatalf("VisibleText(%q) = %q lost %q at offset %d", s, v, r, i)
			}
			rest = rest[j+utf8.RuneLen(r):]
		}
	})
}
