// Package lifecycle starts and stops orchestrators: an agent in its own git
// worktree and tmux session, linked to its task list and given its first
// prompt. The CLI, the dashboard and the MCP server all spawn and stop
// through Manager, on top of the one api.Service.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/tmux"
)

// TreesDir is the directory under a repository that holds the worktrees
// of spawned orchestrators: <repo>/trees/<initiative>.
const TreesDir = "trees"

// OperatorCLI is the origin of the operator's own command line, the one
// origin whose spawn may run a command line instead of a named agent.
const OperatorCLI = "cli"

// Defaults of Config.
const (
	DefaultReadyTimeout = 45 * time.Second
	DefaultGitTimeout   = 30 * time.Second
)

// Service is what the lifecycle needs from the monitors.
type Service interface {
	Snapshot(ctx context.Context) (api.Snapshot, error)
	Watch(ctx context.Context) (<-chan api.Update, error)
	Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error)
	Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error)
	SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error)
	Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error)
	Link(ctx context.Context, req api.LinkRequest) (api.Session, error)
	Audit(ctx context.Context, e api.AuditEntry) error
	// Allow applies the policy to a spawn or a stop of a whole session.
	Allow(ctx context.Context, req api.AllowRequest) error
}

// Tmux is what the lifecycle needs from tmux; *tmux.Client is one.
type Tmux interface {
	HasSession(ctx context.Context, name string) (bool, error)
	NewSession(ctx context.Context, opt tmux.NewSessionOptions) (string, error)
	KillSession(ctx context.Context, name string) error
	SetRemainOnExit(ctx context.Context, pane string, on bool) error
}

// Agent is how one agent is started: its argv and extra environment.
type Agent struct {
	Command []string          `json:"command" yaml:"command"`
	Env     map[string]string `json:"env,omitempty" yaml:"env"`
}

// DefaultAgents are the agents spawn knows without configuration: every
// registered agent with a launch command (monitor/agents), as its Spec
// starts it (Claude Code gets its task tools, which write the task list
// the session is linked to).
func DefaultAgents() map[string]Agent {
	out := map[string]Agent{}
	for _, s := range agents.Launchable() {
		out[s.Name] = Agent{Command: slices.Clone(s.Launch.Command), Env: maps.Clone(s.Launch.Env)}
	}
	return out
}

// Config configures a Manager.
type Config struct {
	Service Service
	Tmux    Tmux
	// Agents are the agents by name, over DefaultAgents (a configured
	// agent replaces the default of that name).
	Agents map[string]Agent
	// AgentArgs returns extra arguments for an agent by the name of the
	// agent it is (Manager's agentOf: "claude" for a wrapper of Claude
	// Code too), like Claude Code's --settings with system3's hooks. Nil:
	// none.
	AgentArgs func(agent string) ([]string, error)
	// HookToken returns the hook token of a tmux session
	// (hooks.SessionToken), put into its agent's environment so the
	// agent's hook events prove where they come from. Nil: none.
	HookToken func(session string) (string, error)
	// Wisdom returns the learnings relevant to a goal. Nil: none
	// configured.
	Wisdom func(ctx context.Context, goal string) ([]api.WisdomItem, error)
	// Injected records which learnings went into an initiative's first
	// prompt. Nil: not recorded.
	Injected func(ctx context.Context, initiative string, ids []int64) error
	// Setup prepares each new worktree before its agent starts.
	Setup Setup
	// Records keeps a durable record of every orchestrator, for restore
	// and finish. Nil: none kept.
	Records *Records
	// Outcome records how a finished initiative ended in the learning
	// store. Nil: not recorded.
	Outcome func(ctx context.Context, o Outcome) error
	// AutoRestore restores the orchestrators whose sessions are gone when
	// Run sees the tmux server come back.
	AutoRestore bool
	// RestoreCheckEvery is how often Run looks at the tmux server for
	// AutoRestore (default 2s).
	RestoreCheckEvery time.Duration
	// Gh is the GitHub CLI executable finish uses for pull requests
	// (default "gh").
	Gh string
	// Git is the git executable (default "git").
	Git string
	// LookPath finds an agent command on PATH (default exec.LookPath).
	LookPath func(string) (string, error)
	// ReadyTimeout bounds the wait for the agent to be ready for input
	// (default 45s).
	ReadyTimeout time.Duration
	// GitTimeout bounds each git command (default 30s).
	GitTimeout time.Duration
	// Width and Height size the new session (default 200x50).
	Width, Height int
	Logger        *slog.Logger
}

// Orchestrators starts and stops orchestrators: what the dashboard, the
// MCP server and the CLI ask of a lifecycle. *Manager is one; a process
// that reaches other hosts routes each request to its host's Manager.
type Orchestrators interface {
	Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error)
	Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error)
	// AgentNames are the agents the configuration names, sorted: the only
	// ones a spawn starts.
	AgentNames() []string
	// Linked is told of a link made through the service (req, and the
	// session as it now shows), to keep the orchestrator records in step:
	// Link calls it.
	Linked(ctx context.Context, req api.LinkRequest, sess api.Session)
}

var _ Orchestrators = (*Manager)(nil)

// Finisher restores and finishes orchestrators: what the dashboard and
// the MCP server ask of an Orchestrators that can (*Manager can; a process
// reaching other hosts may not).
type Finisher interface {
	Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error)
	Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error)
}

var _ Finisher = (*Manager)(nil)

// Manager spawns and stops orchestrators.
type Manager struct {
	cfg Config
}

// New returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Service == nil || cfg.Tmux == nil {
		return nil, errors.New("lifecycle: Config needs Service and Tmux")
	}
	agents := DefaultAgents()
	for name, a := range cfg.Agents {
		if len(a.Command) == 0 {
			return nil, fmt.Errorf("agents.%s: command is empty; give the argv, like [%q]", name, name)
		}
		agents[name] = a
	}
	cfg.Agents = agents
	if cfg.Git == "" {
		cfg.Git = "git"
	}
	if cfg.RestoreCheckEvery <= 0 {
		cfg.RestoreCheckEvery = 2 * time.Second
	}
	if cfg.Gh == "" {
		cfg.Gh = "gh"
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.GitTimeout <= 0 {
		cfg.GitTimeout = DefaultGitTimeout
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		cfg.Width, cfg.Height = 200, 50
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg}, nil
}

// AgentNames lists the named agents, sorted.
func (m *Manager) AgentNames() []string {
	names := make([]string, 0, len(m.cfg.Agents))
	for n := range m.cfg.Agents {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// audit writes an entry for a spawn or stop; a failing audit log is
// logged, never a reason to fail.
func (m *Manager) audit(ctx context.Context, e api.AuditEntry) {
	e.Time = time.Now()
	if err := m.cfg.Service.Audit(ctx, e); err != nil {
		m.cfg.Logger.Warn("audit", "action", e.Action, "err", err)
	}
}

// cleanupCtx bounds undo work that must run even when the caller's
// context has ended.
func cleanupCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// repoRoot resolves dir (default: the working directory) to the top of its
// git work tree.
func (m *Manager) repoRoot(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: repository %s is not a directory; pass --repo with a git checkout", api.ErrOrchestratorInvalid, abs)
	}
	top, err := git{bin: m.cfg.Git, dir: abs, timeout: m.cfg.GitTimeout}.run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%w: %s is not inside a git repository (%v); pass --repo with a git checkout", api.ErrOrchestratorInvalid, abs, err)
	}
	return top, nil
}
