package codextest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// FakeKey is the API key the CLI is given, through the provider's env_key.
const FakeKey = "sk-codextest-0000000000000000000000000000000000000000"

// KeyEnv is the environment variable the fake provider reads its key from.
const KeyEnv = "CODEXTEST_API_KEY"

// Options configure Start.
type Options struct {
	// API answers the CLI; nil starts a FakeAPI without rules.
	API *FakeAPI
	// BaseURL replaces the provider's base_url (API.URL + "/v1"), e.g. a
	// closed port for an unreachable endpoint.
	BaseURL string
	// Args are passed to codex after --no-daemon.
	Args []string
	// Daemon runs codex without --no-daemon: the TUI then talks to a shared
	// background app server (started under CODEX_HOME), which keeps running
	// turns after the TUI exits. Start kills that server when the test ends.
	Daemon bool
	// Env adds KEY=VALUE pairs to the CLI's environment, overriding Start's.
	Env []string
	// Provider adds TOML lines to the fake's [model_providers.fake] table,
	// e.g. "request_max_retries = 0".
	Provider []string
	// Width and Height of the pane; 0 means 100x30.
	Width, Height int
	// Home is used as HOME instead of a fresh t.TempDir(); it is created if
	// missing and must not be shared by concurrent sessions. A fixed path
	// keeps captures stable across runs.
	Home string
	// Untrusted leaves the working directory untrusted, so the CLI opens on
	// its trust dialog; Start then waits for that dialog, not the input box.
	Untrusted bool
	// ReadyTimeout bounds the wait for the CLI to be ready; 0 means 60s.
	ReadyTimeout time.Duration
	// ReadyText, when set, is what Start waits for instead of the input
	// box (a dialog shown at start-up).
	ReadyText string
}

// Session is a real Codex CLI running in a pane of a private tmux server,
// talking to a FakeAPI, with a throwaway HOME and CODEX_HOME. The embedded
// Shell drives it and reads its screen (Capture, Type, Keys, Send,
// WaitFor...).
type Session struct {
	*clitest.Shell
	API       *FakeAPI
	Home      string // throwaway HOME
	CodexHome string // $HOME/.codex
	Dir       string // working directory the CLI runs in
	Pane      string // tmux pane id, e.g. "%0"

	t testing.TB
}

// DefaultTimeout bounds Session.WaitFor calls that pass 0.
const DefaultTimeout = 30 * time.Second

// Start launches codex from an interactive shell in a fresh tmux pane, so
// the shell prompt returns when the CLI exits, and waits until it is ready.
// Everything is torn down when the test ends.
func Start(t testing.TB, opts Options) *Session {
	t.Helper()
	bin := CodexBin(t)
	if opts.API == nil {
		opts.API = NewFakeAPI(t)
	}
	if opts.Width == 0 {
		opts.Width = 100
	}
	if opts.Height == 0 {
		opts.Height = 30
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 60 * time.Second
	}
	home, dir := clitest.Home(t, opts.Home)
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if opts.Untrusted {
		// Codex asks about folders inside a git repository.
		if out, err := exec.Command(testkit.LookPath(t, "git"), "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v: %s", dir, err, out)
		}
	}
	baseURL := opts.BaseURL
	if baseURL == "" {
		baseURL = opts.API.URL + "/v1"
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(configTOML(baseURL, dir, !opts.Untrusted, opts.Provider)), 0o600); err != nil {
		t.Fatal(err)
	}
	sh := clitest.StartShell(t, clitest.ShellOptions{
		Command: "codex", Bin: bin, Home: home, Dir: dir,
		Env:   append([]string{"CODEX_HOME=" + codexHome, KeyEnv + "=" + FakeKey}, opts.Env...),
		Width: opts.Width, Height: opts.Height,
		Timeout: DefaultTimeout, ShowWait: 5 * time.Second, Settle: 300 * time.Millisecond,
	})
	s := &Session{Shell: sh, API: opts.API, Home: home, CodexHome: codexHome, Dir: dir, Pane: sh.PaneID(), t: t}
	args := opts.Args
	if opts.Daemon {
		// The daemon outlives the pane by design, and the tmux server's
		// cleanup does not reach it: it runs in a session of its own.
		t.Cleanup(s.killDaemon)
	} else {
		args = append([]string{"--no-daemon"}, args...)
	}
	s.Run(args...)
	switch {
	case opts.ReadyText != "":
		s.WaitForText(opts.ReadyText, opts.ReadyTimeout)
	case opts.Untrusted:
		s.WaitForText("Trust this folder?", opts.ReadyTimeout)
	default:
		// A logo with the composer under it shows before the session is
		// configured; keys sent then can be undone by the configuration.
		s.WaitFor("input box under the session header", opts.ReadyTimeout, func(sc string) bool {
			return IsReady(sc) && strings.Contains(sc, ">_ OpenAI Codex")
		})
	}
	return s
}

