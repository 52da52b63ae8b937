package cline

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/system3-dev/system3/monitor/agent"
)

// writeSession writes a session directory as Cline 3.0.65 does: its
// manifest <id>.json, written at written, beside its messages.
func writeSession(t *testing.T, dir, id string, pid int, written time.Time, ended bool) {
	t.Helper()
	d := filepath.Join(dir, id)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	end := ""
	if ended {
		end = fmt.Sprintf(`"ended_at": %q, "exit_code": 0, `, written.Add(time.Minute).Format(time.RFC3339Nano))
	}
	m := fmt.Sprintf(`{"version": 1, "session_id": %q, "source": "cli", "pid": %d, "started_at": %q, %s"status": "idle",
  "interactive": true, "provider": "openai-compatible", "model": "m", "cwd": "/w", "workspace_root": "/w"}`,
		id, pid, written.UTC().Format(time.RFC3339Nano), end)
	if err := os.WriteFile(filepath.Join(d, id+".json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(d, id+".json"), written, written); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, id+".messages.json"), []byte(`{"messages": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The pane's conversation is the newest one not ended whose process runs
// in the pane: not another pane's, not one that ended, not one whose pid
// the pane's process reuses (its manifest was written before that process
// started).
func TestSessionID(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".cline", "data", "sessions")
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	// The pane runs pid 20 (since t0) and 21 (since t0+1h).
	since := map[int]time.Time{20: t0, 21: t0.Add(time.Hour)}
	var asked []int
	holds := func(pid int, written time.Time) bool {
		asked = append(asked, pid)
		s, ok := since[pid]
		return ok && !s.After(written)
	}
	env := map[string]string{"HOME": home}
	if got := SessionID(agent.Process{Env: env, Holds: holds}); got != "" {
		t.Fatalf("no sessions directory: %q", got)
	}
	writeSession(t, dir, "1795900000000_aaaaa", 20, t0.Add(time.Minute), true)            // ended
	writeSession(t, dir, "1795900100000_bbbbb", 20, t0.Add(2*time.Minute), false)         // the pane's, before a /clear
	writeSession(t, dir, "1795900200000_ccccc", 20, t0.Add(3*time.Minute), false)         // the pane's
	writeSession(t, dir, "1795900300000_ddddd", 99, t0.Add(4*time.Minute), false)         // another pane's
	writeSession(t, dir, "1795900050000_eeeee", 21, t0.Add(-time.Minute), false)          // a dead process's, pid reused
	if err := os.MkdirAll(filepath.Join(dir, "1795900400000_fffff"), 0o755); err != nil { // no manifest yet
		t.Fatal(err)
	}
	if got := SessionID(agent.Process{Env: env, Holds: holds}); got != "1795900200000_ccccc" {
		t.Fatalf("SessionID = %q, want the newest of the pane's", got)
	}
	if slices.Contains(asked, 21) {
		t.Errorf("asked about an older session than the pane's: %v", asked)
	}
	// The pane's process only: none of the others hold.
	since = map[int]time.Time{21: t0.Add(time.Hour)}
	if got := SessionID(agent.Process{Env: env, Holds: holds}); got != "" {
		t.Fatalf("SessionID = %q for a pane holding none", got)
	}

	// A resumed conversation (cline --id ID) keeps the manifest naming the
	// process that began it: the command line names it, while it has not
	// ended; a conversation begun after it (/clear) is newer.
	since = map[int]time.Time{30: t0.Add(2 * time.Hour)}
	resumedBy := func(args ...string) string {
		return SessionID(agent.Process{Env: env, Args: append([]string{"/x/.cline", "--auto-approve", "false"}, args...), Holds: holds})
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--id", "1795900100000_bbbbb"}, "1795900100000_bbbbb"},
		{[]string{"--id=1795900100000_bbbbb"}, "1795900100000_bbbbb"},
		{[]string{"--id", "1795900000000_aaaaa"}, ""}, // ended: Cline begins anew
		{[]string{"--id", "1795900999999_nonee"}, ""},
		{[]string{"--id", "../../etc"}, ""},
		{[]string{"--", "--id", "1795900100000_bbbbb"}, ""},
		{nil, ""},
	} {
		if got := resumedBy(c.args...); got != c.want {
			t.Errorf("resumed by %q: SessionID = %q, want %q", c.args, got, c.want)
		}
	}
	writeSession(t, dir, "1795909000000_iiiii", 30, t0.Add(3*time.Hour), false)
	if got := resumedBy("--id", "1795900100000_bbbbb"); got != "1795909000000_iiiii" {
		t.Errorf("after /clear in a resumed Cline: SessionID = %q, want the new conversation", got)
	}

	// Cline's variables move the directory.
	other := t.TempDir()
	since = map[int]time.Time{20: t0}
	writeSession(t, filepath.Join(other, "sessions"), "1795900500000_ggggg", 20, t0.Add(time.Minute), false)
	writeSession(t, filepath.Join(other, "data", "sessions"), "1795900600000_hhhhh", 20, t0.Add(time.Minute), false)
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": home, "CLINE_DATA_DIR": other}, "1795900500000_ggggg"},
		{map[string]string{"HOME": home, "CLINE_SESSION_DATA_DIR": filepath.Join(other, "sessions")}, "1795900500000_ggggg"},
		{map[string]string{"HOME": home, "CLINE_DIR": other}, "1795900600000_hhhhh"},
		{map[string]string{}, ""},
	} {
		if got := SessionID(agent.Process{Env: c.env, Holds: holds}); got != c.want {
			t.Errorf("SessionID(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

func TestResume(t *testing.T) {
	if got := Spec.Resume("1795900200000_ccccc"); !slices.Equal(got, []string{"--id", "1795900200000_ccccc"}) {
		t.Errorf("Resume(id) = %q", got)
	}
	// Cline has no resume of its latest conversation.
	if got := Spec.Resume(""); got != nil {
		t.Errorf("Resume(\"\") = %q, want none", got)
	}
}
