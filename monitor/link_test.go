package monitor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/tmux"
)

// TestLinkShowsListAndSurvivesRestartAndNewPane: a link made by session
// name gives the session its list and progress at once, is kept in the
// links file, applies again in a new supervisor (a daemon restart) and to a
// new pane of that session (the agent restarted), and is removed by
// linking to "".
func TestLinkShowsListAndSurvivesRestartAndNewPane(t *testing.T) {
	dir := t.TempDir()
	links := filepath.Join(dir, LinksFile)
	progress := func(id string) (api.TaskProgress, bool) {
		if id == "PRD-AUTH" {
			return api.TaskProgress{Completed: 1, Total: 3, InProgress: []string{"login"}}, true
		}
		return api.TaskProgress{}, false
	}
	mod := func(c *Config) {
		c.LinksPath, c.TaskProgress = links, progress
		c.Audit = audit.Open(dir)
	}
	h := newHarness(t, mod)
	h.tm.show(t, "%1", "codex", "codex/idle.txt")
	h.step()
	if s := h.session("%1"); s.TaskList != "" {
		t.Fatalf("before linking: task list %q", s.TaskList)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := h.sup.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "orch-1"}, TaskList: "PRD-AUTH", Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Pane != "%1" || got.TaskList != "PRD-AUTH" || got.Tasks == nil || got.Tasks.Total != 3 {
		t.Fatalf("Link returned %+v (tasks %+v)", got, got.Tasks)
	}
	select {
	case u := <-ch:
		if u.Kind != api.SessionChanged || u.Session.TaskList != "PRD-AUTH" {
			t.Fatalf("update = %+v", u)
		}
	default:
		t.Fatal("Link published no update")
	}
	h.tm.show(t, "%1", "codex", "codex/working_spinner.txt")
	h.step()
	if s := h.session("%1"); s.TaskList != "PRD-AUTH" || s.Tasks == nil || s.Tasks.Completed != 1 {
		t.Fatalf("after a capture: %+v", s)
	}
	b, err := os.ReadFile(links)
	if err != nil || !strings.Contains(string(b), `"session": "orch-1"`) || !strings.Contains(string(b), `"task_list": "PRD-AUTH"`) {
		t.Fatalf("links file: %v\n%s", err, b)
	}
	entries, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil || len(entries) != 1 || entries[0].Action != "link" || entries[0].Origin != "cli" {
		t.Fatalf("audit: %v %+v", err, entries)
	}

	// A restarted daemon, and the agent restarted in a new pane.
	h2 := newHarness(t, mod)
	h2.tm.mu.Lock()
	h2.tm.panes = []tmux.Pane{{ID: "%7", SessionName: "orch-1", Command: "codex", PID: 101, Width: 100, Height: 30}}
	h2.tm.mu.Unlock()
	h2.tm.show(t, "%7", "codex", "codex/idle.txt")
	h2.step()
	if s := h2.session("%7"); s.TaskList != "PRD-AUTH" || s.Tasks == nil || s.Tasks.Total != 3 {
		t.Fatalf("after restart: %+v", s)
	}
	if l := h2.sup.Links(); len(l) != 1 || l[0].Session != "orch-1" || l[0].By != "cli" {
		t.Fatalf("Links() = %+v", l)
	}

	// Unlink.
	got, err = h2.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "orch-1"}, Origin: "tui"})
	if err != nil || got.TaskList != "" {
		t.Fatalf("unlink: %+v, %v", got, err)
	}
	h2.tm.show(t, "%7", "codex", "codex/working_spinner.txt")
	h2.step()
	if s := h2.session("%7"); s.TaskList != "" {
		t.Fatalf("after unlinking: %+v", s)
	}
	if l := h2.sup.Links(); len(l) != 0 {
		t.Fatalf("Links() after unlink = %+v", l)
	}
}

func TestLinkRefusals(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.LinksPath = filepath.Join(t.TempDir(), LinksFile) })
	h.tm.show(t, "%1", "codex", "codex/idle.txt")
	h.step()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  api.LinkRequest
		want error
	}{
		{"bad list id", api.LinkRequest{Target: api.Target{Session: "orch-1"}, TaskList: "../etc"}, api.ErrBadRequest},
		{"list id with a slash", api.LinkRequest{Target: api.Target{Session: "orch-1"}, TaskList: "a/b"}, api.ErrBadRequest},
		{"no target", api.LinkRequest{TaskList: "PRD-X"}, api.ErrBadRequest},
		{"unknown session", api.LinkRequest{Target: api.Target{Session: "nope"}, TaskList: "PRD-X"}, api.ErrUnknownTarget},
		{"unknown pane", api.LinkRequest{Target: api.Target{Pane: "%9"}, TaskList: "PRD-X"}, api.ErrUnknownTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.sup.Link(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if l := h.sup.Links(); len(l) != 0 {
		t.Fatalf("refused links were kept: %+v", l)
	}
	// Removing the link of a session that is gone is allowed.
	if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "gone"}}); err != nil {
		t.Fatalf("unlink a gone session: %v", err)
	}
}

// TestLinkByPaneBeatsSession: a pane's own link wins over its session's.
func TestLinkByPaneBeatsSession(t *testing.T) {
	h := newHarness(t, nil)
	h.tm.show(t, "%1", "codex", "codex/idle.txt")
	h.step()
	ctx := context.Background()
	if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "orch-1"}, TaskList: "A"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Pane: "%1"}, TaskList: "B"}); err != nil {
		t.Fatal(err)
	}
	h.tm.show(t, "%1", "codex", "codex/working_spinner.txt")
	h.step()
	if s := h.session("%1"); s.TaskList != "B" {
		t.Fatalf("task list = %q, want B", s.TaskList)
	}
}

func TestLinksFileDamagedIsSetAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), LinksFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.LinksPath = path })
	if l := h.sup.Links(); len(l) != 0 {
		t.Fatalf("links = %+v", l)
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Fatalf("damaged file not set aside: %v", err)
	}
}
