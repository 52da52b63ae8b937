package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/testsupport/claudetest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// TestRealClaudeFormatterLoop runs the real Claude Code CLI, scripted by
// the fake API into a formatter loop (edit a file, run the linter, edit it
// again...), under real monitors: tool calls come from its transcript, the
// coach raises the preventive reminder at the second round with the user's
// directive quoted, attaches it to a wake, types it into the pane
// (auto_send), and the agent receives it as its next prompt.
func TestRealClaudeFormatterLoop(t *testing.T) {
	fakeAPI := claudetest.NewFakeAPI(t)
	cs := claudetest.Start(t, claudetest.Options{API: fakeAPI, Args: []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}})
	file := filepath.Join(cs.Dir, "app.go")
	if err := os.WriteFile(filepath.Join(cs.Dir, "lint"), []byte("#!/bin/sh\necho \"app.go:1: not formatted\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fakeAPI.AddRule(claudetest.Rule{Contains: "tidy-app", Steps: []claudetest.Step{
		{Tool: claudetest.Write(file, "package app\nvar A = 1\n")},
		{Tool: claudetest.Bash("./lint app.go", "Check formatting")},
		{Tool: claudetest.Edit(file, "var A = 1", "var A = 2")},
		{Tool: claudetest.Bash("./lint app.go", "Check formatting")},
		{Tool: claudetest.Edit(file, "var A = 2", "var A = 3")},
		{Tool: claudetest.Bash("./lint app.go", "Check formatting")},
		{Text: "Still not formatted."},
	}})
	claudeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(claudeDir, "CLAUDE.md"), []byte("## Style\n\n- Never fix formatting by hand: run the formatter and keep what it writes.\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The monitors and the coach, as core.App.StartMonitors wires them.
	srv := tmux.Server{Path: cs.Socket()}
	eng, err := rules.New(agents.Builtin(), rules.Source{Name: "rules.yaml", Data: []byte(`version: 1
patterns:
  - id: formatter_loop
    name: Formatter loop
    preventive: true
    auto_send: true
    threshold: 3
    keywords: [format, formatting]
    trigger:
      match: {tool: '^(Edit|Write)$'}
      after: {tool: '^Bash$', command: '\blint\b'}
      same: file
    interventions:
      - {id: run-the-formatter, suggestion: 'Run the formatter on {{.Subject}} instead of editing it by hand.', expected: The check passes.}
`)})
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := wake.Open(wake.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := learn.OpenDB(filepath.Join(t.TempDir(), learn.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	client := tmux.NewClient(srv)
	var sup *Supervisor
	co, err := coach.New(context.Background(), coach.Config{DB: db, Patterns: eng.Patterns(), Wakes: store,
		Directives: coach.DirectiveFiles(claudeDir, ""),
		Inject: injectorFunc(func(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
			return sup.Inject(ctx, req)
		})})
	if err != nil {
		t.Fatal(err)
	}
	sup, err = New(Config{Server: srv.String(), Tmux: client, Events: watcher.Events(), Rules: eng, Wakes: store,
		Processes: ProcessTree, HeartbeatEvery: -1, Tick: 100 * time.Millisecond, Send: client, OnToolCall: co.Observe,
		Probe: func(p tmux.Pane, how *agent.Probe) AgentInfo { return ProbeAgent(how, p.PID, p.Path) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	g.Go(func() error { return co.Run(gctx) })
	defer func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Errorf("monitors: %v", err)
		}
		store.Close()
	}()

	cs.Send("tidy-app please")
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	var ev api.Wake
	for ev.Reminder == nil {
		ev, err = store.Wait(wctx, api.WakeFilter{Reasons: []api.Reason{api.ReasonErrorLoopDetected}})
		if err != nil {
			t.Fatalf("no reminder wake: %v\nscreen:\n%s", err, cs.Capture())
		}
		store.Ack(ev.ID, "test")
	}
	r := ev.Reminder
	if r.Pattern != "formatter_loop" || !r.Preventive || !r.AutoSend || ev.Pane != cs.Pane || ev.Agent != "claude" ||
		!strings.HasPrefix(r.Text, "⚠️ Loop detected: Formatter loop ("+file+")") ||
		!strings.Contains(r.Text, `Your directive: "Never fix formatting by hand: run the formatter and keep what it writes."`) ||
		!strings.Contains(r.Text, "this reminder comes before the 3rd") {
		t.Fatalf("wake = %+v\nreminder:\n%s", ev, r.Text)
	}
	a, err := co.Alert(ctx, r.Alert)
	if err != nil || a.Count != 2 {
		t.Fatalf("alert = %+v, %v", a, err)
	}
	// The reminder reaches the agent as a prompt.
	deadline := time.Now().Add(60 * time.Second)
	testkit.WaitFor(t, time.Until(deadline), "the reminder in the agent's prompts", func() bool {
		for _, p := range fakeAPI.MainPrompts() {
			if strings.Contains(p, "Loop detected: Formatter loop") && strings.Contains(p, "Run the formatter on "+file) {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("prompts %q\nscreen:\n%s", fakeAPI.MainPrompts(), cs.Capture()) })
	// Inject returns once it has checked the pane took the text, which
	// may be after the agent already answered it.
	testkit.WaitForValue(t, time.Until(deadline), "the alert sent by auto", func() (api.CoachAlert, bool) {
		a, err := co.Alert(ctx, r.Alert)
		if err != nil {
			t.Fatal(err)
		}
		return a, a.Status == api.CoachStatusSent && a.SentBy == "auto"
	})
}

type injectorFunc func(ctx context.Context, req api.InjectRequest) (api.ActionResult, error)

func (f injectorFunc) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	return f(ctx, req)
}
