package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/lifecycle"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// gateExempt are the writes the MCP policy does not judge, and why.
var gateExempt = map[string]string{
	"hook":  "a hook event comes from an agent's own hook, proved by its pane, and is decided by the approval policy",
	"audit": "a client's record of what it did itself (a tool call, a spawn or stop it ran), under the origin the daemon saw",
}

// TestEveryWriteMeetsTheGate: every method of the service that changes
// something (ipc.Writes), called over the state dir's socket by a client
// that says it is an MCP client, is judged by the one policy with the
// origin the daemon saw: with mcp.read_only on, each is refused and
// changes nothing. A write added without a case here fails the test, so
// a new path cannot forget the gate unnoticed.
func TestEveryWriteMeetsTheGate(t *testing.T) {
	srv := tmuxtest.NewServer(t, "cat")
	stateDir, err := os.MkdirTemp("", "s3g")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir) })
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  read_only: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "SYSTEM3_STATE_DIR": stateDir,
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_CONFIG": cfg}
	// An orchestrator to restore and finish: its repository, branch and
	// worktree, and its record, so each request is well formed and only
	// the policy can refuse it.
	repo := t.TempDir()
	wt := filepath.Join(repo, lifecycle.TreesDir, "gate")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"},
		{"branch", "gate"}, {"worktree", "add", "-q", wt, "gate"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	rec := lifecycle.Record{Name: "gate", Session: "orch-gate", Agent: "claude", Command: []string{"claude"}, Worktree: wt, Branch: "gate", Base: "main", Repo: repo, State: lifecycle.RecordStopped}
	if err := lifecycle.OpenRecords(filepath.Join(stateDir, lifecycle.RecordsFile)).Put(rec); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := newApp(t, env)
	svc, closeFn, err := a.openService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if _, attached := svc.(*ipc.Client); attached {
		t.Fatal("attached to another system3; want monitors of this test's own")
	}
	c, err := ipc.Dial(ctx, a.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const who = "mcp:gate-test"
	main := api.Target{Session: "main"}
	calls := map[string]func(facade.Service) error{
		"ack":     func(s facade.Service) error { _, err := s.Ack(ctx, "w0000000001-gate", who); return err },
		"ack_all": func(s facade.Service) error { _, err := s.AckAll(ctx, who); return err },
		"inject": func(s facade.Service) error {
			_, err := s.Inject(ctx, api.InjectRequest{Target: main, Text: "hi", Origin: who})
			return err
		},
		"keys": func(s facade.Service) error {
			_, err := s.SendKeys(ctx, api.KeysRequest{Target: main, Keys: []string{"Enter"}, Origin: who})
			return err
		},
		"answer": func(s facade.Service) error {
			_, err := s.Answer(ctx, api.AnswerRequest{Target: main, Answer: "1", Origin: who})
			return err
		},
		"interrupt": func(s facade.Service) error {
			_, err := s.Interrupt(ctx, api.InterruptRequest{Target: main, Origin: who})
			return err
		},
		"link": func(s facade.Service) error {
			_, err := s.Link(ctx, api.LinkRequest{Target: main, TaskList: "PRD-GATE", Origin: who})
			return err
		},
		"allow": func(s facade.Service) error {
			return s.Allow(ctx, api.AllowRequest{Action: "stop", Session: "main", Origin: who})
		},
		"spawn": func(s facade.Service) error {
			_, err := s.Spawn(ctx, api.SpawnRequest{Initiative: "gate2", Goal: "prove the gate", Repo: repo, Origin: who})
			return err
		},
		"stop": func(s facade.Service) error {
			_, err := s.Stop(ctx, api.StopRequest{Name: "main", Origin: who})
			return err
		},
		"restore": func(s facade.Service) error {
			res, err := s.Restore(ctx, api.RestoreRequest{Names: []string{"gate"}, Origin: who})
			if err == nil && len(res.Orchestrators) == 1 && res.Orchestrators[0].Status == api.RestoreFailed {
				// Each orchestrator is restored or refused on its own.
				err = fmt.Errorf("%w: %s", api.ErrRefused, res.Orchestrators[0].Reason)
			}
			return err
		},
		"finish": func(s facade.Service) error {
			_, err := s.Finish(ctx, api.FinishRequest{Name: "gate", Remove: true, Origin: who})
			return err
		},
		"report_outcome": func(s facade.Service) error {
			_, err := s.ReportOutcome(ctx, api.Outcome{Initiative: "gate", Outcome: "success", ReasoningPath: "read, tested, changed", ReportedBy: who})
			return err
		},
		"delete_learnings": func(s facade.Service) error {
			_, err := s.DeleteLearnings(ctx, api.LearnDeleteRequest{IDs: []int64{1}, By: who})
			return err
		},
		"request_intervention": func(s facade.Service) error {
			_, err := s.RequestIntervention(ctx, api.InterventionRequest{Pane: "%0", Session: "main", Pattern: "test_error_loop", Send: true, By: who})
			return err
		},
		"report_intervention": func(s facade.Service) error {
			_, err := s.ReportIntervention(ctx, api.CoachReport{Pattern: "test_error_loop", Intervention: "isolate-root-cause", Worked: true, By: who})
			return err
		},
		"remind": func(s facade.Service) error {
			_, err := s.Remind(ctx, facade.RemindRequest{Pane: "%0", Reminder: api.Reminder{Text: "hi"}, Origin: who})
			return err
		},
	}
	for _, name := range ipc.Writes() {
		if why, ok := gateExempt[name]; ok {
			t.Logf("%s: not judged by the MCP policy: %s", name, why)
			continue
		}
		call, ok := calls[name]
		if !ok {
			t.Errorf("write %q has no case here: add one, calling it as an MCP client, so the test shows the policy judges it", name)
			continue
		}
		err := call(c)
		if !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s as an MCP client with mcp.read_only: %v, want refused as read-only", name, err)
		}
	}
	for name := range calls {
		if _, ok := gateExempt[name]; ok {
			t.Errorf("%s is both exempt and tested", name)
		}
	}
	// Nothing changed: the worktree and branch finish would remove are
	// there, spawn made none, nothing reached the pane.
	if _, err := os.Stat(wt); err != nil {
		t.Errorf("the worktree after the refused finish: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, lifecycle.TreesDir, "gate2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused spawn made a worktree: %v", err)
	}
	if screen, err := svc.Preview(ctx, api.PreviewRequest{Target: main}); err != nil || strings.Contains(strings.Join(screen.Lines, "\n"), "hi") {
		t.Errorf("the pane after the refused writes: %q, %v", screen.Lines, err)
	}
}
