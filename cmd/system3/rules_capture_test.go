package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// The real binary captures shell panes on a private tmux server (with a
// secret on screen, redacted), then checks the folder of captures with
// rules test: all pass; a wrongly labelled one fails with the rule that
// matched; a capture only the user's rules.yaml explains passes once that
// file has the rule.
func TestRulesCaptureAndTest(t *testing.T) {
	bin := buildSystem3(t)
	srv := tmuxtest.NewServer(t, "sleep", "600")
	c := tmux.NewClient(srv)
	ctx := context.Background()
	const secret = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
	newShell := func(name, shell string, lines ...string) string {
		t.Helper()
		argv := []string{shell, "-i"}
		if shell == "bash" {
			argv = []string{"bash", "--norc", "--noprofile", "-i"}
		}
		pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: name, Command: argv, Width: 100, Height: 30,
			Env: map[string]string{"PS1": "$ ", "ENV": "/dev/null"}})
		if err != nil {
			t.Fatal(err)
		}
		// Keys typed before the shell draws its prompt are echoed by the
		// terminal and then again by readline, so the line would show twice.
		testkit.WaitFor(t, 30*time.Second, name+"'s prompt", func() bool {
			text, err := c.Capture(ctx, pane, tmux.CaptureOptions{})
			return err == nil && strings.Contains(text, "$")
		})
		for _, l := range lines {
			for _, args := range [][]string{{"send-keys", "-t", pane, "-l", l}, {"send-keys", "-t", pane, "Enter"}} {
				if out, err := exec.Command(tmuxtest.Bin(), append([]string{"-S", srv.Path}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("tmux: %v: %s", err, out)
				}
			}
		}
		return pane
	}
	panes := map[string]string{
		"idle_bash.txt":     newShell("idle-bash", "bash", "echo ANTHROPIC_API_KEY="+secret),
		"working_bash.txt":  newShell("working-bash", "bash", "sleep 600"),
		"error_bash.txt":    newShell("error-bash", "bash", "nosuchcommand-s3"),
		"idle_sh.txt":       newShell("idle-sh", "sh", "echo hello"),
		"error_sh.txt":      newShell("error-sh", "sh", "nosuchcommand-s3"),
		"working_sh.txt":    newShell("working-sh", "sh", "sleep 600"),
		"wrongly_label.txt": newShell("wrong", "bash"),
	}
	env := e2eEnv(t, "SYSTEM3_TMUX_SOCKET_PATH="+srv.Path)
	system3 := func(args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		return code, string(out)
	}
	dir := t.TempDir()
	want := map[string]string{
		"idle_bash.txt": "idle", "idle_sh.txt": "idle", "working_bash.txt": "working", "working_sh.txt": "working",
		"error_bash.txt": "error", "error_sh.txt": "error", "wrongly_label.txt": "idle",
	}
	for name, pane := range panes {
		// The commands typed take a moment to show; capture until the
		// screen says what the name says.
		var said string
		testkit.WaitForValue(t, 30*time.Second, fmt.Sprintf("%s to show %s", name, want[name]), func() (string, bool) {
			code, out := system3("rules", "capture", pane, "-o", filepath.Join(dir, name))
			if code != 0 {
				t.Fatalf("capture %s: exit %d: %s", pane, code, out)
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			cp, err := rules.ParseCapture(name, data)
			if err != nil {
				t.Fatalf("%s: %v\n%s", name, err, data)
			}
			said = out
			return string(data), string(cp.State) == want[name] && (name != "idle_bash.txt" || strings.Contains(cp.Screen, "ANTHROPIC_API_KEY"))
		})
		if !strings.Contains(said, "saved "+filepath.Join(dir, name)) {
			t.Errorf("capture said %q", said)
		}
	}
	idle, err := os.ReadFile(filepath.Join(dir, "idle_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"# system3 capture v1\n", "# agent: shell\n", "# state: idle\n", "# rule: shell.prompt\n",
		"# process: bash\n", "# shell: bash\n", "# size: 100x30\n", "# redacted: 2\n", "ANTHROPIC_API_KEY=sk-ant-[REDACTED]"} {
		if !strings.Contains(string(idle), w) {
			t.Errorf("capture lacks %q:\n%s", w, idle)
		}
	}
	if strings.Contains(string(idle), secret) || strings.Contains(string(idle), secret[10:]) {
		t.Errorf("the secret is in the capture:\n%s", idle)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "working_sh.txt")); !strings.Contains(string(data), "# job: sleep\n") {
		t.Errorf("working capture:\n%s", data)
	}

	// The captures as taken pass.
	if err := os.Rename(filepath.Join(dir, "wrongly_label.txt"), filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatal(err)
	}
	code, out := system3("rules", "test", dir)
	if code != 0 || strings.Count(out, "PASS  ") != 6 || !strings.Contains(out, "6 passed, 0 failed") ||
		!strings.Contains(out, "working/- by builtin.shell_job") || !strings.Contains(out, "error/command by shell.failed") {
		t.Fatalf("rules test (exit %d):\n%s", code, out)
	}

	// A capture labelled working that shows an idle shell fails, saying
	// what matched and why.
	wrong := strings.Replace(string(idle), "# state: idle\n", "# state: working\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "sub", "x.txt"), nil, 0o600); err == nil {
		t.Fatal("sub exists")
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "mislabelled.txt"), []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = system3("rules", "test", dir)
	if code == 0 || !strings.Contains(out, "FAIL  "+filepath.Join(dir, "sub", "mislabelled.txt")+": want working/- (shell), got idle/- (shell by process) by shell.prompt") ||
		!strings.Contains(out, "6 passed, 1 failed") || !strings.Contains(out, "1 of 7 captures failed") {
		t.Fatalf("rules test with a wrong label (exit %d):\n%s", code, out)
	}

	// A screen only the user's rules explain; its label comes from its name.
	only := t.TempDir()
	bot := filepath.Join(only, "awaiting_input_mybot.txt")
	if err := os.WriteFile(bot, []byte("MyBot v1.2\nDeploy to production? [y/N] \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = system3("rules", "test", bot)
	if code == 0 || !strings.Contains(out, "want awaiting_input, got unknown/- (no agent) by builtin.no_match: no rule matched") {
		t.Fatalf("without the user's rule (exit %d):\n%s", code, out)
	}
	cfgDir := filepath.Join(envValue(env, "XDG_CONFIG_HOME"), "system3")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	user := `version: 1
agents:
  - name: mybot
    processes: ['^mybot$']
    signatures: ['^MyBot v\d']
rules:
  - id: mybot.ask
    agents: [mybot]
    state: awaiting_input
    kind: question
    priority: 85
    match:
      - regexp: '\[y/N\]\s*$'
`
	if err := os.WriteFile(filepath.Join(cfgDir, "rules.yaml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = system3("rules", "test", bot)
	if code != 0 || !strings.Contains(out, "PASS  "+bot+": awaiting_input/question by mybot.ask") {
		t.Fatalf("with the user's rule (exit %d):\n%s", code, out)
	}

	// Mistakes get one clear sentence.
	if code, out = system3("rules", "test", filepath.Join(only, "missing")); code == 0 || !strings.Contains(out, "cannot read") {
		t.Fatalf("missing dir (exit %d): %s", code, out)
	}
	if code, out = system3("rules", "test", t.TempDir()); code == 0 || !strings.Contains(out, "no captures") {
		t.Fatalf("empty dir (exit %d): %s", code, out)
	}
	if code, out = system3("rules", "capture", "%999"); code == 0 || !strings.Contains(out, "not a session or pane") {
		t.Fatalf("unknown pane (exit %d): %s", code, out)
	}
}
