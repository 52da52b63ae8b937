package monitor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
	"github.com/system3-dev/system3/wake"
)

func TestValidationOfCompletedTasks(t *testing.T) {
	root := t.TempDir()
	list := filepath.Join(root, "PRD-AUTH")
	work := t.TempDir()
	if err := os.MkdirAll(list, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTask := func(status string) {
		t.Helper()
		body := `{"id":"1","subject":"Implement login form","status":"` + status + `","blocks":[],"blockedBy":[]}`
		if err := os.WriteFile(filepath.Join(list, "1.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTask("in_progress")

	store, _, err := wake.Open(wake.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w := tasks.NewWatcher(tasks.Config{Root: root})
	sub := w.Subscribe(0)
	defer sub.Close()
	v, err := NewValidator([]ValidationRule{
		{List: "OTHER-*", Command: "exit 0"},
		{List: "PRD-*", Dir: work, Command: `if [ -f ok ]; then echo all tests pass; else echo "--- FAIL: TestLogin (login_test.go:12)"; exit 3; fi`},
	}, sub.C(), store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- w.Run(ctx) }()
	go func() { done <- v.Run(ctx) }()
	defer func() { cancel(); <-done; <-done }()
	<-w.Ready()

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	writeTask("completed")
	ev, err := store.Wait(wctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonValidationFailed}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Details, "login_test.go:12") || !strings.Contains(ev.Evidence.Lines[0], "exited 3") ||
		!strings.Contains(ev.SuggestedAction, "Implement login form") || ev.Key != "validation_failed/PRD-AUTH/1" {
		t.Fatalf("wake = %+v", ev)
	}

	// The agent fixes it and completes the task again: the run passes and
	// the condition ends.
	if err := os.WriteFile(filepath.Join(work, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cleared, err := store.Subscribe(wctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonValidationFailed}})
	if err != nil {
		t.Fatal(err)
	}
	// The watcher must see the task reopened, or the two writes read as
	// one and nothing is completed again.
	reopened := w.Subscribe(16)
	defer reopened.Close()
	writeTask("in_progress")
	for seen := false; !seen; {
		select {
		case ev := <-reopened.C():
			seen = ev.Kind == tasks.EventTaskStatusChanged && ev.To == tasks.StatusInProgress
		case <-wctx.Done():
			t.Fatal("the watcher never saw the task reopened")
		}
	}
	writeTask("completed")
	for m := range cleared.C {
		if m.Kind == api.WakeResolved {
			break
		}
	}
	res := v.Results()
	if len(res) != 1 || !res[0].Passed || !strings.Contains(res[0].Output, "all tests pass") || res[0].Subject != "Implement login form" {
		t.Fatalf("results = %+v", res)
	}
}

func TestValidationTimeoutKillsTheProcessGroup(t *testing.T) {
	start := time.Now()
	ok, code, out := runCommand(context.Background(), "echo started; sleep 30 & wait", t.TempDir(), 200*time.Millisecond)
	if ok || code != -1 || !strings.Contains(out, "started") || !strings.Contains(out, "validation timeout") {
		t.Fatalf("ok=%v code=%d out=%q", ok, code, out)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %s: the backgrounded sleep kept the run alive", took)
	}
}

func TestValidationRuleErrors(t *testing.T) {
	for _, r := range []ValidationRule{{List: "", Command: "x"}, {List: "a", Command: ""}, {List: "[", Command: "x"}, {List: "a", Command: "x", Timeout: -1}} {
		if _, err := NewValidator([]ValidationRule{r}, nil, nil, nil, nil); err == nil {
			t.Errorf("rule %+v accepted", r)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 16}
	b.Write([]byte("line one\nline two\nline three\n"))
	if got := b.String(); got != "[…]\nline three\n" {
		t.Fatalf("tail = %q", got)
	}
}
