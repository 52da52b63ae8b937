package tmux_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

var update = flag.Bool("update", false, "rewrite testdata/list-panes-<version>.txt from the tmux under test")

// Hostile values: the field separator, backslash sequences that read like
// tmux's own escapes, control bytes, a byte that is not UTF-8, tabs and
// newlines. Paths are not sanitized by any tmux.
const hostileDir = "p|~|\\037\\\\\x01\x1f\xff\\n\tq\nr"

// hostileNames are the session name, window name, title and command name a
// hostile test gives tmux, and how tmux stores them (and so lists them).
type hostileNames struct {
	session, window, title, command                 string
	sessionSeen, windowSeen, titleSeen, commandSeen string
}

// namesChecked reports whether a tmux version ("tmux 3.8") refuses names
// with control bytes and escapes the names it stores: 3.7 and later.
func namesChecked(version string) bool {
	major, minor, known, ok := tmux.ParseVersion(version)
	return ok && (!known || major > 3 || major == 3 && minor >= 7)
}

// commandSeen is how a tmux version lists a pane running a program named
// name: from 3.7, "" for a name with a control byte or a byte that is not
// UTF-8, and backslashes doubled; before, as it is.
func commandSeen(version, name string) string {
	if !namesChecked(version) {
		return name
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return ""
		}
	}
	return strings.ReplaceAll(name, `\`, `\\`)
}

// namesFor returns the hostile names for a tmux version ("tmux 3.5a").
// Up to 3.6, session names are stored escaped (':' becomes '_', control
// bytes octal, backslashes doubled) and window names and titles as given.
// tmux 3.7 and later refuse a name with a control byte or a byte that is
// not UTF-8 ("invalid window name"; a title is silently kept as it was,
// a command name lists as ""), and store every name, title and command
// name escaped, ':' included as it is.
func namesFor(version string) hostileNames {
	if namesChecked(version) {
		return hostileNames{
			session: "h|~|s\\037\\x:y", sessionSeen: `h|~|s\\037\\x:y`,
			window: "w|~|\\n", windowSeen: `w|~|\\n`,
			title: "t|~|\\037 ü", titleSeen: `t|~|\\037 ü`,
			command: "c|~|\\037z", commandSeen: `c|~|\\037z`,
		}
	}
	return hostileNames{
		session: "h|~|s\\037\\x\x01:y", sessionSeen: `h|~|s\\037\\x\001_y`,
		window: "w|~|\\n\x1f", windowSeen: "w|~|\\n\x1f",
		title: "t|~|\\037 ü", titleSeen: "t|~|\\037 ü",
		command: "c|~|\\037\x1f\nz", commandSeen: "c|~|\\037\x1f\nz",
	}
}

// TestListPanesHostileNames lists panes whose every string field is hostile
// on the tmux under test ($SYSTEM3_TMUX; CI runs it on 3.3a, 3.5a and 3.8:
// 3.4 and later print control bytes as escapes, 3.7 and later refuse them in
// names), and checks each value and the fields
// after it. With -update it saves the raw output as a fixture that
// TestListPanesFixtures parses on every run.
func TestListPanesHostileNames(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	base := t.TempDir()
	dir := filepath.Join(base, hostileDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := srv.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := namesFor(v)
	prog := filepath.Join(base, n.command)
	if err := os.Symlink(testkit.LookPath(t, "sleep"), prog); err != nil {
		t.Fatal(err)
	}
	id := tmuxRun(t, srv, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", n.session, "-n", n.window, "-c", dir, "-x", "80", "-y", "24", prog, "100")
	tmuxRun(t, srv, "select-pane", "-t", id, "-T", n.title)

	var p tmux.Pane
	testkit.WaitFor(t, 5*time.Second, "the hostile pane", func() bool {
		panes, err := c.ListPanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(panes, func(p tmux.Pane) bool { return p.SessionName != "main" })
		if i < 0 {
			return false
		}
		p = panes[i]
		// Until the process has started, tmux reports an escaped argv
		// and no path.
		return p.Path == dir && p.Command == n.commandSeen
	})
	want := tmux.Pane{SessionName: n.sessionSeen, WindowName: n.windowSeen, Title: n.titleSeen, Path: dir, Command: n.commandSeen, Width: 80, Height: 24}
	got := tmux.Pane{SessionName: p.SessionName, WindowName: p.WindowName, Title: p.Title, Path: p.Path, Command: p.Command, Width: p.Width, Height: p.Height}
	if got != want {
		t.Errorf("hostile pane read as\n%+v\nwant\n%+v", got, want)
	}
	// From 3.7 a session name keeps its ':', and tmux reads a target up to
	// the first ':' as the session: no target names such a session but
	// its id.
	if ok, err := c.HasSession(ctx, p.SessionName); (!ok || err != nil) && !strings.Contains(p.SessionName, ":") {
		t.Errorf("the session name read back does not name the session: %v %v", ok, err)
	}
	sessions, err := c.ListSessions(ctx)
	if err != nil || !slices.ContainsFunc(sessions, func(s tmux.Session) bool { return s.Name == n.sessionSeen }) {
		t.Errorf("ListSessions = %+v, %v", sessions, err)
	}

	if *update {
		out := tmuxRunRaw(t, srv, "-u", "list-panes", "-a", "-F", tmux.PaneFormat)
		// The "main" pane runs in the test's directory: keep it out.
		if cwd, err := os.Getwd(); err == nil {
			out = strings.ReplaceAll(out, fmt.Sprintf("%d:%s|~|", len(cwd), cwd), "1:/|~|")
		}
		name := filepath.Join("testdata", "list-panes-"+strings.TrimPrefix(v, "tmux ")+".txt")
		if err := os.WriteFile(name, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListPanesFixtures parses real list-panes output of each tmux version
// in testdata (written by TestListPanesHostileNames -update): 3.3a prints
// control bytes raw, 3.4 and later as escapes; both must read the same.
// 3.8 stores names escaped (namesFor).
func TestListPanesFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "list-panes-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, f := range files {
		versions = append(versions, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "list-panes-"), ".txt"))
	}
	for _, v := range []string{"3.3a", "3.5a", "3.8"} {
		if !slices.Contains(versions, v) {
			t.Errorf("no fixture for tmux %s (have %v)", v, versions)
		}
	}
	for i, f := range files {
		n := namesFor("tmux " + versions[i])
		t.Run(versions[i], func(t *testing.T) {
			out, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			panes, err := tmux.ParsePanes(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(panes) != 2 {
				t.Fatalf("%d panes, want 2: %+v", len(panes), panes)
			}
			i := slices.IndexFunc(panes, func(p tmux.Pane) bool { return p.SessionName != "main" })
			if i < 0 {
				t.Fatalf("no hostile pane in %+v", panes)
			}
			p := panes[i]
			want := tmux.Pane{SessionName: n.sessionSeen, WindowName: n.windowSeen, Title: n.titleSeen, Path: hostileDir, Command: n.commandSeen, Width: 80, Height: 24}
			got := tmux.Pane{SessionName: p.SessionName, WindowName: p.WindowName, Title: p.Title, Path: filepath.Base(p.Path), Command: p.Command, Width: p.Width, Height: p.Height}
			if got != want {
				t.Errorf("hostile pane read as\n%+v\nwant\n%+v", got, want)
			}
			if !strings.HasPrefix(p.ID, "%") || !strings.HasPrefix(p.SessionID, "$") || !strings.HasPrefix(p.WindowID, "@") || p.PID == 0 || p.Activity.IsZero() {
				t.Errorf("fields around the hostile ones are wrong: %+v", p)
			}
		})
	}
}
