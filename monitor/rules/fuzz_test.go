package rules

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRegion checks region extraction on any screen: a region that parses
// prints back to itself, its bounds stay inside the screen, and an extract
// over it returns options without blanks.
func FuzzRegion(f *testing.F) {
	files := captureFiles(f)
	regions := []string{"", "whole", "bottom:3", "footer", "footer:1", "above_input:8", "turn:40", "input", "bottom:10000"}
	for i, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(regions[i%len(regions)], string(data))
		}
	}
	f.Add("above_input:2", "──────\n❯ hi\n──────\n")
	f.Add("turn:1", "❯ x\n❯ \n")
	f.Add("bottom:0", "")
	f.Add("input", "\x1b[31m────\x1b[0m\n❯\n────")
	f.Fuzz(func(t *testing.T, name, capture string) {
		r, err := parseRegion(name)
		if err != nil {
			if !strings.Contains(err.Error(), "region") {
				t.Fatalf("error %q does not say what is wrong with the region", err)
			}
			return
		}
		if back, err := parseRegion(r.String()); name != "" && (err != nil || back != r) {
			t.Fatalf("region %q prints as %q, which parses to %+v, %v", name, r.String(), back, err)
		}
		s := NewScreen(capture)
		lo, hi := s.bounds(r)
		if lo < 0 || lo > hi || hi > len(s.Lines) {
			t.Fatalf("region %s bounds [%d, %d) on a screen of %d lines", r, lo, hi, len(s.Lines))
		}
		e := &Extract{Question: `(?P<question>\S.*\?)\s*$`, Option: `^\s*(?:❯\s*)?\d+\.\s+(?P<label>.+)$`, OptionInline: `\((\w)\)(\w+)`, Detail: `^\s*(\S.*command)\s*$`}
		if err := e.compile(r); err != nil {
			t.Fatal(err)
		}
		_, _, options := e.run(s)
		for _, o := range options {
			if strings.TrimSpace(o) == "" || o != strings.TrimSpace(o) {
				t.Fatalf("option %q is blank or untrimmed", o)
			}
		}
		if !s.HasInputBox() && s.InputText() != "" {
			t.Fatalf("input text %q without an input box", s.InputText())
		}
	})
}

// FuzzUserRules loads arbitrary user rules over the built-in ones: a bad
// file is an error that names it, never a panic, and an engine that loads
// classifies any screen into a valid state.
func FuzzUserRules(f *testing.F) {
	f.Add([]byte("version: 1\nrules:\n  - id: x\n    state: working\n    match: [{contains: go}]\n"), "go go")
	f.Add([]byte("version: 1\ndisable: [claude.idle]\n"), "❯ ")
	f.Add([]byte("version: 1\nagents:\n  - name: bot\n    processes: [bot]\nrules:\n  - id: b\n    agents: [bot]\n    state: awaiting_input\n    kind: question\n    region: above_input:2\n    match: [{regexp: '\\?$'}]\n    extract: {question: '(.*\\?)', option: '^\\d+\\. (.+)'}\n"), "Go?\n1. yes\n2. no")
	f.Add([]byte("version: 2\n"), "")
	f.Add([]byte("{"), "")
	f.Fuzz(func(t *testing.T, data []byte, screen string) {
		const name = "user.yaml"
		e, err := New(Builtin(), Source{Name: name, Data: data})
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, proc := range []string{"", "claude", "bot"} {
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
			for _, l := range append(append([]string{r.LastLine, r.Question, r.Detail}, r.Evidence...), r.Options...) {
				if n := utf8.RuneCountInString(l); n > MaxLineRunes {
					t.Fatalf("a line of %d characters in %+v", n, r)
				}
			}
		}
	})
}

// TestResilienceLongLinesAreClipped: a screen with lines of 100,000
// characters yields a result of bounded lines, whatever rule matches.
func TestResilienceLongLinesAreClipped(t *testing.T) {
	e, err := New(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 100_000)
	for i, screen := range []string{long, long + "\nError: 500 " + long, "Do you want to proceed? " + long + "\n❯ 1. Yes " + long + "\n  2. No"} {
		r := e.Classify(Input{Screen: screen, Processes: []string{"claude"}})
		for _, l := range append(append([]string{r.LastLine, r.Question, r.Detail}, r.Evidence...), r.Options...) {
			if n := utf8.RuneCountInString(l); n > MaxLineRunes || !utf8.ValidString(l) {
				t.Fatalf("%s: a line of %d characters (valid UTF-8: %v)", r.Rule, n, utf8.ValidString(l))
			}
		}
		if i < 2 && !strings.HasSuffix(r.LastLine, "…") {
			t.Fatalf("%s: last line %.40q… not clipped with an ellipsis", r.Rule, r.LastLine)
		}
	}
}
