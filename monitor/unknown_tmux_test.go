//go:build linux

package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// chooserEnv makes the test binary the chooser (runChooser), a program
// no agent package knows: <test binary> run with chooserEnv=<stop file>.
const chooserEnv = "SYSTEM3_TEST_CHOOSER"

func init() {
	if stop := os.Getenv(chooserEnv); stop != "" && filepath.Base(os.Args[0]) == "chooser" {
		os.Exit(runChooser(stop))
	}
}

// runChooser is a menu as pickers draw one: in raw mode, a line that keeps
// changing ("Loading N") until the file stop exists, under it a question
// and a numbered choice list with a selection marker; then it waits for
// keys: Up and Down move the marker, Enter chooses, and it exits back to
// its shell saying what was chosen.
func runChooser(stop string) int {
	old, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		fmt.Println("chooser: not a terminal:", err)
		return 2
	}
	raw := *old
	raw.Lflag &^= unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Iflag &^= unix.ICRNL | unix.IXON
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(0, unix.TCSETS, &raw); err != nil {
		fmt.Println("chooser: raw mode:", err)
		return 2
	}
	defer unix.IoctlSetTermios(0, unix.TCSETS, old)
	options := []string{"Yes", "No"}
	at := 0
	draw := func(status string) {
		var b strings.Builder
		b.WriteString("\x1b[H\x1b[2J" + status + "\r\n\r\nDeploy v2 to production?\r\n")
		for i, o := range options {
			marker := " "
			if i == at {
				marker = "❯"
			}
			fmt.Fprintf(&b, "%s %d. %s\r\n", marker, i+1, o)
		}
		b.WriteString("\r\n↑/↓ to move · enter to choose\r\n")
		os.Stdout.WriteString(b.String())
	}
	for n := 1; ; n++ {
		if _, err := os.Stat(stop); err == nil {
			break
		}
		draw(fmt.Sprintf("Loading %d", n))
		time.Sleep(100 * time.Millisecond)
	}
	draw("Ready.")
	buf := make([]byte, 16)
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			return 1
		}
		switch k := string(buf[:n]); k {
		case "\x1b[A":
			at = max(at-1, 0)
		case "\x1b[B":
			at = min(at+1, len(options)-1)
		case "\r", "\n":
			os.Stdout.WriteString("\x1b[H\x1b[2Jchose " + options[at] + "\r\n")
			return 0
		default:
			continue
		}
		draw("Ready.")
	}
}

