package geminitest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// BinEnv overrides the Gemini CLI executable that GeminiBin returns.
const BinEnv = "SYSTEM3_GEMINI_BIN"

// GeminiBin returns the path of the pinned Gemini CLI: $SYSTEM3_GEMINI_BIN if
// set, else <repo>/e2e/node_modules/.bin/gemini. It fails the test when the
// CLI is not installed: end-to-end tests must not pass by skipping.
func GeminiBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		if err := checkExecutable(p); err != nil {
			t.Fatalf("%s=%s: %v", BinEnv, p, err)
		}
		return p
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("find the repository root: %v", err)
	}
	p := filepath.Join(root, "e2e", "node_modules", ".bin", "gemini")
	if err := checkExecutable(p); err != nil {
		t.Fatalf("Gemini CLI not installed (%v): run `npm ci --prefix e2e` in %s, or set %s", err, root, BinEnv)
	}
	return p
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
