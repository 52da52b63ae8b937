package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/system3-dev/system3/internal/approval"
)

// The config may hold the approval policy (policy:), which
// internal/approval reads from the same file.
func TestPolicySectionIsAccepted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	data := "log_level: info\npolicy:\n  rules:\n    - id: tests\n      command: 'go test *'\n      decision: allow\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, true); err != nil {
		t.Fatalf("Load: %v", err)
	}
	p, err := approval.Load(path)
	if err != nil || len(p.Rules()) != 1 || p.Rules()[0].ID != "tests" {
		t.Fatalf("approval.Load = %v, %v", p, err)
	}
}
