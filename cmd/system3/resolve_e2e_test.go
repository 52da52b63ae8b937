package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// firedCommand is a command the tmux server ran, as its verbose log (-vv)
// says: "cmdq_fire_command <client-12>: (7) list-panes -t %1".
var firedCommand = regexp.MustCompile(`cmdq_fire_command [^:]*: \(\d+\) (.*)$`)

// serverCommands are the commands the tmux server logged in dir from
// byte offset on, and the log's size.
func serverCommands(t *testing.T, dir string, offset int64) ([]string, int64) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "tmux-server-*.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("tmux server logs in %s: %v %v", dir, logs, err)
	}
	f, err := os.Open(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := offset
	for sc.Scan() {
		n += int64(len(sc.Bytes())) + 1
		if m := firedCommand.FindStringSubmatch(sc.Text()); m != nil {
			cmds = append(cmds, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds, n
}

// An answer through the whole stack (the CLI, the daemon's socket, the
// service, the supervisor) resolves its target once, from the registry:
// the tmux server runs one query of the pane for it (list-panes -t: the
// pane lives and is out of copy mode, right before the keys), as the
// server's own log of the commands it ran says, beside the capture that
// checks the prompt is still on screen and the keys.
func TestAnswerResolvesItsTargetOnce(t *testing.T) {
	t.Parallel()
	srv := agentServer(t)
	logDir := t.TempDir()
	start := exec.Command(tmuxtest.Bin(), "-vv", "-S", srv.Path, "-f", srv.Config, "new-session", "-d", "-s", "anchor", "sleep 3600")
	start.Dir = logDir
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start a logging tmux server: %v: %s", err, out)
	}
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	s := agentSession("permission")
	pane := startTestAgents(t, srv, tasksDir, s)[s.Name]
	state := testkit.ShortDir(t)
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	startServeAt(t, env, freeAddr(t))
	awaitStatus(t, env, srv, 60*time.Second, map[string]func(statusPane) string{s.Name: expectScript("permission", false)})

	_, offset := serverCommands(t, logDir, 0)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := run(ctx, []string{"answer", "--session", s.Name, "1"}, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("answer exited %d: %s%s", code, stdout.String(), stderr.String())
	}
	cmds, _ := serverCommands(t, logDir, offset)
	var queries, keys, all []string
	for _, c := range cmds {
		f := strings.Fields(c)
		if !strings.Contains(c, `-t "`+pane+`"`) {
			continue
		}
		all = append(all, f[0])
		switch f[0] {
		case "list-panes", "display-message":
			queries = append(queries, c)
		case "send-keys":
			keys = append(keys, c)
		}
	}
	t.Logf("the answer's commands on %s: %s", pane, strings.Join(all, ", "))
	if len(keys) == 0 {
		t.Fatalf("tmux's log shows no keys sent to %s for the answer (is the log read right?): %q", pane, cmds)
	}
	if len(queries) != 1 || !strings.HasPrefix(queries[0], "list-panes ") {
		t.Fatalf("the answer queried %s %d times, want once (list-panes -t): %q", pane, len(queries), queries)
	}
}
