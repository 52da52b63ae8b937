//go:build linux

package monitor

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// Real shells in a private tmux server, watched by real monitors: at the
// prompt idle, running a command working, after a command that failed
// error, a dead pane exited; and no wake for any of it.
func TestShellPanesAreTruthful(t *testing.T) {
	for _, shell := range []string{"bash", "sh"} {
		t.Run(shell, func(t *testing.T) {
			testkit.LookPath(t, shell)
			srv := tmuxtest.NewServer(t, "sleep", "600")
			c := tmux.NewClient(srv)
			ctx := context.Background()
			argv := []string{shell, "-i"}
			if shell == "bash" {
				argv = []string{"bash", "--norc", "--noprofile", "-i"}
			}
			pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "sh-" + shell, Command: argv, Width: 100, Height: 30,
				Env: map[string]string{"PS1": "$ ", "ENV": "/dev/null"}, KeepDeadPane: true})
			if err != nil {
				t.Fatal(err)
			}
			eng, err := rules.New(agents.Builtin())
			if err != nil {
				t.Fatal(err)
			}
			store, _, err := wake.Open(wake.Config{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
			sup, err := New(Config{Server: srv.String(), Tmux: c, Events: watcher.Events(), Rules: eng, Wakes: store,
				Processes: ProcessTree, Foreground: PaneForeground, AgentVersion: AgentVersion,
				HeartbeatEvery: -1, ErrorGrace: time.Millisecond, IdleAfter: time.Millisecond, Tick: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithCancel(ctx)
			g, gctx := errgroup.WithContext(runCtx)
			g.Go(func() error { return watcher.Run(gctx) })
			g.Go(func() error { return sup.Run(gctx) })
			t.Cleanup(func() {
				cancel()
				if err := g.Wait(); err != nil {
					t.Errorf("monitors: %v", err)
				}
				store.Close()
			})
			tmuxCmd := func(args ...string) {
				t.Helper()
				if out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", srv.Path}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("tmux %v: %v: %s", args, err, out)
				}
			}
			run := func(line string) {
				t.Helper()
				tmuxCmd("send-keys", "-t", pane, "-l", line)
				tmuxCmd("send-keys", "-t", pane, "Enter")
			}
			wait := func(state api.State, kind, rule string) api.Session {
				t.Helper()
				return testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("the pane %s/%s by %s", state, kind, rule), func() (api.Session, bool) {
					s, ok := paneSession(sup, pane)
					return s, ok && s.State == state && s.Kind == kind && s.Evidence.Rule == rule
				}, func() string {
					screen, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
					return "screen:\n" + screen
				})
			}

			s := wait(api.Idle, "", "shell.prompt")
			if s.Agent != "shell" {
				t.Errorf("agent = %q", s.Agent)
			}
			run("sleep 600")
			s = wait(api.Working, "", api.RuleShellJob)
			if len(s.Evidence.Lines) == 0 || !strings.Contains(s.Evidence.Lines[0], "runs sleep") {
				t.Errorf("evidence = %q", s.Evidence.Lines)
			}
			tmuxCmd("send-keys", "-t", pane, "C-c")
			wait(api.Idle, "", "shell.prompt")
			run("nosuchcommand-s3")
			wait(api.Error, "command", "shell.failed")
			run("true")
			wait(api.Idle, "", "shell.prompt")
			// A prompt no rule knows: the shell holds the terminal, so it
			// is idle all the same.
			run("PS1='ready: '")
			wait(api.Idle, "", api.RuleShellPrompt)
			run("exit 3")
			s = wait(api.Exited, "dead", api.RulePaneDead)
			if len(s.Evidence.Lines) == 0 || !strings.Contains(s.Evidence.Lines[0], "status 3") {
				// tmux may learn the status late; the state is right either way.
				t.Logf("evidence = %q", s.Evidence.Lines)
			}
			// A shell's states are for whoever typed there: no wake.
			if ws := store.Unacked(); len(ws) != 0 {
				t.Errorf("wakes for a shell pane: %+v", ws)
			}
		})
	}
}
