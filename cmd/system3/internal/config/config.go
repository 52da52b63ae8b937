// Package config resolves system3's settings from flags, environment
// variables, the YAML config file and built-in defaults, in that order of
// precedence, and knows where the config and state directories live.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/remote"
)

// Environment variables that override the config file.
const (
	EnvConfig         = "SYSTEM3_CONFIG"
	EnvStateDir       = "SYSTEM3_STATE_DIR"
	EnvTasksDir       = "SYSTEM3_TASKS_DIR"
	EnvTmuxSocket     = "SYSTEM3_TMUX_SOCKET"
	EnvTmuxSocketPath = "SYSTEM3_TMUX_SOCKET_PATH"
)

// maxConfigSize bounds how much of a config file is read; a config larger
// than this is certainly not one we wrote or documented.
const maxConfigSize = 1 << 20

// Config is the content of config.yaml. Every field is optional.
type Config struct {
	Tmux     TmuxConfig `yaml:"tmux"`
	TasksDir string     `yaml:"tasks_dir"`
	StateDir string     `yaml:"state_dir"`
	LogLevel string     `yaml:"log_level"`
	Monitor  Monitor    `yaml:"monitor"`
	// Validation lists the commands that check a task list's work when one
	// of its tasks is completed.
	Validation []Validation `yaml:"validation"`
	// Dashboard configures the TUI.
	Dashboard Dashboard `yaml:"dashboard"`
	// Notify says how new wakes reach the operator besides the dashboard.
	Notify Notify `yaml:"notify"`
	// MCP configures the embedded MCP server.
	MCP MCP `yaml:"mcp"`
	// Learn configures the learning store (docs/learning.md).
	Learn Learn `yaml:"learn"`
	// Agents are the commands `system3 spawn --agent NAME` starts, by
	// name, over the built-in ones (monitor/agents: claude, codex, gemini,
	// qwen, opencode, cline, copilot, aider): the only agents the dashboard and MCP
	// clients can start.
	Agents map[string]Agent `yaml:"agents"`
	// Usage prices the tokens agents use and sets cost budgets.
	Usage Usage `yaml:"usage"`
	// Lifecycle configures restore and the set-up of new worktrees.
	Lifecycle Lifecycle `yaml:"lifecycle"`
	// Policy holds approval rules (policy: {rules: [...]}), read with
	// policy.yaml beside this file by internal/approval, which checks them
	// and reloads them when either file changes (docs/policy.md).
	Policy yaml.Node `yaml:"policy"`
	// Hosts are other machines whose system3 daemon is reached over ssh,
	// by name (docs/remote.md). This machine is the host named local.
	Hosts map[string]Host `yaml:"hosts"`
	// Supervisor is the pane of a supervising agent that the monitors
	// type each wake into, when it is idle at its prompt
	// (docs/supervising.md).
	Supervisor Supervisor `yaml:"supervisor"`
}

// Supervisor configures the supervisor pane. Without Session there is
// none.
type Supervisor struct {
	// Session is the tmux session of the supervising agent: a session
	// name, or session:window.pane when it has several agent panes.
	Session string `yaml:"session"`
	// Reasons are the wake reasons it is given (default: every reason
	// that needs a person, so no heartbeat or summary).
	Reasons []string `yaml:"reasons"`
	// Sessions are globs of the sessions whose wakes it is given
	// (default: every session).
	Sessions []string `yaml:"sessions"`
	// MinInterval is the least time between two wakes given to it
	// (default 10s).
	MinInterval time.Duration `yaml:"min_interval"`
}

// DefaultSupervisorInterval is the supervisor pane's min_interval when the
// config gives none.
const DefaultSupervisorInterval = 10 * time.Second

