package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/wake/notify"
)

// TestRealClaudePushesEachPrompt: the real Claude Code asks two Bash
// prompts in a row, the same question about two commands. A real system3
// serve pushes each to ntfy, naming its command; the operator answers the
// first from the CLI; the first push's "Yes", tapped once the second prompt
// is on screen, is refused and approves nothing; the second push's last
// button declines the production command.
func TestRealClaudePushesEachPrompt(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t,
		claudetest.Rule{Contains: "migrate-twice", Steps: []claudetest.Step{
			{Text: "Migrating staging first.", Tool: claudetest.Bash("./migrate.sh --env staging", "Migrate staging")},
			{Text: "Now production.", Tool: claudetest.Bash("./migrate.sh --env production --drop-all-tables", "Migrate production")},
		}},
	)
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: []string{"--permission-mode", "default"}})
	if err := os.WriteFile(filepath.Join(cs.Dir, "migrate.sh"), []byte("#!/bin/sh\necho ran-ok \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newNtfyRecorder(t)
	addr := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("notify:\n  ntfy:\n    url: "+rec.URL+"/system3-test\n    actions_url: http://"+addr+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": testkit.ShortDir(t), "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": cs.Socket(), "SYSTEM3_CONFIG": cfg}
	startServeAt(t, env, addr)

	push := func(n int) notify.NtfyMessage { t.Helper(); return rec.nth(t, n, cs.Capture) }

	cs.Send("migrate-twice please")
	first := push(1)
	if !strings.Contains(first.Message, "./migrate.sh --env staging") || strings.Contains(first.Message, "production") {
		t.Fatalf("the first push:\n%s", first.Message)
	}
	cs.WaitStable(300*time.Millisecond, 0) // Claude Code ignores keys for a moment after a dialog appears
	if code, out, errOut := invoke(t, env, "answer", "--pane", cs.Pane, "yes"); code != 0 {
		t.Fatalf("answer: exit %d %s %s", code, out, errOut)
	}
	second := push(2)
	if !strings.Contains(second.Message, "./migrate.sh --env production --drop-all-tables") {
		t.Fatalf("the second push:\n%s", second.Message)
	}
	cs.WaitForText("--drop-all-tables", 0)
	if code, body := tapAction(t, first.Actions[0].URL); code != http.StatusConflict || !strings.Contains(body, "nothing was typed") {
		t.Fatalf("the first push's Yes on the second prompt: %d %s", code, body)
	}
	screen := cs.WaitStable(500*time.Millisecond, 0)
	if !strings.Contains(screen, "Do you want to proceed?") || strings.Contains(screen, "ran-ok --env production") {
		t.Fatalf("a stale tap moved the production prompt:\n%s", screen)
	}
	// The second push's last button is its No.
	last := second.Actions[len(second.Actions)-1]
	if last.Action == "view" {
		last = second.Actions[len(second.Actions)-2]
	}
	if !strings.HasPrefix(last.Label, "No") {
		t.Fatalf("the second push's buttons: %+v", second.Actions)
	}
	if code, body := tapAction(t, last.URL); code != http.StatusOK {
		t.Fatalf("declining from the push: %d %s", code, body)
	}
	// Declining is Escape for Claude Code: the call does not run.
	cs.WaitForText("Interrupted · What should Claude do instead?", 0)
	if screen := cs.Capture(); strings.Contains(screen, "ran-ok --env production") || !strings.Contains(screen, "Did not run") {
		t.Fatalf("the production command ran:\n%s", cs.Capture())
	}
}
