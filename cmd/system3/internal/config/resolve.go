package config

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
)

// Overrides are the values given on the command line; empty means unset.
type Overrides struct {
	ConfigPath     string
	StateDir       string
	TasksDir       string
	TmuxSocket     string
	TmuxSocketPath string
	LogLevel       string
}

// Settings are the resolved values every subcommand works with.
type Settings struct {
	ConfigPath     string
	StateDir       string
	TasksDir       string
	TodosDir       string
	TmuxSocket     string
	TmuxSocketPath string
	LogLevel       slog.Level
	// Home is the user's home directory, for expanding ~ in paths.
	Home string
	File Config
}

// Resolve merges command-line overrides, environment variables, the config
// file and defaults. getenv is os.Getenv outside tests.
func Resolve(o Overrides, getenv func(string) string, dirs Dirs) (Settings, error) {
	var s Settings
	explicit := true
	s.ConfigPath = first(o.ConfigPath, getenv(EnvConfig))
	if s.ConfigPath == "" {
		s.ConfigPath, explicit = dirs.DefaultConfigPath(), false
	}
	file, err := Load(s.ConfigPath, explicit)
	if err != nil {
		return s, err
	}
	s.File, s.Home = file, dirs.Home

	s.StateDir = ExpandHome(first(o.StateDir, getenv(EnvStateDir), file.StateDir, dirs.DefaultStateDir()), dirs.Home)
	s.TasksDir = ExpandHome(first(o.TasksDir, getenv(EnvTasksDir), file.TasksDir, dirs.DefaultTasksDir()), dirs.Home)
	// Legacy TodoWrite files live beside the tasks root (~/.claude/todos).
	s.TodosDir = filepath.Join(filepath.Dir(s.TasksDir), "todos")

	// The socket name and path select one server together, so the first
	// source that sets either of them decides both.
	sources := []TmuxConfig{
		{Socket: o.TmuxSocket, SocketPath: o.TmuxSocketPath},
		{Socket: getenv(EnvTmuxSocket), SocketPath: getenv(EnvTmuxSocketPath)},
		file.Tmux,
	}
	for _, src := range sources {
		if src.Socket == "" && src.SocketPath == "" {
			continue
		}
		if src.Socket != "" && src.SocketPath != "" {
			return s, fmt.Errorf("both a tmux socket name (%q) and a socket path (%q) are set; choose one", src.Socket, src.SocketPath)
		}
		if strings.Contains(src.Socket, "/") {
			// tmux -L takes a name; a path there would name a socket
			// nobody runs.
			return s, fmt.Errorf("the tmux socket name %q is a path; select a server by its socket path with --tmux-socket-path %s (SYSTEM3_TMUX_SOCKET_PATH, tmux.socket_path), or by name with --tmux-socket NAME", src.Socket, src.Socket)
		}
		s.TmuxSocket, s.TmuxSocketPath = src.Socket, ExpandHome(src.SocketPath, dirs.Home)
		break
	}

	level := first(o.LogLevel, file.LogLevel, "info")
	if err := s.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return s, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	return s, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// ExpandHome replaces a leading ~ in p with home.
func ExpandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(home, p[2:])
	}
	return p
}
