package claudetest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// PinnedVersion is the Claude Code version e2e/package.json pins: the one
// the tests run and the captures in monitor/testdata/captures/claude show.
const PinnedVersion = "2.1.330"

// BinEnv overrides the Claude Code executable that ClaudeBin returns.
const BinEnv = "SYSTEM3_CLAUDE_BIN"

// ClaudeBin returns the path of the pinned Claude Code CLI: $SYSTEM3_CLAUDE_BIN
// if set, else <repo>/e2e/node_modules/.bin/claude. It fails the test when the
// CLI is not installed: end-to-end tests must not pass by skipping.
func ClaudeBin(t testing.TB) string {
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
	p := filepath.Join(root, "e2e", "node_modules", ".bin", "claude")
	if err := checkExecutable(p); err != nil {
		t.Fatalf("Claude Code CLI not installed (%v): run `npm ci --prefix e2e` in %s, or set %s", err, root, BinEnv)
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
	// Without its postinstall script the package leaves a shell stub that
	// only prints an error in place of the native binary.
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	if bytes.Contains(head[:n], []byte("native binary not installed")) {
		return errors.New("the package's postinstall script did not run, so this is a stub, not the native binary")
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
