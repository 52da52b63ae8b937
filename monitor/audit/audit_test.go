package audit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestWriteReadConcurrentCutAndTorn(t *testing.T) {
	dir := t.TempDir()
	// Two logs on one file, as two processes would have.
	a, b := Open(dir), Open(dir)
	var wg sync.WaitGroup
	for i := range 200 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			if err := l.Write(Entry{Origin: "tui", Action: "inject", Text: strings.Repeat("x", 3000)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	path := filepath.Join(dir, File)
	// A torn last line (a crash mid-write) is skipped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"origin":"cli","act`)
	f.Close()
	got, err := Read(path)
	if err != nil || len(got) != 200 {
		t.Fatalf("Read = %d entries, %v; want 200", len(got), err)
	}
	for _, e := range got {
		if e.Time.IsZero() || len(e.Text) != 3000 {
			t.Fatalf("entry = %+v", e)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}

	long := strings.Repeat("é", MaxText) // 2 bytes a rune: cut mid-rune
	if err := a.Write(Entry{Action: "inject", Text: long}); err != nil {
		t.Fatal(err)
	}
	got, _ = Read(path)
	last := got[len(got)-1]
	if len(last.Text) > MaxText || !utf8.ValidString(last.Text) || last.Cut != len(long)-len(last.Text) {
		t.Fatalf("cut entry: %d bytes, valid %v, cut %d", len(last.Text), utf8.ValidString(last.Text), last.Cut)
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, File)
	if err := os.WriteFile(path, []byte(strings.Repeat("{}\n", rotateAt/3+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	l := Open(dir)
	if err := l.Write(Entry{Action: "keys", Keys: []string{"Enter"}}); err != nil {
		t.Fatal(err)
	}
	got, _ := Read(path)
	if len(got) != 1 || got[0].Keys[0] != "Enter" {
		t.Fatalf("after rotation: %+v", got)
	}
	if fi, err := os.Stat(path + ".1"); err != nil || fi.Size() < rotateAt {
		t.Fatalf("rotated file: %v", err)
	}
}

func TestFailureIsReportedAndRecovers(t *testing.T) {
	dir := t.TempDir()
	l := Open(filepath.Join(dir, "missing"))
	err := l.Write(Entry{Action: "inject"})
	if err == nil || !strings.Contains(err.Error(), "not audited") || l.Health() == nil {
		t.Fatalf("Write into a missing dir: %v, health %v", err, l.Health())
	}
	os.Mkdir(filepath.Join(dir, "missing"), 0o700)
	if err := l.Write(Entry{Action: "inject"}); err != nil || l.Health() != nil {
		t.Fatalf("after the dir exists: %v, health %v", err, l.Health())
	}
	var nilLog *Log
	if nilLog.Write(Entry{}) != nil || nilLog.Health() != nil || nilLog.Path() != "" {
		t.Fatal("a nil log must drop entries quietly")
	}
}

// TestKeptFileFollowsPath: a log keeps its file open between entries, yet
// an entry always lands in the file at the path, after another process
// rotated or someone removed it, and after Close.
func TestKeptFileFollowsPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, File)
	l := Open(dir)
	t.Cleanup(func() { l.Close() })
	write := func(origin string) {
		t.Helper()
		if err := l.Write(Entry{Origin: origin, Action: "inject"}); err != nil {
			t.Fatal(err)
		}
	}
	origins := func(p string) []string {
		t.Helper()
		got, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range got {
			out = append(out, e.Origin)
		}
		return out
	}
	write("a")
	write("b")
	// Another process rotates and writes the first entry of the new file.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	other := Open(dir)
	t.Cleanup(func() { other.Close() })
	if err := other.Write(Entry{Origin: "x", Action: "inject"}); err != nil {
		t.Fatal(err)
	}
	write("c")
	if got := origins(path); strings.Join(got, ",") != "x,c" {
		t.Fatalf("after a rotation the file holds %v, want [x c]", got)
	}
	if got := origins(path + ".1"); strings.Join(got, ",") != "a,b" {
		t.Fatalf("the rotated file holds %v, want [a b]", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	write("d")
	// Another process appends a torn line: the next entry starts on a new line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"origin":"x","act`)
	f.Close()
	write("e")
	l.Close()
	write("f")
	if got := origins(path); strings.Join(got, ",") != "d,e,f" {
		t.Fatalf("after removal, a torn line and Close the file holds %v, want [d e f]", got)
	}
}
