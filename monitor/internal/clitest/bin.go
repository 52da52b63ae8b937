package clitest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Bin returns the path of the pinned CLI called name: $envVar if set, else
// <repo>/e2e/node_modules/.bin/<name>. It fails the test when the CLI is not
// installed, naming it by label (e.g. "Gemini CLI"): end-to-end tests must
// not pass by skipping. check tells whether a path is a usable CLI; nil
// means CheckExecutable.
func Bin(t testing.TB, name, envVar, label string, check func(path string) error) string {
	t.Helper()
	if check == nil {
		check = CheckExecutable
	}
	if p := os.Getenv(envVar); p != "" {
		if err := check(p); err != nil {
			t.Fatalf("%s=%s: %v", envVar, p, err)
		}
		return p
	}
	root := RepoRoot(t)
	p := filepath.Join(root, "e2e", "node_modules", ".bin", name)
	if err := check(p); err != nil {
		t.Fatalf("%s not installed (%v): run `npm ci --prefix e2e` in %s, or set %s", label, err, root, envVar)
	}
	return p
}

// CheckExecutable reports an error unless p is a file with an execute bit.
func CheckExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// RepoRoot returns the directory holding go.mod, walking up from the working
// directory; it fails the test when there is none.
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