// check refuses a supervisor section that could not mean anything.
func (s Supervisor) check() error {
	if strings.TrimSpace(s.Session) == "" {
		if len(s.Reasons) > 0 || len(s.Sessions) > 0 || s.MinInterval != 0 {
			return errors.New("supervisor: name the supervising agent's tmux session (supervisor.session), or remove the section")
		}
		return nil
	}
	for _, r := range s.Reasons {
		if !slices.Contains(api.Reasons(), api.Reason(r)) {
			names := make([]string, 0, len(api.Reasons()))
			for _, k := range api.Reasons() {
				names = append(names, string(k))
			}
			return fmt.Errorf("supervisor.reasons: %q is not a wake reason (one of %s)", r, strings.Join(names, ", "))
		}
	}
	for i, g := range s.Sessions {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			return fmt.Errorf("supervisor.sessions[%d]: %q is not a glob like orch-*", i, g)
		}
	}
	if s.MinInterval < 0 {
		return errors.New("supervisor.min_interval cannot be negative")
	}
	return nil
}

// Host is one remote machine.
type Host struct {
	// SSH is the ssh destination: a Host alias of the ssh config, HOST or
	// USER@HOST.
	SSH string `yaml:"ssh"`
	// System3 is the system3 program there (default system3 on its PATH).
	System3 string `yaml:"system3"`
	// StateDir is its state dir (default: its own default).
	StateDir string `yaml:"state_dir"`
	// SSHOptions are extra ssh arguments, like ["-F", "~/.ssh/lab.conf"].
	SSHOptions []string `yaml:"ssh_options"`
}

// RemoteHosts are the configured hosts, sorted by name.
func (c Config) RemoteHosts(home string) []remote.Host {
	names := make([]string, 0, len(c.Hosts))
	for n := range c.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	hs := make([]remote.Host, 0, len(names))
	for _, n := range names {
		h := c.Hosts[n]
		opts := make([]string, len(h.SSHOptions))
		for i, o := range h.SSHOptions {
			opts[i] = ExpandHome(o, home)
		}
		hs = append(hs, remote.Host{Name: n, SSH: h.SSH, System3: h.System3, StateDir: h.StateDir, SSHOptions: opts})
	}
	return hs
}

// Lifecycle configures how orchestrators are set up and brought back.
type Lifecycle struct {
	// AutoRestore restores every orchestrator when the monitors see the
	// tmux server come back after it was gone.
	AutoRestore bool `yaml:"auto_restore"`
	// Setup prepares each new worktree before the agent starts.
	Setup Setup `yaml:"setup"`
}

// Setup prepares a new worktree: files copied or symlinked from the main
// checkout (paths relative to it), then a command run in the worktree.
type Setup struct {
	Copy    []string      `yaml:"copy"`
	Link    []string      `yaml:"link"`
	Command string        `yaml:"command"`
	Timeout time.Duration `yaml:"timeout"`
}

// check refuses paths that would reach outside the checkout.
func (s Setup) check() error {
	for _, list := range []struct {
		name  string
		paths []string
	}{{"copy", s.Copy}, {"link", s.Link}} {
		for i, p := range list.paths {
			c := filepath.Clean(p)
			if p == "" || filepath.IsAbs(p) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
				return fmt.Errorf("lifecycle.setup.%s[%d]: %q must be a path inside the repository, relative to its top, like .env", list.name, i, p)
			}
		}
	}
	if s.Timeout < 0 {
		return fmt.Errorf("lifecycle.setup.timeout cannot be negative")
	}
	return nil
}

// Usage prices tokens (for sessions' estimated cost) and sets budgets.
type Usage struct {
	// Prices are per model glob, first match wins, in US dollars per
	// million tokens.
	Prices []Price `yaml:"prices"`
	// Budgets are per session glob, first match wins.
	Budgets []Budget `yaml:"budgets"`
}

// Price is what the models matching Model cost per million tokens.
type Price struct {
	Model      string  `yaml:"model"`
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheWrite float64 `yaml:"cache_write"`
	CacheRead  float64 `yaml:"cache_read"`
}

