package tmux_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testkit"
	"github.com/system3-dev/system3/internal/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

var update = flag.Bool("update", false, "rewrite testdata/list-panes-<version>.txt from the tmux under test")

// Hostile values: the field separator, backslash sequences that read like
// tmux's own escapes, control bytes, a byte that is not UTF-8, tabs and
// newlines. Session names are stored by tmux already escaped (':' becomes
// '_', control bytes octal, backslashes doubled); window names given to
// new-session -n, paths and command names are not sanitized at all.
const (
	hostileSession     = "h|~|s\\037\\x\x01:y"
	hostileSessionSeen = `h|~|s\\037\\x\001_y`
	hostileWindow      = "w|~|\\n\x1f"
	hostileTitle       = "t|~|\\037 ü"
	hostileDir         = "p|~|\\037\\\\\x01\x1f\xff\\n\tq\nr"
	hostileCommand     = "c|~|\\037\x1f\nz"
)

// TestListPanesHostileNames lists panes whose every string field is hostile
// on the tmux under test ($SYSTEM3_TMUX; CI runs it on 3.3a and 3.5a, which
// print control bytes differently), and checks each value and the fields
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
	prog := filepath.Join(base, hostileCommand)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sleep, prog); err != nil {
		t.Fatal(err)
	}
	id := tmuxRun(t, srv, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", hostileSession, "-n", hostileWindow, "-c", dir, "-x", "80", "-y", "24", prog, "100")
	tmuxRun(t, srv, "select-pane", "-t", id, "-T", hostileTitle)

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
		return p.Path == dir && p.Command == hostileCommand
	})
	want := tmux.Pane{SessionName: hostileSessionSeen, WindowName: hostileWindow, Title: hostileTitle, Path: dir, Command: hostileCommand, Width: 80, Height: 24}
	got := tmux.Pane{SessionName: p.SessionName, WindowName: p.WindowName, Title: p.Title, Path: p.Path, Command: p.Command, Width: p.Width, Height: p.Height}
	if got != want {
		t.Errorf("hostile pane read as\n%+v\nwant\n%+v", got, want)
	}
	if ok, err := c.HasSession(ctx, p.SessionName); !ok || err != nil {
		t.Errorf("the session name read back does not name the session: %v %v", ok, err)
	}
	sessions, err := c.ListSessions(ctx)
	if err != nil || !slices.ContainsFunc(sessions, func(s tmux.Session) bool { return s.Name == hostileSessionSeen }) {
		t.Errorf("ListSessions = %+v, %v", sessions, err)
	}

	if *update {
		v, err := srv.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
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
func TestListPanesFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "list-panes-*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, f := range files {
		versions = append(versions, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "list-panes-"), ".txt"))
	}
	for _, v := range []string{"3.3a", "3.5a"} {
		if !slices.Contains(versions, v) {
			t.Errorf("no fixture for tmux %s (have %v)", v, versions)
		}
	}
	for i, f := range files {
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
			want := tmux.Pane{SessionName: hostileSessionSeen, WindowName: hostileWindow, Title: hostileTitle, Path: hostileDir, Command: hostileCommand, Width: 80, Height: 24}
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