// configTOML is the CLI's config: a provider "fake" speaking the Responses
// API at baseURL with the key from KeyEnv, approval on request in a
// read-only sandbox (left at their defaults for an untrusted folder), and
// nothing that reaches the network on its own.
func configTOML(baseURL, dir string, trusted bool, provider []string) string {
	var b strings.Builder
	b.WriteString(`model = "gpt-fake"
model_provider = "fake"
`)
	// Codex asks whether to trust a folder only when neither the approval
	// policy nor the sandbox is set.
	if trusted {
		b.WriteString(`approval_policy = "on-request"
sandbox_mode = "read-only"
`)
	}
	b.WriteString(`check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[tui]
show_tooltips = false

[model_providers.fake]
name = "Fake"
base_url = ` + strconv.Quote(baseURL) + `
wire_api = "responses"
env_key = "` + KeyEnv + `"
`)
	for _, l := range provider {
		b.WriteString(l + "\n")
	}
	if trusted {
		fmt.Fprintf(&b, "\n[projects.%s]\ntrust_level = \"trusted\"\n", strconv.Quote(dir))
	}
	return b.String()
}

// IsReady reports whether the CLI shows its composer with the footer under
// it: "›" at the start of a line and "? for shortcuts" below.
func IsReady(screen string) bool {
	return readyRE.MatchString(screen)
}

var readyRE = regexp.MustCompile(`(?ms)^› .*\? for shortcuts`)

// killDaemon stops the background app server a Daemon session started:
// the processes named in CODEX_HOME's pid files, which only this session's
// CLI could have written. The server drains running turns on SIGTERM, so
// one that does not exit soon is killed.
func (s *Session) killDaemon() {
	var pids []int
	for _, f := range []string{"daemon.pid", "daemon-updater.pid"} {
		if pid := s.daemonPID(f); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		if !testkit.Poll(time.Until(deadline), func() bool { return !alive(pid) }) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// daemonPID reads a pid file of CODEX_HOME/app-server-daemon and returns
// the pid if that process still runs from this CODEX_HOME, else 0.
func (s *Session) daemonPID(file string) int {
	b, err := os.ReadFile(filepath.Join(s.CodexHome, "app-server-daemon", file))
	if err != nil {
		return 0
	}
	var rec struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.PID <= 1 {
		return 0
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
	if err != nil || !strings.Contains(string(cmd), s.CodexHome) || !alive(rec.PID) {
		return 0
	}
	return rec.PID
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// DaemonPIDs returns the live pids of this session's background app server.
func (s *Session) DaemonPIDs() []int {
	if pid := s.daemonPID("daemon.pid"); pid > 0 {
		return []int{pid}
	}
	return nil
}

// Processes returns the names of the pane's processes as the monitor sees
// them: the shell, then its descendants (/proc/PID/comm), e.g. "bash",
// "node", "codex" while the CLI runs.
func (s *Session) Processes() []string {
	s.t.Helper()
	root := s.PanePID()
	children := map[int][]int{}
	names := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		j := strings.IndexByte(string(stat), '(')
		if i < 0 || j < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
		names[pid] = string(stat[j+1 : i])
	}
	var out []string
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if n, ok := names[p]; ok {
			out = append(out, n)
		}
		queue = append(queue, children[p]...)
	}
	return out
}
