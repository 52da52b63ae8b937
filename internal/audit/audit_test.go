package audit

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
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
			if err := l.Write(api.AuditEntry{Origin: "tui", Action: "inject", Text: strings.Repeat("x", 3000)}); err != nil {
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
	if err := a.Write(api.AuditEntry{Action: "inject", Text: long}); err != nil {
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
	if err := l.Write(api.AuditEntry{Action: "keys", Keys: []string{"Enter"}}); err != nil {
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
	err := l.Write(api.AuditEntry{Action: "inject"})
	if err == nil || !strings.Contains(err.Error(), "refused until the audit log can be written") || l.Health() == nil {
		t.Fatalf("Write into a missing dir: %v, health %v", err, l.Health())
	}
	os.Mkdir(filepath.Join(dir, "missing"), 0o700)
	if err := l.Write(api.AuditEntry{Action: "inject"}); err != nil || l.Health() != nil {
		t.Fatalf("after the dir exists: %v, health %v", err, l.Health())
	}
	var nilLog *Log
	if nilLog.Write(api.AuditEntry{}) != nil || nilLog.Health() != nil || nilLog.Path() != "" {
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
		if err := l.Write(api.AuditEntry{Origin: origin, Action: "inject"}); err != nil {
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
	if err := other.Write(api.AuditEntry{Origin: "x", Action: "inject"}); err != nil {
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

// TestTextIsKeptByteForByte: a text up to the send limit is kept whole,
// invalid UTF-8 is kept as its bytes (not U+FFFD), and an action's attempt
// and result entries read back as one.
func TestTextIsKeptByteForByte(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, File)
	l := Open(dir)
	t.Cleanup(func() { l.Close() })
	if MaxText != tmux.MaxText {
		t.Fatalf("audit keeps %d bytes of text, a send types up to %d", MaxText, tmux.MaxText)
	}
	// 16 KB of harmless text, then the part that matters.
	whole := strings.Repeat("harmless text\n", (16<<10)/14+1) + strings.Repeat("payload ", (MaxText-(16<<10))/8-4)
	bad := "ok \xff\xfe\x00\x1b[201~ <&> \u2028"
	for _, e := range []api.AuditEntry{
		{ID: "a1", Phase: PhaseAttempt, Action: "inject", Pane: "%1", Text: whole},
		{ID: "r1", Phase: PhaseRefused, Action: "inject", Pane: "%1", Text: bad, Error: "byte 0xff"},
		{ID: "a1", Phase: PhaseResult, Action: "inject", Pane: "%1", Sent: true, Checked: true},
		{ID: "a2", Phase: PhaseAttempt, Action: "keys", Keys: []string{"Escape"}},
	} {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := ReadRaw(path)
	if err != nil || len(raw) != 4 {
		t.Fatalf("ReadRaw = %d entries, %v", len(raw), err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), "\ufffd") || !strings.Contains(string(data), `"text_base64"`) {
		t.Fatalf("invalid UTF-8 was not kept as base64:\n%s", data[len(data)-400:])
	}
	got, err := Read(path)
	if err != nil || len(got) != 3 {
		t.Fatalf("Read = %d entries, %v; want attempt+result folded into 3", len(got), err)
	}
	if got[0].Text != whole || got[0].Cut != 0 || got[0].Phase != PhaseResult || !got[0].Sent || !got[0].Checked {
		t.Errorf("folded entry: %d bytes (want %d), cut %d, phase %q, sent %v", len(got[0].Text), len(whole), got[0].Cut, got[0].Phase, got[0].Sent)
	}
	if got[1].Text != bad || got[1].Phase != PhaseRefused {
		t.Errorf("refused entry text %q, want %q", got[1].Text, bad)
	}
	if got[2].Phase != PhaseAttempt || got[2].Sent {
		t.Errorf("an attempt without result must read as one: %+v", got[2])
	}
}
