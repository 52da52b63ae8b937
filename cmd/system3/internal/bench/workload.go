package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/system3-dev/system3/tmux"
)

// Role is what a fake agent does during a run.
type Role string

const (
	RoleStream Role = "stream" // a command printing 20 lines a second, without end
	RoleIdle   Role = "idle"   // a finished turn at its prompt
	RolePrompt Role = "prompt" // streams, and stops on a permission prompt at random times
)

// Pane is one fake agent of a workload.
type Pane struct {
	Session string
	ID      string // tmux pane id
	Role    Role
	Marks   string // the file its prompt times go to (RolePrompt)
}

// Workload is a private tmux server running fake agents.
type Workload struct {
	Dir    string
	Server tmux.Server
	Tasks  string // an empty tasks dir, so nothing of the user's is read
	Panes  []Pane

	// pid is the tmux server's, once found (serverPID).
	pid int
}

// workloadConfig is the private server's tmux.conf (the user's is never read).
const workloadConfig = `set -g history-limit 2000
set -g status off
`

// roleOf spreads roles over panes: a busy share of them (evenly spread)
// prints output, every other busy pane also stopping on prompts; the rest
// are idle. busy 0 makes every pane idle.
func roleOf(i int, busy float64) Role {
	if math.Floor(float64(i+1)*busy) == math.Floor(float64(i)*busy) {
		return RoleIdle
	}
	if int(math.Floor(float64(i)*busy))%2 == 0 {
		return RoleStream
	}
	return RolePrompt
}

// startWorkload starts a private tmux server with n fake agents (exe's
// fake-agent command), each in its own session.
func startWorkload(ctx context.Context, exe string, n int, busy float64, promptEvery time.Duration) (*Workload, error) {
	dir, err := os.MkdirTemp("", "s3bench-")
	if err != nil {
		return nil, fmt.Errorf("create the workload directory: %w", err)
	}
	w := &Workload{Dir: dir, Server: tmux.Server{Path: filepath.Join(dir, "tmux.sock"), Config: filepath.Join(dir, "tmux.conf")},
		Tasks: filepath.Join(dir, "tasks")}
	for _, d := range []string{w.Tasks, filepath.Join(dir, "marks"), filepath.Join(dir, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := os.WriteFile(w.Server.Config, []byte(workloadConfig), 0o600); err != nil {
		w.Close()
		return nil, err
	}
	// The agents run as "claude", as Claude Code's process is named, so
	// that system3 and the baseline recognise them the way they recognise
	// the real CLI: by the pane's command.
	agent := filepath.Join(dir, "bin", "claude")
	if err := os.MkdirAll(filepath.Dir(agent), 0o700); err != nil {
		w.Close()
		return nil, err
	}
	if err := os.Symlink(exe, agent); err != nil {
		w.Close()
		return nil, fmt.Errorf("link the fake agent: %w", err)
	}
	c := tmux.NewClient(w.Server)
	env := map[string]string{"HOME": filepath.Join(dir, "home"), "CLAUDE_CONFIG_DIR": filepath.Join(dir, "home", ".claude")}
	for i := range n {
		role := roleOf(i, busy)
		p := Pane{Session: fmt.Sprintf("bench-%s-%03d", role, i), Role: role}
		argv := []string{agent, "fake-agent"}
		switch role {
		case RoleIdle:
			argv = append(argv, "--script", "idle")
		case RoleStream:
			argv = append(argv, "--script", "stream")
		case RolePrompt:
			p.Marks = filepath.Join(dir, "marks", p.Session)
			argv = append(argv, "--script", "stream", "--prompt-every", promptEvery.String(), "--marks", p.Marks)
		}
		id, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: p.Session, WindowName: string(role), Env: env,
			Command: argv, Width: 100, Height: 30})
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("start fake agent %d: %w", i, err)
		}
		p.ID = id
		w.Panes = append(w.Panes, p)
	}
	// Before the agents load the machine.
	if _, err := w.serverPID(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("find the private tmux server's process: %w", err)
	}
	return w, nil
}

// byRole lists the panes with a role.
func (w *Workload) byRole(r Role) []Pane {
	var out []Pane
	for _, p := range w.Panes {
		if p.Role == r {
			out = append(out, p)
		}
	}
	return out
}

// marks reads the times a prompting pane drew its prompts.
func (w *Workload) marks(session string) []time.Time {
	for _, p := range w.Panes {
		if p.Session != session || p.Marks == "" {
			continue
		}
		b, err := os.ReadFile(p.Marks)
		if err != nil {
			return nil
		}
		var out []time.Time
		for _, l := range strings.Fields(string(b)) {
			if n, err := strconv.ParseInt(l, 10, 64); err == nil {
				out = append(out, time.Unix(0, n))
			}
		}
		return out
	}
	return nil
}

// promptBefore is the last prompt session drew at or before t.
func (w *Workload) promptBefore(session string, t time.Time) (time.Time, bool) {
	var best time.Time
	for _, m := range w.marks(session) {
		if !m.After(t) && m.After(best) {
			best = m
		}
	}
	return best, !best.IsZero()
}

// serverPID is the tmux server's pid (the parent of a pane's process).
// It is looked up once: while 200 panes print and dozens of waiters
// start on two cores, a listing can take longer than a command's
// deadline, and the server's pid does not change.
func (w *Workload) serverPID(ctx context.Context) (int, error) {
	if w.pid > 0 {
		return w.pid, nil
	}
	panes, err := tmux.NewClient(w.Server).ListPanes(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range panes {
		if p.PID > 0 {
			st, err := readStat(p.PID)
			if err == nil {
				w.pid = st.ppid
				return w.pid, nil
			}
		}
	}
	return 0, errors.New("no pane process to find the tmux server from")
}

// Close kills the server and the agents and removes the directory.
func (w *Workload) Close() {
	if w == nil || w.Dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := tmux.NewClient(w.Server)
	var pids []int
	if panes, err := c.ListPanes(ctx); err == nil {
		for _, p := range panes {
			if p.PID > 0 {
				pids = append(pids, p.PID)
			}
		}
	}
	_ = c.KillServer(ctx)
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL) // our own agent, by pid
		}
	}
	os.RemoveAll(w.Dir)
	w.Dir = ""
}
