package geminitest

import (
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// BinEnv overrides the Gemini CLI executable that GeminiBin returns.
const BinEnv = "SYSTEM3_GEMINI_BIN"

// GeminiBin returns the path of the pinned Gemini CLI: $SYSTEM3_GEMINI_BIN if
// set, else <repo>/e2e/node_modules/.bin/gemini. It fails the test when the
// CLI is not installed: end-to-end tests must not pass by skipping.
func GeminiBin(t testing.TB) string {
	t.Helper()
	return clitest.Bin(t, "gemini", BinEnv, "Gemini CLI", nil)
}
