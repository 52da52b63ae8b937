package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/claudefake"
	"github.com/system3-dev/system3/tmux"
)

// demoSession is one fake agent the demo runs in its own tmux session.
type demoSession struct {
	Name     string // tmux session name
	Script   string // fake-agent script
	TaskList string // task list id it writes (CLAUDE_CODE_TASK_LIST_ID)
	Project  string // its working directory, under the demo's projects dir
	Shows    string // what it demonstrates, for help and the banner
}

// demoSessions are the demo's agents: one per state system3 detects.
var demoSessions = []demoSession{
	{Name: "orch-auth", Script: "working", TaskList: "PRD-AUTH", Project: "auth", Shows: "working: tool calls, streaming output, tasks completed one by one"},
	{Name: "orch-billing", Script: "permission", TaskList: "PRD-BILLING", Project: "billing", Shows: "awaiting_input/permission: asks to run a migration (answer 1, 2 or 3)"},
	{Name: "orch-search", Script: "question", TaskList: "PRD-SEARCH", Project: "search", Shows: "awaiting_input/question: \"Which database should we use?\""},
	{Name: "orch-payments", Script: "errorloop", TaskList: "PRD-PAY", Project: "payments", Shows: "error_loop: the same API error, retry after retry"},
	{Name: "orch-docs", Script: "idle", TaskList: "PRD-DOCS", Project: "docs", Shows: "idle: done, waiting at its prompt (send it guidance)"},
	{Name: "orch-legacy", Script: "crash", TaskList: "PRD-LEGACY", Project: "legacy", Shows: "exited: crashes with a stack trace after a few seconds"},
}

// demoConfig is the private server's tmux.conf: the user's own is never
// read. remain-on-exit keeps a crashed agent's pane, and its last screen,
// on view.
const demoConfig = `# system3 demo: a private tmux server
set -g remain-on-exit on
set -g history-limit 5000
set -g status-left "[system3 demo] "
set -g status-left-length 16
`

// demoOptions tune startDemo; the zero value is the demo as users see it.
type demoOptions struct {
	// Command is the argv that runs a fake agent, to which --script and
	// the task list flags are added. Default: this executable's
	// "fake-agent" command.
	Command []string
	// Env is added to every agent's environment.
	Env map[string]string
	// Width and Height size each session (default 100x30).
	Width, Height int
	// Sessions default to demoSessions.
	Sessions []demoSession
	// Notify keeps the configured desktop, ntfy and webhook channels
	// (demo --notify), to try them on the demo's prompts.
	Notify bool
	// Claude, when set, is the Claude Code executable (demo --agent
	// claude): the sessions (default demoClaudeSessions) run it against
	// the demo's fake API, not the fake agent.
	Claude string
	// Path is the PATH Claude Code gets, so that its tools find programs.
	Path string
}

// demoEnv is a running demo: a private tmux server with fake agents,
// their task lists and a state dir, all under one temporary directory.
type demoEnv struct {
	Dir      string      // the temporary directory holding everything
	Server   tmux.Server // the private tmux server
	TasksDir string
	StateDir string
	Sessions []demoSession
	// Panes maps each session name to its pane id.
	Panes map[string]string
	// API is the fake Anthropic API Claude Code talks to (demo --agent
	// claude); nil for the fake agents.
	API *claudefake.API
	// closers are run by Close once the agents are gone.
	closers []func() error
}

// fakeAgentCommand is the argv that runs this program's fake agent.
func fakeAgentCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the system3 executable for the demo agents: %w", err)
	}
	return []string{exe, "fake-agent"}, nil
}

