package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("made with mode %v", fi.Mode().Perm())
	}
	for _, mode := range []os.FileMode{0o777, 0o755, 0o701, 0o720} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		var unsafe *UnsafeError
		err := Ensure(dir)
		if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), "chmod 700 "+dir) || !strings.Contains(err.Error(), "other users") {
			t.Fatalf("mode %v: %v", mode, err)
		}
	}
	os.Chmod(dir, 0o700)
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "notify-secret")
	if err := CheckSecret(p); err != nil {
		t.Fatalf("a missing secret: %v", err)
	}
	if err := os.WriteFile(p, []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckSecret(p); err == nil || !strings.Contains(err.Error(), "chmod 600 "+p) {
		t.Fatalf("a 0644 secret: %v", err)
	}
	os.Chmod(p, 0o600)
	if err := CheckSecret(p); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hook.key")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckSecret(link); err == nil || !strings.Contains(err.Error(), "not a plain file") {
		t.Fatalf("a linked secret: %v", err)
	}
}

// A link planted where system3 appends (its log, the audit log) is not
// followed: the file it points to stays untouched.
func TestOpenAppendRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	var unsafe *UnsafeError
	if f, err := OpenAppend(planted); !errors.As(err, &unsafe) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("OpenAppend through a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "mine\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
	f, err := OpenAppend(filepath.Join(dir, "system3.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Fatalf("made with mode %v", fi.Mode().Perm())
	}
}
