package audit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// An audit log planted as a link in the state dir is not written through:
// the entry fails, and the file the link names is untouched.
func TestAuditDoesNotFollowAPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, File)); err != nil {
		t.Fatal(err)
	}
	l := Open(dir)
	defer l.Close()
	if err := l.Write(api.AuditEntry{Time: time.Now(), Origin: "cli", Action: "inject", Text: "hi"}); err == nil {
		t.Fatal("wrote the audit entry through a planted link")
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
}
