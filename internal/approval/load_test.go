package approval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestParseRefusesBadRules(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"no id", "rules:\n- decision: allow\n", "rule 1: no id"},
		{"no decision", "rules:\n- id: a\n", "rule 1 (a): no decision"},
		{"bad decision", "rules:\n- id: a\n  decision: maybe\n", `rule 1 (a): decision "maybe": say allow, deny or ask`},
		{"message on allow", "rules:\n- id: a\n  decision: allow\n  message: hi\n", "does not deny"},
		{"bad regexp", "rules:\n- id: ok\n  decision: ask\n- id: b\n  command_regexp: 'go test ('\n  decision: allow\n", "rule 2 (b): command_regexp"},
		{"bad glob", "rules:\n- id: a\n  sessions: '[x'\n  decision: allow\n", "sessions"},
		{"command for edits", "rules:\n- id: a\n  tools: Edit\n  command: 'x *'\n  decision: allow\n", "command applies to Bash"},
		{"paths for bash", "rules:\n- id: a\n  tools: Bash\n  paths: '*.go'\n  decision: allow\n", "paths applies to"},
		{"unknown field", "rules:\n- id: a\n  decison: allow\n", "field decison not found"},
		{"duplicate id", "rules:\n- id: a\n  decision: allow\n- id: a\n  decision: deny\n", "rule 2 (a): the id is used already"},
		{"home path", "rules:\n- id: a\n  paths: '~/x'\n  decision: deny\n", "write the home directory out"},
		{"not yaml", "rules: [", "policy f.yaml"},
		{"ask_timeout too long", "ask_timeout: 2m\nrules: []\n", "ask_timeout 2m0s is out of range"},
		{"ask_timeout negative", "ask_timeout: -1s\nrules: []\n", "ask_timeout -1s is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "f.yaml") {
				t.Fatalf("Parse = %v, want an error naming f.yaml and saying %q", err, tt.want)
			}
		})
	}
}

func TestLoadReadsConfigAndFileBeside(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	write(t, cfg, "log_level: info\npolicy:\n  rules:\n    - id: from-config\n      command: 'make *'\n      decision: allow\n")
	write(t, filepath.Join(dir, FileName), "rules:\n  - id: from-file\n    command: 'go test *'\n    decision: allow\n")
	p, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Decide(bash("make && go test ./...")); v.Decision != Allow || v.Rule != "from-config, from-file" {
		t.Fatalf("got %+v", v)
	}
	if p.AskTimeout() != DefaultAskTimeout {
		t.Errorf("ask timeout %s without ask_timeout", p.AskTimeout())
	}
	if len(p.Sources) != 2 || p.Rules()[0].Source != cfg {
		t.Errorf("sources %q, first rule from %q", p.Sources, p.Rules()[0].Source)
	}
	// ask_timeout in either; policy.yaml's wins.
	write(t, cfg, "policy:\n  ask_timeout: 3s\n")
	if p, err := Load(cfg); err != nil || p.AskTimeout() != 3*time.Second {
		t.Fatalf("ask_timeout in the config: %v, %v", p.AskTimeout(), err)
	}
	write(t, filepath.Join(dir, FileName), "ask_timeout: 20s\nrules:\n  - id: from-file\n    command: 'go test *'\n    decision: allow\n")
	if p, err := Load(cfg); err != nil || p.AskTimeout() != 20*time.Second {
		t.Fatalf("ask_timeout in both: %v, %v", p.AskTimeout(), err)
	}
	write(t, cfg, "log_level: info\npolicy:\n  rules:\n    - id: from-config\n      command: 'make *'\n      decision: allow\n")
	// The same id in both is refused, naming both files.
	write(t, filepath.Join(dir, FileName), "rules:\n  - id: from-config\n    decision: ask\n")
	if _, err := Load(cfg); err == nil || !strings.Contains(err.Error(), FileName) || !strings.Contains(err.Error(), cfg) {
		t.Fatalf("Load = %v", err)
	}
}

func TestLoadWithoutFilesIsEmpty(t *testing.T) {
	p, err := Load(filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil || len(p.Rules()) != 0 {
		t.Fatalf("Load = %v, %v", p, err)
	}
}

func TestWatcherReloadsAndKeepsRulesOnABadFile(t *testing.T) {
	dir := testkit.StateDir(t)
	cfg := filepath.Join(dir, "config.yaml")
	file := filepath.Join(dir, FileName)
	write(t, file, "rules:\n  - id: tests\n    command: 'go test *'\n    decision: allow\n")
	w := NewWatcher(cfg, nil)
	if v := w.Policy().Decide(bash("go test ./...")); v.Decision != Allow {
		t.Fatalf("first load: %+v (problem %q)", v, w.Problem())
	}
	ctx, cancel := context.WithCancel(context.Background())
	problems := make(chan string, 10)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, 5*time.Millisecond, func(p string) { problems <- p }) }()
	defer func() { cancel(); <-done }()

	write(t, file, "rules:\n  - id: tests\n    command: 'go test *'\n    decision: maybe\n")
	if p := <-problems; !strings.Contains(p, file) || !strings.Contains(p, "rule 1 (tests)") || !strings.Contains(p, "previous rules stay") {
		t.Fatalf("problem = %q", p)
	}
	if v := w.Policy().Decide(bash("go test ./...")); v.Decision != Allow {
		t.Fatalf("a bad file dropped the rules in force: %+v", v)
	}
	write(t, file, "rules:\n  - id: tests\n    command: 'go test *'\n    decision: deny\n    message: no tests today\n")
	if p := <-problems; p != "" {
		t.Fatalf("problem after the fix = %q", p)
	}
	if v := w.Policy().Decide(bash("go test ./...")); v.Decision != Deny || v.Message != "no tests today" {
		t.Fatalf("reloaded: %+v", v)
	}
	if w.Problem() != "" {
		t.Errorf("problem %q", w.Problem())
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	// A new size or a new time: the watcher looks at both.
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Duration(len(data)) * time.Second)
	_ = os.Chtimes(path, later, later)
}

// A change is read only once the files kept it for a whole interval: a
// file caught half-written (here, its allow rule written and its deny
// rule not yet) is never loaded.
func TestWatcherWaitsForTheFileToSettle(t *testing.T) {
	dir := testkit.StateDir(t)
	cfg := filepath.Join(dir, "config.yaml")
	file := filepath.Join(dir, FileName)
	write(t, file, "rules:\n  - id: tests\n    command: 'go test *'\n    decision: ask\n")
	w := NewWatcher(cfg, nil)
	if w.changed() {
		t.Fatal("a change reported with none")
	}
	write(t, file, "rules:\n  - id: all\n    command: '*'\n    decision: allow\n")
	if w.changed() {
		t.Fatal("a change read at the first look, before the file settled")
	}
	write(t, file, "rules:\n  - id: all\n    command: '*'\n    decision: allow\n  - id: no-rm\n    command: 'rm *'\n    decision: deny\n")
	if w.changed() {
		t.Fatal("a file still changing was read")
	}
	if !w.changed() {
		t.Fatal("a settled change was not read")
	}
	w.reload()
	if v := w.Policy().Decide(bash("rm -rf /")); v.Decision != Deny {
		t.Fatalf("after the settled file: %+v", v)
	}
}
