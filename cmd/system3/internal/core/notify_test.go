package core

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestNotifierRunsCommandAndTmuxMessage(t *testing.T) {
	f := monitortest.NewService(t, nil)
	f.Raise(t, monitortest.WakeDocs) // pending before start: not announced again
	dir := t.TempDir()
	var mu sync.Mutex
	var shown []string
	display := func(_ context.Context, s string) error {
		mu.Lock()
		defer mu.Unlock()
		shown = append(shown, s)
		return nil
	}
	n, err := newNotifier(nil, `cat > "`+dir+`/$SYSTEM3_WAKE_REASON.json"; echo "$SYSTEM3_WAKE_TEXT" > "`+dir+`/text"`, display, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx, f, time.Time{}) }()
	eventually(t, "the subscription", func() bool { return f.InFlight() > 0 })

	f.Raise(t, api.Wake{Reason: api.ReasonHeartbeat, Key: "heartbeat"})
	auth := f.Raise(t, monitortest.WakeAuth)
	path := filepath.Join(dir, "awaiting_input.json")
	eventually(t, "the command's output", func() bool { _, err := os.Stat(filepath.Join(dir, "text")); return err == nil })
	var got api.Wake
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &got); err != nil || got.ID != auth.ID || got.Question != "Edit auth.go?" {
		t.Fatalf("command stdin = %s (%v)", data, err)
	}
	text, _ := os.ReadFile(filepath.Join(dir, "text"))
	if !strings.Contains(string(text), "awaiting_input in orch-auth %3: Edit auth.go? (answer the permission prompt)") {
		t.Errorf("SYSTEM3_WAKE_TEXT = %q", text)
	}
	for _, r := range []string{"heartbeat.json", "error_loop_detected.json"} {
		if _, err := os.Stat(filepath.Join(dir, r)); err == nil {
			t.Errorf("%s was announced", r)
		}
	}
	mu.Lock()
	if len(shown) != 1 || !strings.HasPrefix(shown[0], "system3: awaiting_input in orch-auth") {
		t.Errorf("tmux messages = %q", shown)
	}
	mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNotifierAnnouncesWhatNoOneDid: a notifier that subscribes anew
// after its stream ended (a dashboard whose daemon went, before it took
// the monitors over) announces the wakes raised since that moment, which
// it finds pending, and not those raised before, which were announced.
func TestNotifierAnnouncesWhatNoOneDid(t *testing.T) {
	f := monitortest.NewService(t, nil)
	f.Raise(t, monitortest.WakeDocs) // raised while the old stream ran: announced then
	time.Sleep(10 * time.Millisecond)
	from := time.Now()
	auth := f.Raise(t, monitortest.WakeAuth) // raised with no stream
	dir := t.TempDir()
	n, err := newNotifier(nil, `cat > "`+dir+`/$SYSTEM3_WAKE_REASON.json"`, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx, f, from) }()
	path := filepath.Join(dir, "awaiting_input.json")
	var got api.Wake
	// The shell makes the file before cat has written to it.
	eventually(t, "the wake raised with no stream to be announced", func() bool {
		data, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(data, &got) == nil
	})
	if got.ID != auth.ID {
		t.Fatalf("announced %+v, want %s", got, auth.ID)
	}
	if _, err := os.Stat(filepath.Join(dir, "error_loop_detected.json")); err == nil {
		t.Error("the wake raised before the stream ended was announced again")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestNotifierConfig(t *testing.T) {
	if _, err := newNotifier([]string{"awaiting_input", "bogus"}, "", nil, nil); err == nil || !strings.Contains(err.Error(), `unknown wake reason "bogus"`) {
		t.Fatalf("err = %v", err)
	}
	n, err := newNotifier([]string{"heartbeat"}, "", nil, nil)
	if err != nil || len(n.reasons) != 1 || n.Active() {
		t.Fatalf("n = %+v, %v", n, err)
	}
}

func TestNotifierCommandTimeoutKillsGroup(t *testing.T) {
	n, _ := newNotifier(nil, "sleep 600 & wait", nil, slog.New(slog.DiscardHandler))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	n.runCommand(ctx, monitortest.WakeAuth)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("runCommand took %v after its context ended", d)
	}
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, what, cond)
}
