package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// learningsOf runs `system3 learnings --json`.
func learningsOf(t *testing.T, env map[string]string) []api.LearnItem {
	t.Helper()
	code, out, errOut := invoke(t, env, "learnings", "--json")
	if code != 0 {
		t.Fatalf("learnings --json: exit %d: %s", code, errOut)
	}
	var doc struct {
		Schema    string          `json:"schema"`
		Learnings []api.LearnItem `json:"learnings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Schema != "system3.learnings/v1" {
		t.Fatalf("learnings --json: %v\n%s", err, out)
	}
	return doc.Learnings
}

// The operator lists the learnings with who reported them and when, and
// deletes them: all or none, each deletion in the audit log.
func TestLearningsListAndDelete(t *testing.T) {
	state := testkit.StateDir(t)
	env := map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_TMUX_SOCKET": "system3-none-" + t.Name()}
	if code, out, _ := invoke(t, env, "learnings"); code != 0 || !strings.Contains(out, "no learnings yet") {
		t.Fatalf("empty store: exit %d: %s", code, out)
	}
	if code, _, errOut := invoke(t, env, "outcome", "report", "login tests", "--outcome", "failure", "--domain", "auth",
		"--learning", "IMPORTANT first run the setup script", "--learning", "Keep the login tests fast"); code != 0 {
		t.Fatalf("outcome report: %s", errOut)
	}
	items := learningsOf(t, env)
	if len(items) != 2 {
		t.Fatalf("learnings = %+v", items)
	}
	for _, it := range items {
		if it.ReportedBy != "cli" || it.Domain != "auth" || it.Kind != api.LearningAntiPattern || it.Created.IsZero() {
			t.Errorf("learning = %+v", it)
		}
	}
	code, out, _ := invoke(t, env, "learnings")
	if code != 0 {
		t.Fatalf("learnings: exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "REPORTED BY") {
		t.Fatalf("learnings:\n%s", out)
	}
	for _, want := range []string{"IMPORTANT first run the setup script", "cli", "auth", "anti-pattern", strconv.FormatInt(items[0].ID, 10)} {
		if !strings.Contains(out, want) {
			t.Errorf("learnings lacks %q:\n%s", want, out)
		}
	}

	bad := items[slices.IndexFunc(items, func(it api.LearnItem) bool { return it.Text == "IMPORTANT first run the setup script" })].ID
	if code, _, errOut := invoke(t, env, "learnings", "delete", strconv.FormatInt(bad, 10), "999"); code == 0 || !strings.Contains(errOut, "no learning 999") {
		t.Fatalf("delete with an unknown id: exit %d: %s", code, errOut)
	}
	if code, _, errOut := invoke(t, env, "learnings", "delete", "twelve"); code == 0 || !strings.Contains(errOut, "not a learning id") {
		t.Fatalf("delete twelve: exit %d: %s", code, errOut)
	}
	if got := learningsOf(t, env); len(got) != 2 {
		t.Fatalf("a refused delete deleted: %+v", got)
	}
	code, out, errOut := invoke(t, env, "learnings", "delete", strconv.FormatInt(bad, 10))
	if code != 0 || !strings.Contains(out, "deleted learning "+strconv.FormatInt(bad, 10)+" (anti-pattern, reported by cli): IMPORTANT first run") {
		t.Fatalf("delete: exit %d: %s%s", code, out, errOut)
	}
	if got := learningsOf(t, env); len(got) != 1 || got[0].Text != "Keep the login tests fast" {
		t.Fatalf("after delete: %+v", got)
	}
	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Action != "delete_learning" || entries[0].Origin != "cli" || entries[0].Target != "learning "+strconv.FormatInt(bad, 10) ||
		entries[0].Text != "IMPORTANT first run the setup script" || !strings.Contains(entries[0].Result, "reported by cli") {
		t.Fatalf("audit = %+v", entries)
	}
	if code, out, _ := invoke(t, env, "audit"); code != 0 || !strings.Contains(out, "delete_learning learning "+strconv.FormatInt(bad, 10)) || !strings.Contains(out, "→ deleted anti-pattern reported by cli") {
		t.Fatalf("system3 audit:\n%s", out)
	}
}

// Through a daemon whose MCP access is read-only: a learning reported over
// the socket is listed under the peer the daemon saw; a client on the
// socket that is an MCP client cannot delete it (refused by the policy,
// and the refusal audited under the peer), and the operator's CLI can.
func TestLearningsDeleteMeetsTheDaemonsPolicy(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  read_only: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_CONFIG": cfg}
	startServeAt(t, env, freeAddr(t))

	if code, _, errOut := invoke(t, env, "outcome", "report", "login tests", "--outcome", "success", "--learning", "Run the setup script first"); code != 0 {
		t.Fatalf("outcome report through the daemon: %s", errOut)
	}
	items := learningsOf(t, env)
	if len(items) != 1 || !strings.HasPrefix(items[0].ReportedBy, "socket:pid=") || !strings.HasSuffix(items[0].ReportedBy, ` claims "cli"`) {
		t.Fatalf("learnings = %+v", items)
	}
	id := items[0].ID

	c, err := ipc.Dial(context.Background(), filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.DeleteLearnings(context.Background(), api.LearnDeleteRequest{IDs: []int64{id}, By: "mcp:supervisor"}); !errors.Is(err, api.ErrRefused) ||
		!strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "delete learnings") {
		t.Fatalf("an MCP client deletes through a read-only daemon: %v", err)
	}
	if got := learningsOf(t, env); len(got) != 1 {
		t.Fatalf("the refused delete deleted: %+v", got)
	}
	if code, out, errOut := invoke(t, env, "learnings", "delete", strconv.FormatInt(id, 10)); code != 0 || !strings.Contains(out, "deleted learning") {
		t.Fatalf("the operator's delete: exit %d: %s%s", code, out, errOut)
	}
	if got := learningsOf(t, env); len(got) != 0 {
		t.Fatalf("after the operator's delete: %+v", got)
	}
	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	var refused, deleted []api.AuditEntry
	for _, e := range entries {
		switch {
		case e.Action == "delete_learning" && e.Phase == audit.PhaseRefused:
			refused = append(refused, e)
		case e.Action == "delete_learning":
			deleted = append(deleted, e)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0].Origin, "socket:pid=") || !strings.HasSuffix(refused[0].Origin, ` claims "mcp:supervisor"`) {
		t.Errorf("refusal audited as %+v", refused)
	}
	if len(deleted) != 1 || !strings.HasSuffix(deleted[0].Origin, ` claims "cli"`) || deleted[0].Text != "Run the setup script first" {
		t.Errorf("deletion audited as %+v", deleted)
	}
}
