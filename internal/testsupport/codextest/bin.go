package codextest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// BinEnv overrides the Codex executable that CodexBin returns.
const BinEnv = "SYSTEM3_CODEX_BIN"

// CodexBin returns the path of the pinned Codex CLI: $SYSTEM3_CODEX_BIN if
// set, else <repo>/e2e/node_modules/.bin/codex, the package's node launcher
// (it runs the native binary of the platform package @openai/codex-linux-x64,
// an optional dependency). It fails the test when either is missing:
// end-to-end tests must not pass by skipping.
func CodexBin(t testing.TB) string {
	t.Helper()
	p := clitest.Bin(t, "codex", BinEnv, "Codex CLI", nil)
	if os.Getenv(BinEnv) != "" {
		return p
	}
	root := testkit.RepoRoot(t)
	native, err := nativeBin(filepath.Join(root, "e2e", "node_modules"))
	if err != nil {
		t.Fatalf("Codex CLI's native binary not installed (%v): run `npm ci --prefix e2e` in %s (it comes as an optional dependency), or set %s", err, root, BinEnv)
	}
	if err := clitest.CheckExecutable(native); err != nil {
		t.Fatalf("Codex CLI's native binary %s: %v: run `npm ci --prefix e2e` in %s, or set %s", native, err, root, BinEnv)
	}
	return p
}

// nativeBin is where the launcher looks for the platform's binary.
func nativeBin(nodeModules string) (string, error) {
	var pkg, triple string
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		pkg, triple = "codex-linux-x64", "x86_64-unknown-linux-musl"
	case "linux/arm64":
		pkg, triple = "codex-linux-arm64", "aarch64-unknown-linux-musl"
	case "darwin/amd64":
		pkg, triple = "codex-darwin-x64", "x86_64-apple-darwin"
	case "darwin/arm64":
		pkg, triple = "codex-darwin-arm64", "aarch64-apple-darwin"
	default:
		return "", fmt.Errorf("no Codex binary for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return filepath.Join(nodeModules, "@openai", pkg, "vendor", triple, "bin", "codex"), nil
}
