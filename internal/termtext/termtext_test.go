package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// hostile holds what must never reach a terminal raw: OSC 52 (clipboard),
// OSC 0 (title), OSC 8 (a disguised link), ED (clear), SGR 8 (concealed),
// an 8-bit CSI, bidi overrides, BEL, a carriage return and invalid UTF-8.
const hostile = "ok \x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x07 \x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\ \x1b[2J \x1b[8mhidden\x1b[0m \u009b31m \u202egnp.exe \u2066x\u2069 \a\r \xff\xfe end"

func TestSanitize(t *testing.T) {
	got := Sanitize(hostile)
	for _, raw := range []string{"\x1b", "\a", "\r", "\u009b", "\u202e", "\u2066", "\xff"} {
		if strings.Contains(got, raw) {
			t.Errorf("Sanitize kept %q: %q", raw, got)
		}
	}
	for _, want := range []string{`\u001b]52;c;`, `\u202egnp.exe`, `\xff\xfe end`, `\u009b31m`, "ok ", "hidden"} {
		if !strings.Contains(got, want) {
			t.Errorf("Sanitize(%q) = %q, lacks %q", hostile, got, want)
		}
	}
	if s := "plain text · tabs\tand\nlines ✓"; Sanitize(s) != s {
		t.Errorf("safe text changed: %q", Sanitize(s))
	}
	if Line("a\nb\tc") != `a\nb\tc` {
		t.Errorf("Line = %q", Line("a\nb\tc"))
	}
}

// Written one byte at a time, as a writer may be, the output is the same,
// and JSON through it stays valid and decodes to what it held.
func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := 0; i < len(hostile); i++ {
		if _, err := w.Write([]byte{hostile[i]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != Sanitize(hostile) {
		t.Fatalf("byte by byte:\n%q\nwant\n%q", out.String(), Sanitize(hostile))
	}
	out.Reset()
	doc := map[string]string{"question": "Approve \u202egnp.exe\u202c? \u009b"}
	b, _ := json.Marshal(doc)
	w.Write(b)
	w.Flush()
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["question"] != doc["question"] {
		t.Fatalf("JSON through the writer: %q, %v, %q", out.String(), err, back)
	}
	if strings.ContainsRune(out.String(), '\u202e') {
		t.Fatalf("raw bidi in JSON output: %q", out.String())
	}
	// A character cut by the end of the output is shown, not lost.
	out.Reset()
	w.Write([]byte("é"[:1]))
	w.Flush()
	if out.String() != `\xc3` {
		t.Fatalf("incomplete character = %q", out.String())
	}
}

// Plain removes what Sanitize shows: nothing of an escape sequence is
// left, controls and line breaks are spaces, bidi controls are gone.
func TestPlain(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"  plain text  ", "plain text"},
		{"a\tb\nc\rd\u2028e", "a b c d e"},
		{"\x1b[31mred\x1b[0m \x1b]0;title\x07ok \x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\", "red ok link"},
		{"\u202egnp.exe\u202c", "gnp.exe"},
		{"bad \xff byte", "bad  byte"},
		{"cut \xc3 char", "cut \ufffd char"},
		{"C1 \u009b31m", "C1  31m"},
		{"wide 世界 ✓", "wide 世界 ✓"},
	} {
		if got := Plain(tt.in); got != tt.want {
			t.Errorf("Plain(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Plain(hostile); strings.ContainsAny(got, "\x1b\a\r\n") || strings.Contains(got, "52;c;") || strings.Contains(got, "pwned") {
		t.Errorf("Plain(hostile) = %q", got)
	}
}

func FuzzPlain(f *testing.F) {
	f.Add(hostile)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		got := Plain(s)
		for _, r := range got {
			if unsafe(r) || r == '\n' || r == '\t' {
				t.Fatalf("Plain(%q) = %q keeps %U", s, got, r)
			}
		}
		if !utf8Valid(got) || got != strings.TrimSpace(got) {
			t.Fatalf("Plain(%q) = %q", s, got)
		}
	})
}

func FuzzSanitize(f *testing.F) {
	f.Add(hostile)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		for _, r := range got {
			if unsafe(r) {
				t.Fatalf("Sanitize(%q) = %q keeps %U", s, got, r)
			}
		}
		if strings.ContainsRune(got, '\x1b') || !utf8Valid(got) {
			t.Fatalf("Sanitize(%q) = %q", s, got)
		}
		if Sanitize(got) != got {
			t.Fatalf("not idempotent: %q", got)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