// startDemo creates the demo's directory and private tmux server, starts
// one fake agent per session, and points a's settings at them (tmux
// server, tasks dir, a private state dir and log), keeping the rest of
// the user's config, but not its validation commands. Close undoes it all.
func startDemo(ctx context.Context, a *app, opts demoOptions) (*demoEnv, error) {
	if len(opts.Sessions) == 0 && opts.Claude != "" {
		opts.Sessions = demoClaudeSessions
	}
	if len(opts.Command) == 0 && opts.Claude == "" {
		cmd, err := fakeAgentCommand()
		if err != nil {
			return nil, err
		}
		opts.Command = cmd
	}
	if len(opts.Sessions) == 0 {
		opts.Sessions = demoSessions
	}
	if opts.Width <= 0 || opts.Height <= 0 {
		opts.Width, opts.Height = 100, 30
	}
	// A short directory name: the socket path must stay under ~100 bytes.
	dir, err := os.MkdirTemp("", "system3-demo-")
	if err != nil {
		return nil, fmt.Errorf("create the demo directory: %w", err)
	}
	d := &demoEnv{
		Dir:      dir,
		Server:   tmux.Server{Path: filepath.Join(dir, "tmux.sock"), Config: filepath.Join(dir, "tmux.conf")},
		TasksDir: filepath.Join(dir, "tasks"),
		StateDir: filepath.Join(dir, "state"),
		Sessions: opts.Sessions,
	}
	if opts.Claude != "" {
		// Claude Code writes its task lists in its HOME.
		d.TasksDir = filepath.Join(dir, "home", ".claude", "tasks")
	}
	if err := d.prepare(); err != nil {
		d.Close()
		return nil, err
	}
	var panes map[string]string
	if opts.Claude != "" {
		panes, err = d.startClaude(ctx, opts.Claude, opts.Path, opts.Width, opts.Height)
	} else {
		env := map[string]string{
			// Anything that looks for Claude Code's files looks in the demo.
			"CLAUDE_CONFIG_DIR": filepath.Join(dir, "claude"),
		}
		for k, v := range opts.Env {
			env[k] = v
		}
		panes, err = startFakeAgents(ctx, tmux.NewClient(d.Server), fakeAgentSpawn{
			Command: opts.Command, Env: env, TasksDir: d.TasksDir, ProjectsDir: filepath.Join(dir, "projects"),
			Width: opts.Width, Height: opts.Height,
		}, opts.Sessions)
	}
	d.Panes = panes
	if err != nil {
		d.Close()
		return nil, err
	}

	s := &a.Settings
	s.TmuxSocket, s.TmuxSocketPath = "", d.Server.Path
	s.TasksDir = d.TasksDir
	s.TodosDir = filepath.Join(dir, "todos")
	s.StateDir = d.StateDir
	// Validation commands belong to the user's real task lists, and
	// notifications beyond the bell would reach the user's tmux client or
	// whatever notify.command posts to.
	s.File.Validation = nil
	s.File.Notify.Command, s.File.Notify.TmuxMessage = "", false
	if !opts.Notify {
		s.File.Notify.Desktop.Enabled, s.File.Notify.Desktop.OSC = "off", "off"
		s.File.Notify.Ntfy.URL, s.File.Notify.Webhook.URL = "", ""
	}
	a.UseLog(d.StateDir, s.LogLevel)
	a.Log.Info("demo started", "dir", dir, "server", d.Server.String())
	return d, nil
}

func (d *demoEnv) prepare() error {
	dirs := []string{d.TasksDir, d.StateDir, filepath.Join(d.Dir, "claude"), filepath.Join(d.Dir, "todos")}
	for _, s := range d.Sessions {
		dirs = append(dirs, filepath.Join(d.Dir, "projects", s.Project))
	}
	for _, p := range dirs {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("create the demo directory: %w", err)
		}
	}
	if err := os.WriteFile(d.Server.Config, []byte(demoConfig), 0o600); err != nil {
		return fmt.Errorf("write the demo's tmux.conf: %w", err)
	}
	return nil
}

// fakeAgentSpawn says how startFakeAgents runs each agent.
type fakeAgentSpawn struct {
	// Command runs the fake agent (see demoOptions.Command).
	Command []string
	// Env is every agent's environment; CLAUDE_CODE_TASK_LIST_ID is set
	// per agent from its task list.
	Env map[string]string
	// TasksDir is where agents write their task lists ("" for none).
	TasksDir string
	// ProjectsDir holds each session's working directory ("" to inherit).
	ProjectsDir   string
	Width, Height int
}

// startFakeAgents starts one tmux session per agent on the client's
// server (starting the server, with its Config, if needed) and returns
// each session's pane id. Tests use it on their own servers.
func startFakeAgents(ctx context.Context, c *tmux.Client, sp fakeAgentSpawn, sessions []demoSession) (map[string]string, error) {
	panes := map[string]string{}
	for _, s := range sessions {
		argv := append(append([]string(nil), sp.Command...), "--script", s.Script)
		env := maps.Clone(sp.Env)
		if env == nil {
			env = map[string]string{}
		}
		if sp.TasksDir != "" && s.TaskList != "" {
			argv = append(argv, "--tasks-dir", sp.TasksDir, "--task-list", s.TaskList)
			// The pane's process names its task list, as Claude Code's
			// does: that is how system3 links the two.
			env["CLAUDE_CODE_TASK_LIST_ID"] = s.TaskList
		}
		dir := ""
		if sp.ProjectsDir != "" && s.Project != "" {
			dir = filepath.Join(sp.ProjectsDir, s.Project)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return panes, fmt.Errorf("create %s: %w", dir, err)
			}
		}
		pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: s.Name, WindowName: s.Script, Dir: dir, Env: env,
			Command: argv, Width: sp.Width, Height: sp.Height})
		if err != nil {
			return panes, fmt.Errorf("start the %s agent: %w", s.Name, err)
		}
		panes[s.Name] = pane
	}
	return panes, nil
}

