package rules

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

func TestPrefilterLiterals(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []literal // nil: no prefilter
	}{
		{`Esc to cancel`, []literal{{s: "Esc to cancel"}}},
		{`(?i)API Error: 401|not logged in`, []literal{{s: "api error: 401", fold: true}, {s: "not logged in", fold: true}}},
		{`^\s*Do you want to .+\?\s*$`, []literal{{s: "Do you want to "}}},
		{`(?i)invalid (x-)?api[ -]key`, []literal{{s: "invalid ", fold: true}}},
		{`\b429\b.*(retrying|error)`, []literal{{s: "retrying"}, {s: "error"}}},
		{`^\s*❯ 1\. Yes`, []literal{{s: "❯ 1. Yes"}}},
		{`(?i)été`, nil}, // non-ASCII folded literal: no prefilter
		{`a|\d+`, nil},   // one branch needs no literal
		{`(ab)*`, nil},   // may match the empty string
		{`[✢✽✶] \S+ for`, []literal{{s: " for"}}},
		{`x{2,}yz`, []literal{{s: "yz"}}},
	} {
		p := newPrefilter(tt.expr)
		var got []literal
		if p != nil {
			got = p.lits
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: literals %+v, want %+v", tt.expr, got, tt.want)
		}
	}
}

// builtinConds are every regexp condition of the built-in rules.
func builtinConds(t testing.TB) []*Cond {
	e, err := New(Builtin())
	if err != nil {
		t.Fatal(err)
	}
	var out []*Cond
	for _, r := range e.Rules() {
		for _, cs := range [][]Cond{r.Match, r.Unless} {
			for i := range cs {
				if cs[i].re != nil {
					c := cs[i]
					out = append(out, &c)
				}
			}
		}
	}
	return out
}

// checkNoFalseNegative fails when a prefilter rejects a line its
// expression matches.
func checkNoFalseNegative(t *testing.T, conds []*Cond, line string) {
	s := &Screen{Lines: []string{line}}
	for _, c := range conds {
		if c.pre != nil && c.re.MatchString(line) && !c.pre.may(s, 0) {
			t.Fatalf("prefilter %+v of %q rejects %q, which matches", c.pre.lits, c.Regexp, line)
		}
	}
}

// TestPrefilterNeverRejectsAMatch runs every built-in condition over every
// line of the saved captures, and over the lines that match, in other cases.
func TestPrefilterNeverRejectsAMatch(t *testing.T) {
	conds := builtinConds(t)
	withPre := 0
	for _, c := range conds {
		if c.pre != nil {
			withPre++
		}
	}
	if withPre < len(conds)/2 {
		t.Fatalf("only %d of %d conditions have a prefilter", withPre, len(conds))
	}
	files := captureFiles(t)
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	matched := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range NewScreen(string(data)).Lines {
			for _, v := range []string{l, strings.ToUpper(l), strings.ToLower(l), strings.ReplaceAll(strings.ToLower(l), "s", "ſ"), strings.ReplaceAll(strings.ToUpper(l), "K", "\u212a")} {
				checkNoFalseNegative(t, conds, v)
			}
			for _, c := range conds {
				if c.re.MatchString(l) {
					matched++
				}
			}
		}
	}
	if matched == 0 {
		t.Fatal("no capture line matched any condition: the test checks nothing")
	}
}

func FuzzPrefilter(f *testing.F) {
	f.Add("API ERROR: 401 Unauthorized")
	f.Add("  Do you want to proceed?")
	f.Add("Retrying in 5 seconds · attempt 2/10")
	f.Add("hit your ſession limit")
	f.Add("oauth to\u212aen has expired")
	conds := builtinConds(f)
	f.Fuzz(func(t *testing.T, line string) {
		checkNoFalseNegative(t, conds, line)
	})
}

// BenchmarkClassifyWorkingScreen classifies one screen of a working agent
// (no prompt on it), the capture a streaming pane produces many times a
// second; most conditions are ruled out by their prefilter.
func BenchmarkClassifyWorkingScreen(b *testing.B) {
	e, err := New(Builtin())
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("../testdata/captures/claude/working_tool_running.txt")
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Screen: string(data)}
	if r := e.Classify(in); r.State != api.Working {
		b.Fatalf("state %s (%s)", r.State, r.Rule)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Classify(in)
	}
}