// A program system3 has no package for, run from a real shell in a private
// tmux server under the real monitors: unknown while it prints, a guessed
// awaiting_input with its question, options and wake once it stops with
// its choice list, not answered by system3, and exited once it quits back
// to its shell; a plain shell pane beside it that prints a list and runs
// commands is never awaiting_input nor exited.
func TestUnknownProgramInRealPanes(t *testing.T) {
	testkit.LookPath(t, "bash")
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "chooser")); err != nil {
		t.Fatal(err)
	}
	stop := filepath.Join(t.TempDir(), "stop")
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	env := map[string]string{"PS1": "$ ", chooserEnv: stop}
	bash := []string{"bash", "--norc", "--noprofile", "-i"}
	menuPane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "menu", Command: bash, Width: 100, Height: 30, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	plainPane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: "plain", Command: bash, Width: 100, Height: 30, Env: env})
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
	const settle = time.Second
	watcher := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	sup, err := New(Config{Server: srv.String(), Tmux: c, Events: watcher.Events(), Rules: eng, Wakes: store,
		Processes: ProcessTree, Foreground: PaneForeground, Cmdlines: ProcessCmdlines, RawTerminal: TerminalRaw,
		Send: c, Audit: audit.Open(t.TempDir()), HeartbeatEvery: -1, UnmatchedAfter: settle, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	updates, err := sup.Watch(runCtx)
	if err != nil {
		t.Fatal(err)
	}
	// seen records every state each pane went through, from the
	// registry's updates, so a state held for less than a poll counts.
	var mu sync.Mutex
	seen := map[string][]api.Session{}
	g, gctx := errgroup.WithContext(runCtx)
	g.Go(func() error { return watcher.Run(gctx) })
	g.Go(func() error { return sup.Run(gctx) })
	g.Go(func() error {
		for u := range updates {
			if u.Session.Pane != "" {
				mu.Lock()
				seen[u.Session.Pane] = append(seen[u.Session.Pane], u.Session)
				mu.Unlock()
			}
		}
		return nil
	})
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Errorf("monitors: %v", err)
		}
		store.Close()
	})
	states := func(pane string) []api.Session {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[pane])
	}
	tmuxCmd := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", srv.Path}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
	}
	run := func(pane, line string) {
		t.Helper()
		tmuxCmd("send-keys", "-t", pane, "-l", line)
		tmuxCmd("send-keys", "-t", pane, "Enter")
	}
	wait := func(pane, what string, ok func(api.Session) bool) api.Session {
		t.Helper()
		return testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("pane %s %s", pane, what), func() (api.Session, bool) {
			s, found := paneSession(sup, pane)
			return s, found && ok(s)
		}, func() string {
			screen, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
			return "screen:\n" + screen
		})
	}

	wait(menuPane, "idle at its prompt", func(s api.Session) bool { return s.State == api.Idle })
	wait(plainPane, "idle at its prompt", func(s api.Session) bool { return s.State == api.Idle })
	run(plainPane, `printf '> 1. Yes\n  2. No\n'`)
	run(menuPane, filepath.Join(bin, "chooser"))
	s := wait(menuPane, "unknown, an unknown program printing", func(s api.Session) bool {
		return s.State == api.Unknown && s.Evidence.Rule == api.RuleUnknownProgram
	})
	if s.Agent != "" || !strings.Contains(s.Evidence.Lines[0], "no agent package knows chooser") {
		t.Fatalf("while printing = %+v", s)
	}
	// It prints for three settles with its list on screen: never a prompt.
	time.Sleep(3 * settle)
	for _, s := range states(menuPane) {
		if s.State == api.AwaitingInput {
			t.Fatalf("awaiting_input while the program printed: %+v", s)
		}
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	s = wait(menuPane, "awaiting_input by the guess", func(s api.Session) bool { return s.State == api.AwaitingInput })
	t.Logf("guessed prompt %s after the output stopped", time.Since(stopped).Round(time.Millisecond))
	if s.Evidence.Rule != api.RuleGuessChoice || s.Question != "Deploy v2 to production?" || !slices.Equal(s.Options, []string{"Yes", "No"}) ||
		len(s.Evidence.Lines) != 2 || !strings.HasPrefix(s.Evidence.Lines[0], "a guess: no agent package knows chooser") ||
		!strings.Contains(s.Evidence.Lines[0], "its output has stopped") || s.Evidence.Lines[1] != "❯ 1. Yes" {
		t.Fatalf("guessed prompt = %+v", s)
	}
	var w api.Wake
	testkit.WaitFor(t, 5*time.Second, "the guessed prompt's wake", func() bool {
		for _, e := range store.Unacked() {
			if e.Pane == menuPane && e.Reason == api.ReasonAwaitingInput {
				w = e
				return true
			}
		}
		return false
	})
	if w.Evidence.Rule != api.RuleGuessChoice || !slices.Equal(w.Options, []string{"Yes", "No"}) || !strings.Contains(w.SuggestedAction, "a guess") {
		t.Fatalf("wake = %+v", w)
	}
	if _, err := sup.Answer(ctx, api.AnswerRequest{Wake: w.ID, Answer: "2", Origin: "test"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("answering the guessed prompt = %v", err)
	}

	// A person chooses No at the keyboard; the program exits to its shell.
	tmuxCmd("send-keys", "-t", menuPane, "Down")
	wait(menuPane, "awaiting_input with No marked", func(s api.Session) bool {
		return s.State == api.AwaitingInput && len(s.Evidence.Lines) == 2 && s.Evidence.Lines[1] == "❯ 2. No"
	})
	tmuxCmd("send-keys", "-t", menuPane, "Enter")
	s = wait(menuPane, "exited", func(s api.Session) bool { return s.State == api.Exited })
	if s.Kind != "process_gone" || s.Evidence.Rule != ruleProgramLeft || !strings.Contains(s.Evidence.Lines[0], "chooser") {
		t.Fatalf("after the program quit = %+v", s)
	}
	if screen, _ := c.Capture(ctx, menuPane, tmux.CaptureOptions{}); !strings.Contains(screen, "chose No") {
		t.Fatalf("the program did not take the person's choice:\n%s", screen)
	}
	testkit.WaitFor(t, 5*time.Second, "the guessed prompt's wake resolved", func() bool {
		for _, e := range store.Unacked() {
			if e.ID == w.ID {
				return false
			}
		}
		return true
	})
	// The shell runs another command: the pane is the shell's again.
	run(menuPane, "ls /")
	wait(menuPane, "idle after ls", func(s api.Session) bool { return s.State == api.Idle && s.Agent == "shell" })

	run(plainPane, "ls /")
	// Long enough to be seen working on a loaded machine: a second's
	// sleep came and went between two looks once.
	run(plainPane, "sleep 4")
	wait(plainPane, "running sleep", func(s api.Session) bool { return s.State == api.Working })
	wait(plainPane, "idle after sleep", func(s api.Session) bool { return s.State == api.Idle })
	for _, s := range states(plainPane) {
		if s.State == api.AwaitingInput || s.State == api.Exited {
			t.Fatalf("the plain shell pane was %s (%s %q)", s.State, s.Evidence.Rule, s.Evidence.Lines)
		}
	}
	if len(states(plainPane)) == 0 {
		t.Fatal("no update of the plain shell pane was seen")
	}
}
