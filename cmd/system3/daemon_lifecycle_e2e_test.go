package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// With `system3 serve` running, the CLI's spawn, stop and outcomes run in
// the daemon, through the one service over the socket: spawn's steps
// reach the CLI as they happen, a failed spawn's account (its step, what
// was cleaned up) comes back whole, the daemon audits the spawn as the
// CLI's peer claiming "cli", and an outcome reported from the CLI is one
// the daemon's store lists.
func TestLifecycleThroughTheDaemon(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	state := testkit.ShortDir(t)
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	d := startDaemon(t, env)
	repo := filepath.Join(realPath(t, t.TempDir()), "app")
	gitInit(t, repo)

	// A command line that exits at once: the spawn fails at readiness,
	// after its session was made, and undoes it.
	agent := "sh -c 'echo no API key found >&2; exit 7'"
	code, out, errOut := invoke(t, env, "spawn", "--initiative", "quick", "--goal", "g", "--repo", repo, "--agent", agent)
	if code == 0 || !strings.Contains(errOut, "no API key found") || !strings.Contains(errOut, "cleaned up:") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	for _, step := range []string{"system3: checking the repository", "system3: creating worktree " + filepath.Join(repo, "trees", "quick"), "system3: starting sh -c"} {
		if !strings.Contains(errOut, step) {
			t.Errorf("no progress line %q in %q", step, errOut)
		}
	}
	if ok, err := tmux.NewClient(srv).HasSession(context.Background(), "orch-quick"); err != nil || ok {
		t.Errorf("the failed spawn's session is left: %v %v", ok, err)
	}

	// --json prints the failure document from the account that crossed
	// the socket.
	code, out, _ = invoke(t, env, "spawn", "--initiative", "quick", "--goal", "g", "--repo", repo, "--agent", agent, "--json")
	var doc struct {
		Status, Step, Error string
		CleanedUp           []string `json:"cleaned_up"`
	}
	if code == 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Status != "failed" || doc.Step == "" || len(doc.CleanedUp) == 0 {
		t.Fatalf("spawn --json: exit %d, %q", code, out)
	}

	// The daemon audited both spawns as this process claiming "cli".
	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	spawns := 0
	for _, e := range entries {
		if e.Action != "spawn" {
			continue
		}
		spawns++
		if !strings.HasPrefix(e.Origin, fmt.Sprintf("socket:pid=%d,", os.Getpid())) || api.Claimed(e.Origin) != "cli" {
			t.Errorf("spawn audited as %q: want this process's socket origin claiming cli", e.Origin)
		}
	}
	if spawns != 2 {
		t.Errorf("%d spawn entries, want 2: %+v", spawns, entries)
	}

	// stop's refusal comes back with its sentence.
	if code, _, errOut := invoke(t, env, "stop", "nothere"); code == 0 || !strings.Contains(errOut, "no tmux session orch-nothere or nothere") {
		t.Errorf("stop nothere: exit %d, %q", code, errOut)
	}

	// An outcome reported from the CLI is in the daemon's store.
	if code, _, errOut := invoke(t, env, "outcome", "report", "add OAuth", "--outcome", "success", "--reasoning", "Goal: login works. Steps: added the flow, then tested it."); code != 0 {
		t.Fatalf("outcome report: exit %d, %q", code, errOut)
	}
	code, out, errOut = invoke(t, env, "outcomes", "--json")
	if code != 0 || !strings.Contains(out, `"add OAuth"`) {
		t.Fatalf("outcomes: exit %d, %q %q", code, out, errOut)
	}
	if s := d.stderr(); strings.Contains(s, "panic") {
		t.Fatalf("the daemon: %s", s)
	}
}