// Budget is the estimated cost at which a session raises budget_exceeded.
type Budget struct {
	Session string  `yaml:"session"`
	USD     float64 `yaml:"usd"`
}

// check refuses prices and budgets that could not mean anything.
func (u Usage) check() error {
	for i, p := range u.Prices {
		if _, err := path.Match(p.Model, ""); err != nil || p.Model == "" {
			return fmt.Errorf("usage.prices[%d]: model %q is not a glob like claude-opus-*", i, p.Model)
		}
		if p.Input < 0 || p.Output < 0 || p.CacheWrite < 0 || p.CacheRead < 0 {
			return fmt.Errorf("usage.prices[%d] (%s): prices cannot be negative", i, p.Model)
		}
	}
	for i, b := range u.Budgets {
		if _, err := path.Match(b.Session, ""); err != nil || b.Session == "" {
			return fmt.Errorf("usage.budgets[%d]: session %q is not a glob like orch-*", i, b.Session)
		}
		if b.USD <= 0 {
			return fmt.Errorf("usage.budgets[%d] (%s): usd must be more than 0", i, b.Session)
		}
	}
	return nil
}

// BudgetFor is the budget of the first glob that matches session.
func (u Usage) BudgetFor(session string) (float64, bool) {
	for _, b := range u.Budgets {
		if ok, _ := path.Match(b.Session, session); ok {
			return b.USD, true
		}
	}
	return 0, false
}

// Learn configures the learning store.
type Learn struct {
	// ReflectCommand, run through sh -c with the retrieved material on
	// stdin, writes reflections for budget high (e.g. "claude -p");
	// empty: reflection is retrieval only.
	ReflectCommand string `yaml:"reflect_command"`
	// ReflectTimeout bounds it (default 20s).
	ReflectTimeout time.Duration `yaml:"reflect_timeout"`
}

// Agent is how spawn starts one agent: its argv (run directly, not by a
// shell) and extra environment variables.
type Agent struct {
	Command []string          `yaml:"command"`
	Env     map[string]string `yaml:"env"`
}

// Dashboard configures the TUI.
type Dashboard struct {
	// Templates are saved guidance messages offered by ctrl+t in the
	// compose box.
	Templates []Template `yaml:"templates"`
	// TakeoverAfter is how long a dashboard (or `system3 mcp`) attached
	// to a daemon waits for a daemon that stopped answering before it
	// runs the monitors itself (default 2s).
	TakeoverAfter time.Duration `yaml:"takeover_after"`
}

// Template is one saved guidance message.
type Template struct {
	Name string `yaml:"name"`
	Text string `yaml:"text"`
}

// Notify says how new wakes are announced.
type Notify struct {
	// Bell rings the terminal bell in the dashboard (default true).
	Bell *bool `yaml:"bell"`
	// TmuxMessage shows `tmux display-message` on the operator's tmux
	// client when the dashboard runs inside tmux (default false).
	TmuxMessage bool `yaml:"tmux_message"`
	// Command runs through sh -c for each new wake, with the wake as JSON
	// on stdin (e.g. notify-send); empty: none.
	Command string `yaml:"command"`
	// Reasons limits notifications to these wake reasons (default: all but
	// heartbeat and summary).
	Reasons []string `yaml:"reasons"`
	// Desktop shows desktop notifications (docs/notifications.md).
	Desktop NotifyDesktop `yaml:"desktop"`
	// Ntfy pushes to an ntfy topic.
	Ntfy NotifyNtfy `yaml:"ntfy"`
	// Webhook posts to a Slack, Mattermost or any JSON webhook.
	Webhook NotifyWebhook `yaml:"webhook"`
	// QuietHours hold pushes (ntfy, webhook) between two times of day; the
	// wakes still open when they end arrive as one digest.
	QuietHours QuietHours `yaml:"quiet_hours"`
	// DigestWindow: pushes within this long of the last one are gathered
	// into one digest (default 30s; "off" sends each at once).
	DigestWindow Duration `yaml:"digest_window"`
}