// Close stops the demo: it kills the private tmux server (and waits for
// the agents to end), then removes the demo's directory. It is safe to
// call more than once.
func (d *demoEnv) Close() error {
	if d == nil || d.Dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := tmux.NewClient(d.Server)
	var pids []int
	if panes, err := c.ListPanes(ctx); err == nil {
		for _, p := range panes {
			if !p.Dead && p.PID > 0 {
				pids = append(pids, p.PID)
			}
		}
	}
	err := c.KillServer(ctx)
	if err != nil && !errors.Is(err, tmux.ErrNoServer) {
		err = fmt.Errorf("stop the demo's tmux server: %w", err)
	} else {
		err = nil
	}
	// tmux hangs the agents up as it goes; make sure none outlives the
	// directory it writes into.
	reapAgents(pids, 3*time.Second)
	if d.API != nil {
		d.API.Close()
	}
	for _, c := range d.closers {
		_ = c()
	}
	var rerr error
	for range 3 {
		if rerr = os.RemoveAll(d.Dir); rerr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rerr != nil && err == nil {
		err = fmt.Errorf("remove the demo directory: %w", rerr)
	}
	d.Dir = ""
	return err
}

// reapAgents waits for the processes to exit and kills those that do not
// within timeout. They are the demo's own agents, named by pid.
func reapAgents(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processAlive reports whether pid is a live process (not a zombie).
func processAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: the signal check is all there is
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// demoDashboard runs the dashboard on the demo; tests replace it.
var demoDashboard = func(a *app, ctx context.Context) error { return a.runDashboard(ctx) }

func newDemoCmd(a *app) *cobra.Command {
	var noUI, withNotify bool
	var agentName, agentBin string
	var lines []string
	for _, s := range demoSessions {
		lines = append(lines, fmt.Sprintf("  %-14s %s", s.Name, s.Shows))
	}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Try system3 on six fake agents, or on the real Claude Code offline, without touching your setup",
		Long: `Start a self-contained demo and open the dashboard on it: six fake Claude Code
agents on a private tmux server, each scripted to show one state system3
detects, each writing a task list that progresses as it works:

` + strings.Join(lines, "\n") + `

Every state shows within about 15 seconds. Try the dashboard on them: answer
orch-billing's permission prompt or orch-search's question, send guidance to
orch-docs, interrupt orch-auth. The agents are this program's hidden
fake-agent command: they draw what Claude Code draws and read keys the way it
does, but call no model and no network.

Nothing touches your own tmux server, ~/.claude or your system3 state dir:
the demo starts its own tmux server (tmux -S <temp dir>/tmux.sock, which does
not read your tmux.conf), and keeps the task lists, the wake journal and the
log in the same temporary directory. Quitting the dashboard, Ctrl-C or
SIGTERM stops that server and removes the directory. Your config.yaml and
rules.yaml still apply, except validation commands and notifications other
than the terminal bell, which the demo leaves out. With --notify it keeps
your desktop, ntfy and webhook channels (docs/notifications.md): answer
orch-billing's prompt from your phone. The dashboard serves the web page on
its MCP address; sign in with system3 web --state-dir <the demo's state dir>.

With --no-ui the demo runs without the dashboard: it runs the monitors,
prints how to look at the agents (tmux attach, system3 status) and waits for
Ctrl-C.

With --agent claude the demo runs the real Claude Code instead, without an
account: claude on your PATH, or the executable --agent-bin names (install
it with npm install -g @anthropic-ai/claude-code). Two sessions,
` + demoClaudeSessions[0].Name + ` and ` + demoClaudeSessions[1].Name + `, run in the private tmux server with a
throwaway HOME in the demo's directory (onboarding done, their folders
trusted) and talk to a fake of the Anthropic API that the demo serves on
127.0.0.1: nothing reaches the network, and Claude Code gets none of your
environment. Each starts by asking what to try; type one of these words
into a session (press i in the dashboard, or attach to it) to walk the
states:

` + demoKeywordLines("  ") + `

Anything else gets the list of words again, and the session is idle.`,
		Example: `  system3 demo
  system3 demo --no-ui
  system3 demo --agent claude
  system3 demo --agent claude --agent-bin ./node_modules/.bin/claude`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			opts := demoOptions{Notify: withNotify}
			switch agentName {
			case "fake":
				if agentBin != "" {
					return errors.New("--agent-bin names Claude Code's executable for --agent claude; add --agent claude")
				}
			case "claude":
				// Before anything starts: a missing Claude Code is one sentence.
				if opts.Claude, err = findClaude(agentBin, a.Getenv("PATH")); err != nil {
					return err
				}
				opts.Path = a.Getenv("PATH")
			default:
				return fmt.Errorf("--agent takes fake or claude, not %q", agentName)
			}
			// A closed terminal must clean up too.
			if f, ok := a.term.(*os.File); !noUI && (!ok || !term.IsTerminal(f.Fd())) {
				return errors.New("the demo's dashboard needs a terminal; run `system3 demo --no-ui` to start the demo without it")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
			defer stop()
			env, err := startDemo(ctx, a, opts)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := env.Close(); err == nil {
					err = cerr
				}
			}()
			if noUI {
				return a.demoNoUI(ctx, env)
			}
			return demoDashboard(a, ctx)
		},
	}
	cmd.Flags().BoolVar(&noUI, "no-ui", false, "run without the dashboard: print how to look at the agents and wait for Ctrl-C")
	cmd.Flags().BoolVar(&withNotify, "notify", false, "keep the configured desktop, ntfy and webhook notifications for the demo's wakes")
	cmd.Flags().StringVar(&agentName, "agent", "fake", "the agents to run: fake (six scripted agents) or claude (the real Claude Code, against a fake API the demo serves)")
	cmd.Flags().StringVar(&agentBin, "agent-bin", "", "Claude Code's executable for --agent claude (default: claude on PATH)")
	return cmd
}

