package lifecycle

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// TestRestoreCline: a Cline orchestrator whose conversation id was learnt
// is restored with cline --id ID. Cline has no resume of its latest
// conversation, so one whose id was never learnt starts a new
// conversation, and the restore says so plainly: what happened, why, and
// how a person goes on with the earlier one (its id from cline history
// --json, then cline --id ID in the session).
func TestRestoreCline(t *testing.T) {
	launch := []string{"cline", "--auto-approve", "false"}
	for _, c := range []struct {
		name, id string
		want     []string
		reason   []string
	}{
		{"its id learnt", "1795933852735_2p04v", append(slices.Clone(launch), "--id", "1795933852735_2p04v"),
			[]string{"resumed conversation 1795933852735_2p04v"}},
		{"no id learnt", "", launch,
			[]string{"started a new cline conversation", "cline resumes one by its id only (cline --id ID)", "system3 never learnt this orchestrator's id",
				"the earlier conversation was not resumed", "`cline history --json`", "quit the new one in tmux session orch-auth and run `cline --id ID` there"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.start = api.Session{Agent: "cline", State: api.Idle}
			worktree := t.TempDir()
			recs := OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
			if err := recs.Put(Record{Name: "auth", Session: "orch-auth", Agent: "cline", Command: launch, Identified: "cline", Worktree: worktree,
				Branch: "auth", Base: "main", Created: time.Now().UTC(), AgentSessionID: c.id, State: RecordRunning}); err != nil {
				t.Fatal(err)
			}
			m := w.manager(t, func(cfg *Config) {
				cfg.Records = recs
				cfg.Agents = map[string]Agent{"cline": {Command: launch}}
			})
			out, err := m.Restore(context.Background(), api.RestoreRequest{Names: []string{"auth"}, Origin: "cli"})
			if err != nil || len(out.Orchestrators) != 1 {
				t.Fatalf("restore = %+v %v", out, err)
			}
			o := out.Orchestrators[0]
			if o.Status != api.RestoreRestored || !slices.Equal(o.Command, c.want) {
				t.Fatalf("restored %s with %q (%s), want %q", o.Status, o.Command, o.Reason, c.want)
			}
			if got := w.opts[len(w.opts)-1].Command; !slices.Equal(got, c.want) {
				t.Fatalf("tmux ran %q, want %q", got, c.want)
			}
			for _, r := range append(c.reason, worktree) {
				if c.id != "" && r == worktree {
					continue
				}
				if !strings.Contains(o.Reason, r) {
					t.Fatalf("reason %q\nsays nothing of %q", o.Reason, r)
				}
			}
			if c.id == "" && strings.Contains(o.Reason, "has no resume") {
				t.Fatalf("reason %q says Cline has no resume", o.Reason)
			}
		})
	}
}