// NotifyRoute selects the wakes a channel gets; empty lists take
// notify.reasons and every session.
type NotifyRoute struct {
	Reasons  []string `yaml:"reasons"`
	Sessions []string `yaml:"sessions"`
}

// NotifyDesktop configures desktop notifications.
type NotifyDesktop struct {
	// Enabled: "auto" (default: when a D-Bus session bus or macOS is
	// there), "on" or "off".
	Enabled string `yaml:"enabled"`
	// OSC writes a terminal notification escape from the dashboard: "9",
	// "777" or "off" (default).
	OSC         string `yaml:"osc"`
	NotifyRoute `yaml:",inline"`
}

// NotifyNtfy configures push to ntfy.
type NotifyNtfy struct {
	// URL is the topic URL, e.g. https://ntfy.sh/my-secret-topic.
	URL string `yaml:"url"`
	// Token is an ntfy access token (tk_...), sent as a bearer token.
	Token string `yaml:"token"`
	// ActionsURL is where the phone reaches system3's web page (e.g.
	// https://box.tailnet.ts.net:8889); empty: no action buttons.
	ActionsURL string `yaml:"actions_url"`
	// Priority per wake reason, 1 (min) to 5 (max).
	Priority    map[string]int `yaml:"priority"`
	NotifyRoute `yaml:",inline"`
}

// NotifyWebhook configures the generic webhook.
type NotifyWebhook struct {
	URL         string `yaml:"url"`
	NotifyRoute `yaml:",inline"`
}

// QuietHours are two times of day, "22:00" and "07:00".
type QuietHours struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
}

// BellOn reports whether the bell rings (the default).
func (n Notify) BellOn() bool { return n.Bell == nil || *n.Bell }

// MCP configures the embedded MCP server.
type MCP struct {
	// Listen is the Streamable HTTP address (default 127.0.0.1:8889;
	// "off" disables the server in the dashboard).
	Listen string `yaml:"listen"`
	// TokenFile holds the bearer token clients must send; required to
	// listen on a non-loopback address.
	TokenFile string `yaml:"token_file"`
	// ReadOnly registers only the read tools, and has the monitors of this
	// process refuse every MCP action.
	ReadOnly bool `yaml:"read_only"`
	// AllowSessions are globs of the tmux sessions MCP clients may act on
	// (default: every watched session).
	AllowSessions []string `yaml:"allow_sessions"`
	// InjectPerMinute caps MCP actions per pane per minute, across every
	// process on the state dir (default 30; negative: no cap).
	InjectPerMinute int `yaml:"inject_per_minute"`
	// MaxSessions caps the MCP sessions the HTTP server keeps; a new one
	// evicts the session idle longest (default 256).
	MaxSessions int `yaml:"max_sessions"`
	// AllowedHosts are extra host names requests may be addressed to (a
	// reverse proxy's name, like Tailscale serve's box.tailnet.ts.net).
	AllowedHosts []string `yaml:"allowed_hosts"`
}

// Validation runs Command (through sh -c) in Dir when a task of a list whose
// id matches List (a glob) becomes completed; it must exit 0 within
// Timeout (default 10m), else a validation_failed wake is raised.
type Validation struct {
	List    string        `yaml:"list"`
	Command string        `yaml:"command"`
	Dir     string        `yaml:"dir"`
	Timeout time.Duration `yaml:"timeout"`
}

