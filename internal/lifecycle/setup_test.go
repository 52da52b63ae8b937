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

func TestSpawnSetsUpTheWorktree(t *testing.T) {
	repo := gitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "cache", "deps"), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	w := newWorld(t)
	m := w.manager(t, func(c *Config) {
		c.Setup = Setup{Copy: []string{".env"}, Link: []string{"cache"}, Command: "echo installing; cat .env > installed", LogDir: logs}
	})
	res, err := m.Spawn(context.Background(), api.SpawnRequest{Initiative: "auth", Goal: "work", Repo: repo, Origin: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	wt := res.Worktree
	if b, err := os.ReadFile(filepath.Join(wt, "installed")); err != nil || string(b) != "SECRET=1\n" {
		t.Fatalf("set-up command did not run after the copy: %q %v", b, err)
	}
	if dst, err := os.Readlink(filepath.Join(wt, "cache")); err != nil || dst != filepath.Join(repo, "cache") {
		t.Fatalf("cache link = %q %v", dst, err)
	}
	if b, _ := os.ReadFile(res.SetupLog); res.SetupLog != filepath.Join(logs, "auth.log") || !strings.Contains(string(b), "installing") {
		t.Fatalf("set-up log %s: %q", res.SetupLog, b)
	}
	if len(res.Setup) != 3 {
		t.Fatalf("setup steps = %v", res.Setup)
	}

	// A failing command fails the spawn, which is undone; the log stays.
	m = w.manager(t, func(c *Config) {
		c.Setup = Setup{Command: "echo npm ERR! missing lockfile; exit 3", LogDir: logs}
	})
	_, err = m.Spawn(context.Background(), api.SpawnRequest{Initiative: "billing", Goal: "work", Repo: repo, Origin: "cli"})
	var serr *api.SpawnError
	if !errors.As(err, &serr) || serr.Step != api.StepSetup || !strings.Contains(err.Error(), "missing lockfile") ||
		!strings.Contains(err.Error(), filepath.Join(logs, "billing.log")) || !strings.Contains(err.Error(), "removed worktree") {
		t.Fatalf("failing set-up: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "trees", "billing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("worktree left after a failed set-up: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logs, "billing.log")); err != nil {
		t.Fatalf("set-up log not kept: %v", err)
	}
}
