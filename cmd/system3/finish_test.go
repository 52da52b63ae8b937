package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// TestFinishCLI finishes a worktree made by hand (no record: --repo finds
// it) on a real repository: the diff, then a fast-forward merge with the
// worktree and branch removed, and the outcome in the learning store.
func TestFinishCLI(t *testing.T) {
	repo := filepath.Join(realPath(t, t.TempDir()), "app")
	gitInit(t, repo)
	wt := filepath.Join(repo, "trees", "feat")
	gitOut(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	if err := os.WriteFile(filepath.Join(wt, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, wt, "add", "hello.txt")
	gitOut(t, wt, "commit", "-q", "-m", "say hello")
	env := map[string]string{"SYSTEM3_STATE_DIR": testkit.ShortDir(t)}
	srv := tmuxtest.NewStoppedServer(t) // no server: nothing of the user's is touched
	base := []string{"--tmux-socket-path", srv.Path}

	code, out, errOut := invoke(t, env, append(base, "finish", "feat", "--repo", repo)...)
	if code != 0 || !strings.Contains(out, "feat: branch feat against main, 1 commit(s)") || !strings.Contains(out, "hello.txt | 1 +") ||
		!strings.Contains(out, "+hello") || !strings.Contains(errOut, "nothing changed") {
		t.Fatalf("finish (diff): %d\n%s\n%s", code, out, errOut)
	}
	// Unmerged: --remove alone is refused and nothing goes.
	code, _, errOut = invoke(t, env, append(base, "finish", "feat", "--repo", repo, "--remove")...)
	if code == 0 || !strings.Contains(errOut, "neither merged into main nor pushed") {
		t.Fatalf("finish --remove unmerged: %d %s", code, errOut)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatal("worktree removed although unmerged")
	}
	code, out, errOut = invoke(t, env, append(base, "finish", "feat", "--repo", repo, "--merge", "ff", "--remove", "--json")...)
	var res api.FinishResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("finish --merge ff --remove: %d\n%s\n%s", code, out, errOut)
	}
	if res.Merged != "ff" || !res.Removed || !res.BranchDeleted || res.Outcome != "success" {
		t.Fatalf("result = %+v", res)
	}
	if got := gitOut(t, repo, "log", "-1", "--format=%s", "main"); got != "say hello" {
		t.Fatalf("main is at %q", got)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	if st := gitOut(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("main checkout not clean:\n%s", st)
	}
	code, out, _ = invoke(t, env, "outcomes", "--json")
	if code != 0 || !strings.Contains(out, `"initiative": "feat"`) || !strings.Contains(out, `"outcome": "success"`) || !strings.Contains(out, "1 file changed") {
		t.Fatalf("outcomes: %d\n%s", code, out)
	}
}
