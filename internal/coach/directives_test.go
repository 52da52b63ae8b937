package coach

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

func fixtureDirectiveFiles() []api.DirectiveFile {
	return DirectiveFiles(filepath.Join("testdata", "home", ".claude"), filepath.Join("testdata", "project"))
}

func TestParseDirectives(t *testing.T) {
	ds, errs := LoadDirectives(fixtureDirectiveFiles())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []struct {
		id   string
		line int
		text string // prefix
	}{
		{"user/my-rules-for-every/be-brief-answer-in-english", 3, "Be brief. Answer in English. Explain only what is asked."},
		{"user/testing/when-a-test-fails-find", 8, "When a test fails, find the root cause"},
		{"user/testing/run-only-the-failing-test", 9, "Run only the failing test while debugging (with -run or -k), then the whole suite."},
		{"user/testing/write-the-test-first", 11, "Write the test first."},
		{"user/style-and-formatting/never-fix-formatting-by-hand", 15, "Never fix formatting by hand"},
		{"user/style-and-formatting/keep-lines-under-100-characters", 16, "Keep lines under 100 characters."},
		{"user/git-and-ci/run-the-ci-checks-locally", 30, "Run the CI checks locally before you push"},
		{"project/project-billing/use-the-makefile-targets-make", 3, "Use the Makefile targets"},
		{"project/project-billing/ask-before-using-tools-that", 4, "Ask before using tools"},
		// The same words in another file keep their own, numbered id.
		{"project/testing/when-a-test-fails-find", 3, "When a test fails, find the root cause before running it again."},
	}
	if len(ds) != len(want) {
		for _, d := range ds {
			t.Logf("%s:%d %s", d.ID, d.Line, d.Text)
		}
		t.Fatalf("%d directives, want %d", len(ds), len(want))
	}
	for i, w := range want {
		d := ds[i]
		if d.ID != w.id || d.Line != w.line || !strings.HasPrefix(d.Text, w.text) {
			t.Errorf("directive %d = %s line %d %q, want %s line %d %q", i, d.ID, d.Line, d.Text, w.id, w.line, w.text)
		}
		if strings.Contains(d.Text, "gofmt -w .") || strings.Contains(d.Text, "comment") || strings.Contains(d.Text, "@docs") {
			t.Errorf("directive %s takes text from code, comments or imports: %q", d.ID, d.Text)
		}
	}
}

func TestParseDirectivesDuplicateIDs(t *testing.T) {
	ds := ParseDirectives("user", "x.md", []byte("- Run tests.\n- Run tests.\n"))
	if len(ds) != 2 || ds[0].ID != "user/run-tests" || ds[1].ID != "user/run-tests-2" {
		t.Fatalf("directives = %+v", ds)
	}
}

func TestLinkDirectives(t *testing.T) {
	e, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := LoadDirectives(fixtureDirectiveFiles())
	want := map[string]string{
		"test_error_loop":    "user/testing/when-a-test-fails-find",
		"formatter_loop":     "user/style-and-formatting/never-fix-formatting-by-hand",
		"ci_push_loop":       "user/git-and-ci/run-the-ci-checks-locally",
		"permission_denials": "project/project-billing/ask-before-using-tools-that",
	}
	for _, p := range e.Patterns() {
		l := LinkDirective(p, ds)
		if l.Directive != want[p.ID] || l.By != "text match" || l.Score < MinLinkScore || l.Score > 1 || l.Text == "" {
			t.Errorf("%s linked to %s by %s (score %.2f), want %s", p.ID, l.Directive, l.By, l.Score, want[p.ID])
		}
	}
	p, _ := e.Pattern("formatter_loop")
	p.Directive = "user/testing/write-the-test-first"
	if l := LinkDirective(p, ds); l.By != "explicit" || l.Score != 1 || l.Text != "Write the test first." {
		t.Errorf("explicit link = %+v", l)
	}
	p.Directive = "user/gone"
	if l := LinkDirective(p, ds); l.By != "missing" || l.Text != "" {
		t.Errorf("missing link = %+v", l)
	}
	p.Directive = ""
	if l := LinkDirective(p, ParseDirectives("user", "x.md", []byte("- Be kind to people.\n"))); l.By != "none" || l.Directive != "" {
		t.Errorf("unrelated directives linked: %+v", l)
	}
}

func TestLoadDirectivesUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "CLAUDE.md"), 0o700); err != nil { // a directory: cannot be read as a file
		t.Fatal(err)
	}
	ds, errs := LoadDirectives([]api.DirectiveFile{{Source: "user", Path: filepath.Join(dir, "CLAUDE.md")}, {Source: "user", Path: filepath.Join(dir, "missing.md")}})
	if len(ds) != 0 || len(errs) != 1 {
		t.Fatalf("directives %v, errors %v: want one error for the unreadable file and none for the missing one", ds, errs)
	}
}

func FuzzParseDirectives(f *testing.F) {
	for _, fx := range fixtureDirectiveFiles() {
		if data, err := os.ReadFile(fx.Path); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("```\n- x\n"))
	f.Add([]byte("<!-- open\n# h\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seen := map[string]bool{}
		for _, d := range ParseDirectives("user", "f.md", data) {
			if d.ID == "" || strings.TrimSpace(d.Text) == "" || d.Line <= 0 {
				t.Fatalf("bad directive %+v", d)
			}
			if seen[d.ID] {
				t.Fatalf("id %s twice", d.ID)
			}
			seen[d.ID] = true
		}
	})
}
