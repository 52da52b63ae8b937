package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the module's root, the directory holding go.mod, walking
// up from the working directory (a package's test runs in its own folder);
// it fails the test when there is none. Tests name the module's files from
// it, so a package that moves still finds them.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("find the repository root: %v", err)
	}
	return root
}

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
