package lifecycle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
)

// finishWorld spawns orchestrator name on fakes in a real repository and
// commits a change to file in its worktree.
func finishSetup(t *testing.T, name, file, text string) (*Manager, *world, string, *[]Outcome) {
	t.Helper()
	repo := gitRepo(t)
	w := newWorld(t)
	var outcomes []Outcome
	m := w.manager(t, func(c *Config) {
		c.Records = OpenRecords(filepath.Join(t.TempDir(), RecordsFile))
		c.Outcome = func(ctx context.Context, o Outcome) error { outcomes = append(outcomes, o); return nil }
	})
	if _, err := m.Spawn(context.Background(), api.SpawnRequest{Initiative: name, Goal: "work", Repo: repo, Origin: "cli"}); err != nil {
		t.Fatal(err)
	}
	commitIn(t, filepath.Join(repo, "trees", name), file, text)
	return m, w, repo, &outcomes
}

func commitIn(t *testing.T, dir, file, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", file)
	runGit(t, dir, "commit", "-q", "-m", "change "+file)
}

func TestFinishDiffMergeFastForwardAndRemove(t *testing.T) {
	m, w, repo, outcomes := finishSetup(t, "auth", "login.go", "package login\n")
	ctx := context.Background()
	wt := filepath.Join(repo, "trees", "auth")
	// Shown only: nothing changes.
	res, err := m.Finish(ctx, api.FinishRequest{Name: "auth", Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != "main" || res.Branch != "auth" || res.Commits != 1 || !strings.Contains(res.Stat, "login.go") ||
		!strings.Contains(res.Diff, "+package login") || res.Merged != "" || len(*outcomes) != 0 {
		t.Fatalf("finish (diff) = %+v", res)
	}
	// Removing what is not merged is refused.
	if _, err := m.Finish(ctx, api.FinishRequest{Name: "auth", Remove: true}); err == nil || !strings.Contains(err.Error(), "neither merged") {
		t.Fatalf("remove unmerged: %v", err)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatal("worktree removed although unmerged")
	}
	res, err = m.Finish(ctx, api.FinishRequest{Name: "auth", Merge: api.MergeFastForward, Remove: true, Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged != "ff" || !res.Removed || !res.BranchDeleted || !res.Stopped || res.Outcome != "success" {
		t.Fatalf("finish (merge, remove) = %+v", res)
	}
	if got := runGit(t, repo, "log", "-1", "--format=%s", "main"); got != "change login.go" {
		t.Fatalf("main head = %q, want the fast-forwarded commit", got)
	}
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("worktree still there: %v", err)
	}
	if gitOK(repo, "show-ref", "--verify", "--quiet", "refs/heads/auth") {
		t.Fatal("branch auth still there")
	}
	if ok, _ := w.HasSession(ctx, "orch-auth"); ok {
		t.Fatal("session still running")
	}
	if _, ok, _ := m.Records().Get("auth"); ok {
		t.Fatal("record kept after finish")
	}
	if len(*outcomes) != 1 || (*outcomes)[0].Result != "success" || !strings.Contains((*outcomes)[0].Summary, "1 file changed") {
		t.Fatalf("outcomes = %+v", *outcomes)
	}
}

func TestFinishMergeConflictIsRefusedAndRepoLeftClean(t *testing.T) {
	m, _, repo, outcomes := finishSetup(t, "docs", "README", "from the branch\n")
	commitIn(t, repo, "README", "from main\n")
	head := runGit(t, repo, "rev-parse", "HEAD")
	ctx := context.Background()
	// Fast-forward is impossible: diverged.
	_, err := m.Finish(ctx, api.FinishRequest{Name: "docs", Merge: api.MergeFastForward})
	if !errors.Is(err, api.ErrMergeConflict) || !strings.Contains(err.Error(), "fast-forward") {
		t.Fatalf("ff: %v", err)
	}
	_, err = m.Finish(ctx, api.FinishRequest{Name: "docs", Merge: api.MergeCommit, Remove: true})
	if !errors.Is(err, api.ErrMergeConflict) || !strings.Contains(err.Error(), "conflicts in README") || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("merge: %v", err)
	}
	if st := runGit(t, repo, "status", "--porcelain"); st != "" {
		t.Fatalf("repo not clean after a refused merge:\n%s", st)
	}
	if gitOK(repo, "rev-parse", "--verify", "--quiet", "MERGE_HEAD") {
		t.Fatal("a merge is still in progress")
	}
	if got := runGit(t, repo, "rev-parse", "HEAD"); got != head {
		t.Fatal("main moved")
	}
	if _, err := os.Stat(filepath.Join(repo, "trees", "docs")); err != nil {
		t.Fatal("worktree removed after a refused merge")
	}
	if len(*outcomes) != 2 || (*outcomes)[1].Result != "failure" || !strings.Contains((*outcomes)[1].Summary, "README") {
		t.Fatalf("outcomes = %+v", *outcomes)
	}
	// A merge commit when there is no conflict.
	m2, _, repo2, _ := finishSetup(t, "api", "api.go", "package api\n")
	commitIn(t, repo2, "other.txt", "main moved on\n")
	res, err := m2.Finish(ctx, api.FinishRequest{Name: "api", Merge: api.MergeCommit})
	if err != nil || res.Merged != "merge" {
		t.Fatalf("merge commit: %+v %v", res, err)
	}
	if parents := strings.Fields(runGit(t, repo2, "log", "-1", "--format=%P", "main")); len(parents) != 2 {
		t.Fatalf("main head has parents %v, want a merge commit", parents)
	}
}

func TestFinishPullRequestWithGh(t *testing.T) {
	m, _, repo, outcomes := finishSetup(t, "ui", "ui.go", "package ui\n")
	origin := filepath.Join(t.TempDir(), "origin.git")
	runGit(t, "", "init", "-q", "--bare", origin)
	runGit(t, repo, "remote", "add", "origin", origin)
	// A fake gh that records its arguments.
	bin := t.TempDir()
	argsFile := filepath.Join(t.TempDir(), "gh-args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + argsFile + "\n" +
		"case \"$1\" in pr) echo https://github.com/o/r/pull/7;; esac\n"
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()
	res, err := m.Finish(ctx, api.FinishRequest{Name: "ui", PR: true, Title: "UI work", Remove: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pushed || res.PRURL != "https://github.com/o/r/pull/7" || !res.Removed || !res.BranchDeleted || res.Outcome != "success" {
		t.Fatalf("finish (pr) = %+v", res)
	}
	b, _ := os.ReadFile(argsFile)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || lines[0] != "auth status" || !strings.HasPrefix(lines[1], "pr create --base main --head ui --title UI work --body ") {
		t.Fatalf("gh called with:\n%s", b)
	}
	if !gitOK(origin, "show-ref", "--verify", "--quiet", "refs/heads/ui") {
		t.Fatal("branch not pushed")
	}
	if len(*outcomes) != 1 || !strings.Contains((*outcomes)[0].Summary, "pull/7") {
		t.Fatalf("outcomes = %+v", *outcomes)
	}
	// gh logged out: a clear error.
	m2, _, _, _ := finishSetup(t, "ux", "ux.go", "package ux\n")
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte("#!/bin/sh\necho 'You are not logged into any GitHub hosts' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Finish(ctx, api.FinishRequest{Name: "ux", PR: true}); err == nil || !strings.Contains(err.Error(), "gh auth login") {
		t.Fatalf("logged out gh: %v", err)
	}
}
