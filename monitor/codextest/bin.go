package codextest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
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
	p := filepath.Join(root, "e2e", "node_modules", ".bin", "codex")
	if err := checkExecutable(p); err != nil {
		t.Fatalf("Codex CLI not installed (%v): run `npm ci --prefix e2e` in %s, or set %s", err, root, BinEnv)
	}
	native, err := nativeBin(filepath.Join(root, "e2e", "node_modules"))
	if err != nil {
		t.Fatalf("Codex CLI's native binary not installed (%v): run `npm ci --prefix e2e` in %s (it comes as an optional dependency), or set %s", err, root, BinEnv)
	}
	if err := checkExecutable(native); err != nil {
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
