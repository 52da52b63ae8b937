package claudetest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
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
	return clitest.Bin(t, "claude", BinEnv, "Claude Code CLI", checkExecutable)
}

func checkExecutable(p string) error {
	if err := clitest.CheckExecutable(p); err != nil {
		return err
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
