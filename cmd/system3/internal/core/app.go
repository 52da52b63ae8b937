// Package core is system3's composition root: it builds what a command
// runs on, for one process. App resolves the settings and opens the log;
// OpenService gives the one api.Service (the running daemon's, over the
// state dir's socket, or monitors started in this process: the tmux
// watcher, the supervisor, the wake journal, the task watcher, the
// validator, the coach, the learning store's idle work, the orchestrator
// records, the rules reload and the socket server, under one errgroup);
// Failover keeps a dashboard's service when its daemon goes; and the
// learning store, the coach, the lifecycle manager, the policy and the
// config's hosts are opened here on first use. cmd/system3 keeps the
// commands: flags, arguments and what they print.
package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/internal/coach"
	"github.com/system3-dev/system3/internal/learn"
	"github.com/system3-dev/system3/internal/remote"
	"github.com/system3-dev/system3/internal/statedir"
	"github.com/system3-dev/system3/tmux"
)

// maxLogSize is the size past which the log is rotated to system3.log.1 when
// a command starts, so a dashboard left open for weeks cannot fill the disk.
const maxLogSize = 16 << 20

// App is the process a command runs in: resolved settings, the logger,
// and what it opens on first use (the learning store, the hosts) or
// runs (monitors, coach). It is built once per invocation.
type App struct {
	// Stderr takes the warnings a command shows its user; Getenv reads
	// the environment.
	Stderr io.Writer
	Getenv func(string) string

	Settings config.Settings
	// stateDirChosen: the state dir was given by flag or environment.
	stateDirChosen bool
	Log            *slog.Logger
	logFile        *os.File

	// learn is the learning store, opened on first use (OpenLearn).
	learnMu  sync.Mutex
	learn    *learn.Store
	learnErr error
	// coach detects behaviour patterns when this process runs the
	// monitors (see StartMonitors); nil otherwise.
	coach *coach.Coach
	// readingCoach serves the coaching methods of a service whose
	// monitors have no coach of their own (see Local).
	readingCoach
	// socketErr is why the monitors this process runs could not serve the
	// state dir's socket; nil when they serve it.
	socketErr error
	// Dashboard is set while a dashboard owns the terminal: warnings go to
	// its status line and the log, not over its screen.
	Dashboard bool
	// ReadOnly is --read-only when given: it overrides mcp.read_only for
	// the policy of monitors this process runs.
	ReadOnly *bool

	// hosts are the config's hosts, followed from first use (HostSet)
	// until Close.
	hostsMu   sync.Mutex
	hosts     *remote.Set
	hostsStop context.CancelFunc
}

// Setup resolves settings from flags, the environment and the config file,
// and opens the log. A log that cannot be opened is
// reported once and replaced by a discarding logger: logging is never a
// reason to refuse work.
func (a *App) Setup(flags config.Overrides) error {
	s, err := config.Resolve(flags, a.Getenv, config.DirsFrom(a.Getenv))
	if err != nil {
		return err
	}
	a.Settings = s
	a.stateDirChosen = flags.StateDir != "" || a.Getenv(config.EnvStateDir) != ""
	a.Log = slog.New(slog.DiscardHandler)
	// A state dir others can read or write holds keys that sign action
	// links and a journal anyone could rewrite: refused, with what to run.
	var unsafe *statedir.UnsafeError
	if err := statedir.Ensure(s.StateDir); errors.As(err, &unsafe) {
		return err
	}
	f, err := openLog(s.StateDir)
	if err != nil {
		fmt.Fprintf(a.Stderr, "system3: warning: %v; continuing without a log file (set --state-dir to a writable directory)\n", err)
		return nil
	}
	a.logFile = f
	a.Log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: s.LogLevel}))
	return nil
}

// UseLog points the log at system3.log in stateDir, at level, in place of
// the one Setup opened (the demo keeps its own state dir; a hook whose
// config cannot be read still logs). The log stays as it was when that
// file cannot be opened.
func (a *App) UseLog(stateDir string, level slog.Leveler) {
	f, err := openLog(stateDir)
	if err != nil {
		return
	}
	if a.logFile != nil {
		a.logFile.Close()
	}
	a.logFile = f
	a.Log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level}))
}

// Coach is the coach of the monitors this process runs; nil when it runs
// none (or runs them without the learning database).
func (a *App) Coach() *coach.Coach { return a.coach }

// SocketErr is why the monitors this process runs could not serve the
// state dir's socket; nil when they serve it, or run elsewhere.
func (a *App) SocketErr() error { return a.socketErr }

func openLog(stateDir string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create state dir: %w", err)
	}
	path := filepath.Join(stateDir, "system3.log")
	if st, err := os.Stat(path); err == nil && st.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := statedir.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open log: %w", err)
	}
	return f, nil
}

// Close ends what the process opened: the hosts' links, the learning
// store and the log.
func (a *App) Close() {
	a.closeHosts()
	a.closeCoach()
	a.learnMu.Lock()
	defer a.learnMu.Unlock()
	if a.learn != nil {
		a.learn.Close()
	}
	if a.logFile != nil {
		a.logFile.Close()
	}
}

// TmuxServer is the tmux server selected by flags, environment or config.
func (a *App) TmuxServer() tmux.Server {
	if a.Settings.TmuxSocket == "" && a.Settings.TmuxSocketPath == "" {
		// Inside tmux, the server is the enclosing one (as for a plain
		// tmux command): say which, rather than "default".
		if srv, ok := tmux.EnclosingServer(os.Getuid(), a.Getenv); ok {
			return srv
		}
	}
	return tmux.Server{Name: a.Settings.TmuxSocket, Path: a.Settings.TmuxSocketPath}
}
