package clitest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
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
	root := testkit.RepoRoot(t)
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
