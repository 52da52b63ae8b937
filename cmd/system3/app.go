package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/monitor/coach"
	"github.com/system3-dev/system3/monitor/learn"
	"github.com/system3-dev/system3/monitor/remote"
	"github.com/system3-dev/system3/tmux"
)

// maxLogSize is the size past which the log is rotated to system3.log.1 when
// a command starts, so a dashboard left open for weeks cannot fill the disk.
const maxLogSize = 16 << 20

// app holds what every subcommand shares: resolved settings, the logger and
// the standard streams. It is built once per invocation by the root command.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	flags    config.Overrides
	Settings config.Settings
	log      *slog.Logger
	logFile  *os.File

	// learn is the learning store, opened on first use (openLearn).
	learnMu  sync.Mutex
	learn    *learn.Store
	learnErr error
	// coach detects behaviour patterns when this process runs the
	// monitors (see startMonitors); nil otherwise.
	coach *coach.Coach
	// socketErr is why the monitors this process runs could not serve the
	// state dir's socket; nil when they serve it.
	socketErr error
	// dashboard is set while a dashboard owns the terminal: warnings go to
	// its status line and the log, not over its screen.
	dashboard bool
	// readOnly is --read-only when given: it overrides mcp.read_only for
	// the policy of monitors this process runs.
	readOnly *bool

	// hosts are the config's hosts, followed from first use (hostSet)
	// until close.
	hostsMu   sync.Mutex
	hosts     *remote.Set
	hostsStop context.CancelFunc
}

// setup resolves settings and opens the log. A log that cannot be opened is
// reported once and replaced by a discarding logger: logging is never a
// reason to refuse work.
func (a *app) setup() error {
	s, err := config.Resolve(a.flags, a.getenv, config.DirsFrom(a.getenv))
	if err != nil {
		return err
	}
	a.Settings = s
	a.log = slog.New(slog.DiscardHandler)
	f, err := openLog(s.StateDir)
	if err != nil {
		fmt.Fprintf(a.stderr, "system3: warning: %v; continuing without a log file (set --state-dir to a writable directory)\n", err)
		return nil
	}
	a.logFile = f
	a.log = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: s.LogLevel}))
	return nil
}

func openLog(stateDir string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create state dir: %w", err)
	}
	path := filepath.Join(stateDir, "system3.log")
	if st, err := os.Stat(path); err == nil && st.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open log: %w", err)
	}
	return f, nil
}

func (a *app) close() {
	a.closeHosts()
	a.learnMu.Lock()
	defer a.learnMu.Unlock()
	if a.learn != nil {
		a.learn.Close()
	}
	if a.logFile != nil {
		a.logFile.Close()
	}
}

// tmuxServer is the tmux server selected by flags, environment or config.
func (a *app) tmuxServer() tmux.Server {
	if a.Settings.TmuxSocket == "" && a.Settings.TmuxSocketPath == "" {
		// Inside tmux, the server is the enclosing one (as for a plain
		// tmux command): say which, rather than "default".
		if srv, ok := tmux.EnclosingServer(os.Getuid(), a.getenv); ok {
			return srv
		}
	}
	return tmux.Server{Name: a.Settings.TmuxSocket, Path: a.Settings.TmuxSocketPath}
}