// Monitor tunes when system3 wakes someone. Zero values take the defaults
// documented in docs/rules.md and the README.
type Monitor struct {
	// IdleAfter: an agent idle this long raises session_idle (default 10m).
	IdleAfter time.Duration `yaml:"idle_after"`
	// HeartbeatEvery: a heartbeat wake when nothing else woke anyone for
	// this long (default 5m; "off" or a negative value disables it).
	HeartbeatEvery Duration `yaml:"heartbeat_every"`
	// ErrorGrace: an error state this old raises api_error (default 30s).
	ErrorGrace time.Duration `yaml:"error_grace"`
	// LoopThreshold and LoopWindow: the same error this many times within
	// the window is an error loop (defaults 3 and 10m).
	LoopThreshold int           `yaml:"loop_threshold"`
	LoopWindow    time.Duration `yaml:"loop_window"`
	// SummaryEvery: a summary wake with a digest of every session this
	// often (default: off).
	SummaryEvery time.Duration `yaml:"summary_every"`
	// UnmatchedAfter: a recognised agent showing a screen no rule explains
	// keeps its previous state this long, then is unknown (default 3s); a
	// choice list on the screen of a program no agent package knows must
	// stay unchanged this long before it is a guessed prompt.
	UnmatchedAfter time.Duration `yaml:"unmatched_after"`
	// ResumeAfterLimit: once a usage limit that nothing continues by
	// itself has reset, system3 types "continue" at the agent's prompt,
	// once per limit (default false: off).
	ResumeAfterLimit bool `yaml:"resume_after_limit"`
}

// Duration is a time.Duration that also accepts "off" (stored as -1).
type Duration time.Duration

// UnmarshalYAML accepts Go durations ("90s", "5m") and "off".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Value == "off" {
		*d = -1
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use e.g. 90s, 5m or off)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// TmuxConfig selects the tmux server system3 watches.
type TmuxConfig struct {
	// Socket is a socket name, as for tmux -L.
	Socket string `yaml:"socket"`
	// SocketPath is a socket path, as for tmux -S.
	SocketPath string `yaml:"socket_path"`
}

// Dirs are the user's base directories, injected so tests never depend on
// the real home directory.
type Dirs struct {
	Home       string
	ConfigHome string // XDG_CONFIG_HOME, or empty
	StateHome  string // XDG_STATE_HOME, or empty
}

// DirsFrom reads the base directories from an environment (os.Getenv in
// the program), so tests never see the real home directory.
func DirsFrom(getenv func(string) string) Dirs {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return Dirs{
		Home:       home,
		ConfigHome: getenv("XDG_CONFIG_HOME"),
		StateHome:  getenv("XDG_STATE_HOME"),
	}
}

// DefaultConfigPath is $XDG_CONFIG_HOME/system3/config.yaml, falling back to
// ~/.config/system3/config.yaml.
func (d Dirs) DefaultConfigPath() string {
	base := d.ConfigHome
	if base == "" || !filepath.IsAbs(base) {
		base = filepath.Join(d.Home, ".config")
	}
	return filepath.Join(base, "system3", "config.yaml")
}

// DefaultStateDir is $XDG_STATE_HOME/system3, falling back to
// ~/.local/state/system3.
func (d Dirs) DefaultStateDir() string {
	base := d.StateHome
	if base == "" || !filepath.IsAbs(base) {
		base = filepath.Join(d.Home, ".local", "state")
	}
	return filepath.Join(base, "system3")
}

// DefaultTasksDir is ~/.claude/tasks, where Claude Code keeps task lists.
func (d Dirs) DefaultTasksDir() string {
	return filepath.Join(d.Home, ".claude", "tasks")
}

// Load reads a config file. A missing file is not an error when the path is
// the default one (explicit is false): system3 runs fine without a config.
func Load(path string, explicit bool) (Config, error) {
	var c Config
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return c, nil
		}
		return c, fmt.Errorf("open config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return c, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return c, fmt.Errorf("config %s is larger than %d bytes; is it the right file?", path, maxConfigSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("config %s: %w (fix the file or pass --config with another one)", path, err)
	}
	if err := c.Usage.check(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Lifecycle.Setup.check(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Supervisor.check(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	for _, h := range c.RemoteHosts("") {
		if err := h.Check(); err != nil {
			return Config{}, fmt.Errorf("config %s: hosts: %w", path, err)
		}
	}
	return c, nil
}
