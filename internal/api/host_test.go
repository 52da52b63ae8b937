package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSplitHost(t *testing.T) {
	followed := func(h string) bool { return h == "web1" || h == "gpu.lab" }
	for _, c := range []struct {
		name       string
		isHost     func(string) bool
		host, rest string
	}{
		// A followed host's session, pane, target and wake.
		{"web1:api", followed, "web1", "api"},
		{"web1:%3", followed, "web1", "%3"},
		{"web1:$2", followed, "web1", "$2"},
		{"gpu.lab:w12-1", followed, "gpu.lab", "w12-1"},
		// The host's own tmux target keeps its colon.
		{"web1:api:0.1", followed, "web1", "api:0.1"},
		// A session of this machine, however it is named.
		{"local:api", followed, LocalHost, "api"},
		{"local:web1:api", followed, LocalHost, "web1:api"},
		{"local:%3", nil, LocalHost, "%3"},
		// This machine's tmux targets and ids, whole.
		{"sess:0.1", followed, "", "sess:0.1"},
		{"api", followed, "", "api"},
		{"$2", followed, "", "$2"},
		{"%3", followed, "", "%3"},
		{"@4", followed, "", "@4"},
		{"", followed, "", ""},
		// A text that names no followed host: a local session.
		{"web2:api", followed, "", "web2:api"},
		{"WEB1:api", followed, "", "WEB1:api"},
		{":api", followed, "", ":api"},
		// Nothing after the colon: tmux's session web1 (its current
		// window), not the host.
		{"web1:", followed, "", "web1:"},
		{"local:", followed, "", "local:"},
		// No hosts followed: only local names a host.
		{"web1:api", func(string) bool { return false }, "", "web1:api"},
		{"local:api", func(string) bool { return false }, LocalHost, "api"},
	} {
		host, rest, ok := SplitHost(c.name, c.isHost)
		if host != c.host || rest != c.rest || ok != (c.host != "") {
			t.Errorf("SplitHost(%q) = %q, %q, %v; want %q, %q", c.name, host, rest, ok, c.host, c.rest)
		}
		if ok && JoinHost(host, rest) != c.name {
			t.Errorf("JoinHost(%q, %q) = %q, want %q back", host, rest, JoinHost(host, rest), c.name)
		}
	}
}

// Without isHost every text before the first colon is a host, and the
// rest may be empty: patterns HOST:GLOB and cursor parts.
func TestSplitHostPattern(t *testing.T) {
	for _, c := range []struct {
		pattern, host, rest string
		ok                  bool
	}{
		{"web*:orch-*", "web*", "orch-*", true},
		{"web1:", "web1", "", true},
		{"local:12", LocalHost, "12", true},
		{":orch", "", "orch", true},
		{"a:b:c", "a", "b:c", true},
		{"orch-*", "", "orch-*", false},
		{"", "", "", false},
	} {
		host, rest, ok := SplitHost(c.pattern, nil)
		if host != c.host || rest != c.rest || ok != c.ok {
			t.Errorf("SplitHost(%q, nil) = %q, %q, %v; want %q, %q, %v", c.pattern, host, rest, ok, c.host, c.rest, c.ok)
		}
	}
}

func TestHostCursorRoundTrip(t *testing.T) {
	c, ok := ParseHostCursor(" web1:40, local:12 ,db:0")
	if !ok {
		t.Fatal("a well-formed cursor refused")
	}
	if got := c.String(); got != "db:0,local:12,web1:40" {
		t.Fatalf("String = %q", got)
	}
	if again, ok := ParseHostCursor(c.String()); !ok || again.String() != c.String() {
		t.Fatalf("round trip: %v, %v", again, ok)
	}
	if c, ok := ParseHostCursor("  "); !ok || len(c) != 0 {
		t.Fatalf("empty cursor: %v, %v", c, ok)
	}
	for _, bad := range []string{"web1", "web1:x", "web1:-1", ":3", "web1:3,"} {
		if _, ok := ParseHostCursor(bad); ok {
			t.Errorf("ParseHostCursor(%q) accepted", bad)
		}
	}
}

// colonUses are the files and folders whose code may cut, search or join
// at a colon for something that is no HOST: prefix, and what that is.
// Anything else that does reads or writes the prefix itself: call
// SplitHost or JoinHost instead.
var colonUses = map[string]string{
	"internal/api/host.go":         "SplitHost and JoinHost themselves",
	"internal/api/policy.go":       "an agent:pid of the policy's agents",
	"tmux/":                        "tmux's own syntax: targets session:window.pane, listings",
	"monitor/rules/":               "a rule's kind:lines and a capture file's header lines",
	"internal/lifecycle/finish.go": "git's refspec branch:branch",
	"monitor/limit.go":             "the TZ variable's leading colon",
	"cmd/system3/internal/bench/":  "/proc/cpuinfo's key : value lines",
}

// TestNoHostPrefixParserOutsideSplitHost fails on code that cuts, searches
// or joins at a colon (a strings or bytes function given ":" or ':', or
// X + ":") outside colonUses: the HOST: prefix is read by SplitHost and
// written by JoinHost only, so every part of system3 tells a host from a
// tmux target the same way.
func TestNoHostPrefixParserOutsideSplitHost(t *testing.T) {
	eachProductFile(t, parser.SkipObjectResolution, func(fset *token.FileSet, rel string, f *ast.File) {
		for p := range colonUses {
			if rel == p || strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p) {
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if fn := stringsFunc(n.Fun); fn != "" && slices.ContainsFunc(n.Args, endsInColon) {
					t.Errorf("%s: %s at a colon: read a HOST: prefix with api.SplitHost (or add the file to colonUses, saying what else it cuts)", fset.Position(n.Pos()), fn)
				}
			case *ast.BinaryExpr:
				if n.Op == token.ADD && isColon(n.Y) {
					t.Errorf("%s: a name joined at a colon: write a HOST: prefix with api.JoinHost (or add the file to colonUses, saying what else it joins)", fset.Position(n.Pos()))
				}
			}
			return true
		})
	})
}

// stringsFunc names fun when it is a function of package strings or
// bytes ("strings.Cut"), or "".
func stringsFunc(fun ast.Expr) string {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "strings" || x.Name == "bytes") {
		return x.Name + "." + sel.Sel.Name
	}
	return ""
}

// endsInColon reports whether e is ":" or ':', or X + ":".
func endsInColon(e ast.Expr) bool {
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.ADD {
		return isColon(b.Y)
	}
	return isColon(e)
}

func isColon(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING && lit.Kind != token.CHAR {
		return false
	}
	v, err := strconv.Unquote(lit.Value)
	return err == nil && v == ":"
}
