package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// Captures writes the screen fixtures that a harness's TestCaptureFixtures
// regenerates from the real CLI when run with -update-captures.
type Captures struct {
	// Dir holds the fixtures, from the module's root, e.g.
	// "monitor/testdata/captures/claude".
	Dir string
	// Home is the fixed parent of the sessions' throwaway HOMEs, so paths in
	// the captures do not change from one regeneration to the next.
	Home string
	// FinalNewline ends every file with a newline, as text files do, so that
	// `cat FILE` leaves the cursor below the screen (a capture has no
	// newline after its last line).
	FinalNewline bool
}

// Begin empties Home, creates Dir, and removes Home when the test ends.
func (c Captures) Begin(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(c.Home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(testkit.RepoRoot(t), c.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(c.Home) })
}

// Save writes screen to Dir/name.
func (c Captures) Save(t *testing.T, name, screen string) {
	t.Helper()
	if c.FinalNewline && !strings.HasSuffix(screen, "\n") {
		screen += "\n"
	}
	if err := os.WriteFile(filepath.Join(testkit.RepoRoot(t), c.Dir, name), []byte(screen), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", name)
}
