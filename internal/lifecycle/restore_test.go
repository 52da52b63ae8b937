package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestRecordsAtomicWriteAndDamagedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, RecordsFile)
	r := OpenRecords(path)
	a := Record{Name: "auth", Session: "orch-auth", Agent: "claude", Worktree: "/src/trees/auth", State: RecordRunning, AgentSessionID: "sid-a"}
	if err := r.Put(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(Record{Name: "billing", Session: "orch-billing", Worktree: "/src/trees/billing", State: RecordRunning}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("records file: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
	got, ok, err := r.Get("orch-auth")
	if err != nil || !ok || got.AgentSessionID != "sid-a" {
		t.Fatalf("Get = %+v %v %v", got, ok, err)
	}
	if found, err := r.Modify("auth", func(x *Record) bool { x.State = RecordStopped; return true }); !found || err != nil {
		t.Fatal(found, err)
	}
	recs, err := r.List()
	if err != nil || len(recs) != 2 || recs[0].State != RecordStopped {
		t.Fatalf("List = %+v %v", recs, err)
	}

	// Damaged: set aside with its contents, never lost; the next write
	// starts afresh.
	for _, bad := range []string{"{not json", `{"version":1,"orchestrators":[{"name":"x","session":"orch-x","worktree":"rel","state":"running"}]}`, `{"version":2}`,
		`{"version":1,"orchestrators":[{"name":"x","session":"orch-x","worktree":"/w","state":"running","branch":"--upload-pack=evil"}]}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = r.List()
		if !errors.Is(err, api.ErrRecordsDamaged) || !strings.Contains(err.Error(), "moved to") {
			t.Fatalf("List of %q: %v", bad, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("damaged file still in place: %v", err)
		}
		matches, _ := filepath.Glob(path + ".bad-*")
		found := false
		for _, m := range matches {
			if b, _ := os.ReadFile(m); string(b) == bad {
				found = true
			}
		}
		if !found {
			t.Fatalf("damaged contents %q not kept in %v", bad, matches)
		}
		if recs, err := r.List(); err != nil || len(recs) != 0 {
			t.Fatalf("after setting aside: %v %v", recs, err)
		}
	}
	if err := r.Put(a); err != nil {
		t.Fatal(err)
	}
	if recs, err := r.List(); err != nil || len(recs) != 1 {
		t.Fatalf("after rewrite: %v %v", recs, err)
	}
}

func TestSpawnRecordsAndRestoreResumes(t *testing.T) {
	repo := gitRepo(t)
	w := newWorld(t)
	w.start.AgentSessionID = "0a1b2c3d-sid"
	recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
	m := w.manager(t, func(c *Config) {
		c.Records = recs
		c.Agents = map[string]Agent{"claude": {Command: []string{"/opt/bin/claude", "--model", "x"}}}
	})
	ctx := context.Background()
	res, err := m.Spawn(ctx, api.SpawnRequest{Initiative: "auth", Goal: "Add login", Repo: repo, Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := recs.Get("auth")
	if err != nil || !ok || rec.AgentSessionID != "0a1b2c3d-sid" || rec.Worktree != res.Worktree || rec.Base != "main" ||
		rec.TaskList != "PRD-AUTH" || rec.Session != "orch-auth" || rec.State != RecordRunning || rec.Agent != "claude" {
		t.Fatalf("record = %+v %v %v", rec, ok, err)
	}
	// Running: skipped, not started twice.
	out, err := m.Restore(ctx, api.RestoreRequest{All: true, Origin: "cli"})
	if err != nil || len(out.Orchestrators) != 1 || out.Orchestrators[0].Status != api.RestoreSkipped {
		t.Fatalf("restore while running = %+v %v", out, err)
	}
	// The tmux server died.
	_ = w.KillSession(ctx, "orch-auth")
	w.mu.Lock()
	n := len(w.opts)
	w.mu.Unlock()
	out, err = m.Restore(ctx, api.RestoreRequest{All: true, Origin: "cli"})
	if err != nil || len(out.Orchestrators) != 1 || out.Orchestrators[0].Status != api.RestoreRestored {
		t.Fatalf("restore = %+v %v", out, err)
	}
	opt := w.opts[n]
	want := []string{"/opt/bin/claude", "--model", "x", "--resume", "0a1b2c3d-sid"}
	if !slices.Equal(opt.Command, want) || opt.Dir != res.Worktree || opt.Name != "orch-auth" || opt.Env["CLAUDE_CODE_TASK_LIST_ID"] != "PRD-AUTH" {
		t.Fatalf("restored with %+v, want argv %v", opt, want)
	}
	links := w.calls("link")
	if last := links[len(links)-1]; last.Target.Session != "orch-auth" || last.TaskList != "PRD-AUTH" {
		t.Fatalf("last link = %+v", last)
	}
	// Stopped on purpose: --all leaves it; by name brings it back.
	if _, err := m.Stop(ctx, api.StopRequest{Name: "auth", Origin: "cli"}); err != nil {
		t.Fatal(err)
	}
	if rec, _, _ := recs.Get("auth"); rec.State != RecordStopped {
		t.Fatalf("record after stop = %+v", rec)
	}
	out, _ = m.Restore(ctx, api.RestoreRequest{All: true})
	if len(out.Orchestrators) != 0 {
		t.Fatalf("restore --all restored a stopped one: %+v", out)
	}
	out, _ = m.Restore(ctx, api.RestoreRequest{Names: []string{"auth", "nope"}})
	if len(out.Orchestrators) != 2 || out.Orchestrators[0].Status != api.RestoreRestored || out.Orchestrators[1].Status != api.RestoreFailed ||
		!strings.Contains(out.Orchestrators[1].Reason, "no record") {
		t.Fatalf("restore by name = %+v", out)
	}
	// A gone worktree fails with why.
	_ = w.KillSession(ctx, "orch-auth")
	runGit(t, repo, "worktree", "remove", "--force", res.Worktree)
	out, _ = m.Restore(ctx, api.RestoreRequest{All: true})
	if len(out.Orchestrators) != 1 || out.Orchestrators[0].Status != api.RestoreFailed || !strings.Contains(out.Orchestrators[0].Reason, "worktree") {
		t.Fatalf("restore without worktree = %+v", out)
	}
}

// hookArgs are the extra arguments system3 gives an agent by name, as
// cmd/system3 does: Claude Code's --settings with the hooks, nothing for
// the others.
func hookArgs(agent string) ([]string, error) {
	if agent == "claude" {
		return []string{"--settings", "{}"}, nil
	}
	return nil, nil
}

// TestRestoreResumesAWrappedAgent: an agent whose command is a wrapper
// (a script, an nvm shim, npx) is the agent it was configured or seen as,
// not its program's file name: spawned as --agent claude with a wrapper
// for its command, or under another name and seen by the monitor as
// Claude Code, it is asked to plan in its task list and restored with
// Claude Code's hooks and --resume.
func TestRestoreResumesAWrappedAgent(t *testing.T) {
	const wrapper = "/opt/wrap/claude-wrapper"
	for _, c := range []struct {
		name, agent string
		want        []string
	}{
		{"configured as claude", "claude", []string{wrapper, "--permission-mode", "default", "--settings", "{}", "--resume", "sid-w"}},
		{"seen as claude", "work", []string{wrapper, "--settings", "{}", "--resume", "sid-w"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t)
			w := newWorld(t)
			w.start.AgentSessionID = "sid-w"
			recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
			m := w.manager(t, func(cfg *Config) {
				cfg.Records = recs
				cfg.AgentArgs = hookArgs
				cfg.Agents = map[string]Agent{
					"claude": {Command: []string{wrapper, "--permission-mode", "default"}},
					"work":   {Command: []string{wrapper}},
				}
			})
			ctx := context.Background()
			if _, err := m.Spawn(ctx, api.SpawnRequest{Initiative: "auth", Goal: "Add login", Repo: repo, Agent: c.agent, Origin: "cli"}); err != nil {
				t.Fatal(err)
			}
			if rec, _, _ := recs.Get("auth"); rec.Agent != c.agent || rec.Identified != "claude" {
				t.Fatalf("record = %+v, want agent %s identified as claude", rec, c.agent)
			}
			// Claude Code writes task lists: its first prompt says where to plan.
			if inj := w.calls("inject"); len(inj) != 1 || !strings.Contains(inj[0].Text, "task list (PRD-AUTH)") {
				t.Fatalf("first prompt = %+v", inj)
			}
			_ = w.KillSession(ctx, "orch-auth")
			out, err := m.Restore(ctx, api.RestoreRequest{All: true, Origin: "cli"})
			if err != nil || len(out.Orchestrators) != 1 {
				t.Fatalf("restore = %+v %v", out, err)
			}
			o := out.Orchestrators[0]
			if o.Status != api.RestoreRestored || !slices.Equal(o.Command, c.want) || o.Reason != "resumed conversation sid-w" {
				t.Fatalf("restored %s with %q (%s), want %q", o.Status, o.Command, o.Reason, c.want)
			}
			if got := w.opts[len(w.opts)-1].Command; !slices.Equal(got, c.want) {
				t.Fatalf("tmux ran %q, want %q", got, c.want)
			}
		})
	}
}

// TestRestoreOldRecords: a record written before records said what the
// monitor identified holds the configured agent's name and the command it
// ran; it is restored as the agent it was: by that name, else by a
// configured agent of a known name that runs the same command, else by
// its program's file name. One that none of them identifies starts
// afresh, saying why.
func TestRestoreOldRecords(t *testing.T) {
	const wrapper, other = "/opt/wrap/claude-wrapper", "/opt/wrap/agent-wrapper"
	for _, c := range []struct {
		name    string
		agent   string
		command []string
		want    []string
		reason  string
	}{
		{"named claude", "claude", []string{wrapper, "--permission-mode", "default", "--settings", "{}"},
			[]string{wrapper, "--permission-mode", "default", "--settings", "{}", "--resume", "sid-old"}, "resumed conversation sid-old"},
		{"the command of claude", "work", []string{wrapper, "--permission-mode", "default"},
			[]string{wrapper, "--permission-mode", "default", "--settings", "{}", "--resume", "sid-old"}, "resumed conversation sid-old"},
		{"its program", "plain", []string{"/opt/bin/claude"},
			[]string{"/opt/bin/claude", "--settings", "{}", "--resume", "sid-old"}, "resumed conversation sid-old"},
		{"unknown", "other", []string{other}, []string{other}, "started afresh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			path := filepath.Join(t.TempDir(), RecordsFile)
			old := map[string]any{"version": 1, "orchestrators": []map[string]any{{
				"name": "auth", "session": "orch-auth", "agent": c.agent, "command": c.command, "worktree": t.TempDir(),
				"branch": "auth", "base": "main", "task_list": "PRD-AUTH", "created": "2025-01-02T03:04:05Z",
				"agent_session_id": "sid-old", "state": "running",
			}}}
			b, err := json.Marshal(old)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			m := w.manager(t, func(cfg *Config) {
				cfg.Records = OpenRecords(path)
				cfg.AgentArgs = hookArgs
				cfg.Agents = map[string]Agent{
					"claude": {Command: []string{wrapper, "--permission-mode", "default"}},
					"work":   {Command: []string{wrapper, "--permission-mode", "default"}},
					"plain":  {Command: []string{"/opt/bin/claude"}},
					"other":  {Command: []string{other}},
				}
			})
			out, err := m.Restore(context.Background(), api.RestoreRequest{All: true, Origin: "cli"})
			if err != nil || len(out.Orchestrators) != 1 {
				t.Fatalf("restore = %+v %v", out, err)
			}
			o := out.Orchestrators[0]
			if o.Status != api.RestoreRestored || !slices.Equal(o.Command, c.want) || !strings.Contains(o.Reason, c.reason) {
				t.Fatalf("restored %s with %q (%s), want %q (%s)", o.Status, o.Command, o.Reason, c.want, c.reason)
			}
			// Restored, it is seen: the record keeps what the monitor
			// identified (the fake monitor sees Claude Code in every pane).
			if rec, _, _ := m.Records().Get("auth"); rec.Identified != "claude" {
				t.Fatalf("record after restore = %+v", rec)
			}
		})
	}
}

func TestResumeArgs(t *testing.T) {
	for _, c := range []struct {
		agent, id string
		want      []string
	}{
		{"claude", "s1", []string{"--resume", "s1"}},
		{"claude", "", []string{"--continue"}},
		{"codex", "s2", []string{"resume", "s2"}},
		{"codex", "", []string{"resume", "--last"}},
		{"gemini", "s3", []string{"--resume", "s3"}},
		{"gemini", "", []string{"--resume", "latest"}},
		{"cline", "s4", []string{"--id", "s4"}},
		{"cline", "", nil},
		{"aider", "x", nil},
	} {
		if got := ResumeArgs(c.agent, c.id); !slices.Equal(got, c.want) {
			t.Errorf("ResumeArgs(%q, %q) = %v, want %v", c.agent, c.id, got, c.want)
		}
	}
}

func TestRunLearnsSessionIDsAndAutoRestores(t *testing.T) {
	repo := gitRepo(t)
	w := newWorld(t)
	w.start.AgentSessionID = "sid-1"
	recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
	cs := &countingService{world: w}
	m := w.manager(t, func(c *Config) {
		c.Service = cs
		c.Records = recs
		c.AutoRestore = true
		c.RestoreCheckEvery = 10 * time.Millisecond
	})
	// looks waits until Run has looked at the server n more times.
	looks := func(n int64) {
		t.Helper()
		from := cs.n.Load()
		testkit.WaitFor(t, 10*time.Second, "Run looks at the server", func() bool { return cs.n.Load() >= from+n })
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	res, err := m.Spawn(ctx, api.SpawnRequest{Initiative: "auth", Goal: "Add login", Repo: repo, Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	// A new conversation (after /clear, or resumed) has a new id: learnt.
	s := w.session(res.Pane)
	s.AgentSessionID = "sid-2"
	w.put(s)
	testkit.WaitFor(t, 10*time.Second, "the record learns sid-2", func() bool {
		rec, _, _ := recs.Get("auth")
		return rec.AgentSessionID == "sid-2"
	})
	// A record written before records kept what the monitor identified
	// learns it.
	if _, err := recs.Modify("auth", func(r *Record) bool { r.Identified = ""; return true }); err != nil {
		t.Fatal(err)
	}
	s.AgentSessionID = "sid-2b"
	w.put(s)
	testkit.WaitFor(t, 10*time.Second, "the record learns the agent the monitor identified", func() bool {
		rec, _, _ := recs.Get("auth")
		return rec.AgentSessionID == "sid-2b" && rec.Identified == "claude"
	})
	// Another session's id is not taken, nor one in another directory.
	s.Path = "/elsewhere"
	s.AgentSessionID = "sid-3"
	w.put(s)

	// The server goes down, then comes back empty: restored once.
	_ = w.KillSession(ctx, "orch-auth")
	w.SetSnapshot(api.Snapshot{Server: "test", Running: false})
	looks(2)
	w.SetSnapshot(api.Snapshot{Server: "test", Running: true})
	testkit.WaitFor(t, 10*time.Second, "auto-restore", func() bool {
		ok, _ := w.HasSession(ctx, "orch-auth")
		return ok
	})
	w.mu.Lock()
	last := w.opts[len(w.opts)-1]
	n := len(w.opts)
	w.mu.Unlock()
	if !slices.Equal(last.Command[len(last.Command)-2:], []string{"--resume", "sid-2b"}) {
		t.Fatalf("auto-restored with %v", last.Command)
	}
	looks(5)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.opts) != n {
		t.Fatalf("restored again: %d sessions started, want %d", len(w.opts), n)
	}
}

// countingService counts snapshots, so a test knows Run has looked.
type countingService struct {
	*world
	n atomic.Int64
}

func (c *countingService) Snapshot(ctx context.Context) (api.Snapshot, error) {
	c.n.Add(1)
	return c.world.Snapshot(ctx)
}

func TestAdoptRecordsALinkedSession(t *testing.T) {
	repo := gitRepo(t)
	w := newWorld(t)
	recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
	m := w.manager(t, func(c *Config) { c.Records = recs })
	w.put(api.Session{Pane: "%7", Session: "docs", Agent: "claude", Path: repo, AgentSessionID: "sid-docs"})
	w.put(api.Session{Pane: "%8", Session: "shell", Agent: "shell", Path: repo})
	rec, err := m.Adopt(context.Background(), "docs", "PRD-DOCS")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Adopted || rec.Name != "docs" || rec.Worktree != repo || rec.Branch != "main" || rec.AgentSessionID != "sid-docs" || rec.TaskList != "PRD-DOCS" ||
		rec.Identified != "claude" {
		t.Fatalf("record = %+v", rec)
	}
	if got, ok, _ := recs.Get("docs"); !ok || got.AgentSessionID != "sid-docs" {
		t.Fatalf("stored = %+v %v", got, ok)
	}
	if _, err := m.Adopt(context.Background(), "shell", "X"); err == nil || !strings.Contains(err.Error(), "no claude, codex, gemini, qwen, opencode, cline or copilot") {
		t.Fatalf("adopting a shell: %v", err)
	}
}

// TestLinkKeepsRecordsInStep: a link made through the service's Link,
// from any face, told to the manager's Linked (UseLinked, as backend.New
// wires them), adopts a session of this machine linked by name and
// forgets its adopted record when the link is removed; a pane's link,
// another host's session and a failed link change no record, and a
// spawned orchestrator's record stays its own.
func TestLinkKeepsRecordsInStep(t *testing.T) {
	repo := gitRepo(t)
	w := newWorld(t)
	recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
	m := w.manager(t, func(c *Config) { c.Records = recs })
	w.put(api.Session{Pane: "%7", Session: "docs", Target: "docs:0.0", Agent: "claude", Path: repo, AgentSessionID: "sid-docs"})
	w.put(api.Session{Pane: "%9", Session: "orch-api", Target: "orch-api:0.0", Agent: "claude", Path: repo})
	ctx := context.Background()
	w.UseLinked(m.Linked)
	link := func(target api.Target, list string) {
		t.Helper()
		if _, err := w.Link(ctx, api.LinkRequest{Target: target, TaskList: list, Origin: "tui"}); err != nil {
			t.Fatal(err)
		}
	}
	names := func() []string {
		t.Helper()
		all, err := recs.List()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range all {
			out = append(out, r.Name+"="+r.TaskList)
		}
		return out
	}

	link(api.Target{Pane: "%7"}, "PRD-DOCS")
	if got := names(); len(got) != 0 {
		t.Fatalf("a pane's link made records %v", got)
	}
	link(api.Target{Session: "docs"}, "PRD-DOCS")
	if rec, ok, _ := recs.Get("docs"); !ok || !rec.Adopted || rec.TaskList != "PRD-DOCS" || rec.AgentSessionID != "sid-docs" {
		t.Fatalf("linked session's record = %+v, %v", rec, ok)
	}
	if err := recs.Put(Record{Name: "api", Session: "orch-api", Agent: "claude", Worktree: repo, State: RecordRunning}); err != nil {
		t.Fatal(err)
	}
	link(api.Target{Session: "orch-api"}, "PRD-API")
	if rec, _, _ := recs.Get("api"); rec.Adopted || rec.TaskList != "PRD-API" {
		t.Fatalf("spawned orchestrator's record = %+v", rec)
	}

	// Another host's session: its daemon keeps its own records.
	m.Linked(ctx, api.LinkRequest{Target: api.Target{Session: "web1:docs"}}, api.Session{Host: "web1", Session: "web1:docs"})
	// A link the service refused.
	if _, err := w.Link(ctx, api.LinkRequest{Target: api.Target{Session: "nope"}, TaskList: "X"}); err == nil {
		t.Fatal("link of an unknown session succeeded")
	}
	if got := names(); !slices.Equal(got, []string{"api=PRD-API", "docs=PRD-DOCS"}) {
		t.Fatalf("records = %v", got)
	}

	link(api.Target{Session: "docs"}, "")
	link(api.Target{Session: "orch-api"}, "")
	if got := names(); !slices.Equal(got, []string{"api=PRD-API"}) {
		t.Fatalf("after unlinking, records = %v (the adopted one goes, the spawned one stays)", got)
	}
}