// demoNoUI runs the monitors on the demo (so status and wait share their
// memory of error loops and crashes), prints how to look, and waits.
func (a *app) demoNoUI(ctx context.Context, env *demoEnv) error {
	svc, stopMonitors, err := a.StartMonitors(ctx)
	if err != nil {
		return err
	}
	n, err := a.Notifier(svc, "", nil, nil)
	if err != nil {
		stopMonitors()
		return err
	}
	nctx, cancel := context.WithCancel(ctx)
	notified := make(chan struct{})
	go func() {
		defer close(notified)
		if err := n.Run(nctx, svc, time.Time{}); err != nil {
			a.Log.Warn("notifications stopped", "err", err)
		}
	}()
	defer func() { cancel(); <-notified }()
	writeDemoBanner(a.stdout, env)
	<-ctx.Done()
	fmt.Fprintln(a.stdout, "\nstopping the demo and removing", env.Dir)
	return stopMonitors()
}

func writeDemoBanner(w io.Writer, env *demoEnv) {
	sock, tasks, state := core.ShellQuote(env.Server.Path), core.ShellQuote(env.TasksDir), core.ShellQuote(env.StateDir)
	if env.API != nil {
		fmt.Fprintf(w, "system3 demo: %d Claude Code sessions on a private tmux server (%s), talking to the demo's fake Anthropic API on %s\n\n", len(env.Sessions), env.Dir, env.API.URL)
	} else {
		fmt.Fprintf(w, "system3 demo: %d fake Claude Code agents on a private tmux server (%s)\n\n", len(env.Sessions), env.Dir)
	}
	for _, s := range env.Sessions {
		fmt.Fprintf(w, "  %-14s %s\n", s.Name, s.Shows)
	}
	if env.API != nil {
		fmt.Fprintf(w, "\nType one of these words into a session to walk the states:\n%s\n", demoKeywordLines("  "))
	}
	first := "orch-billing"
	if len(env.Sessions) > 0 && env.Panes["orch-billing"] == "" {
		first = env.Sessions[0].Name
	}
	fmt.Fprintf(w, `
Watch an agent (detach with Ctrl-b d):
  tmux -S %s attach -t %s
What system3 sees:
  system3 --tmux-socket-path %s --tasks-dir %s --state-dir %s status
  system3 --tmux-socket-path %s --tasks-dir %s --state-dir %s wait

Press Ctrl-C to stop the demo and remove everything it started.
`, sock, first, sock, tasks, state, sock, tasks, state)
}
