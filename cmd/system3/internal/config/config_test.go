package config

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolvePrecedence(t *testing.T) {
	home := t.TempDir()
	dirs := Dirs{Home: home}
	cfgDir := filepath.Join(home, ".config", "system3")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "tmux:\n  socket: fromfile\ntasks_dir: ~/tasks-from-file\nlog_level: debug\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name                 string
		o                    Overrides
		env                  map[string]string
		wantSocket, wantPath string
		wantTasks, wantState string
		wantLevel            slog.Level
	}{
		{
			name:       "file beats defaults",
			wantSocket: "fromfile",
			wantTasks:  filepath.Join(home, "tasks-from-file"),
			wantState:  filepath.Join(home, ".local", "state", "system3"),
			wantLevel:  slog.LevelDebug,
		},
		{
			name:      "env beats file, and a path in env replaces the file's socket name",
			env:       map[string]string{EnvTmuxSocketPath: "/tmp/s", EnvTasksDir: "/t", EnvStateDir: "/st"},
			wantPath:  "/tmp/s",
			wantTasks: "/t",
			wantState: "/st",
			wantLevel: slog.LevelDebug,
		},
		{
			name:       "flags beat env",
			o:          Overrides{TmuxSocket: "flag", StateDir: "/fs", LogLevel: "warn"},
			env:        map[string]string{EnvTmuxSocketPath: "/tmp/s", EnvStateDir: "/st"},
			wantSocket: "flag",
			wantTasks:  filepath.Join(home, "tasks-from-file"),
			wantState:  "/fs",
			wantLevel:  slog.LevelWarn,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Resolve(tt.o, env(tt.env), dirs)
			if err != nil {
				t.Fatal(err)
			}
			if s.TmuxSocket != tt.wantSocket || s.TmuxSocketPath != tt.wantPath {
				t.Errorf("socket = %q/%q, want %q/%q", s.TmuxSocket, s.TmuxSocketPath, tt.wantSocket, tt.wantPath)
			}
			if s.TasksDir != tt.wantTasks {
				t.Errorf("tasks dir = %q, want %q", s.TasksDir, tt.wantTasks)
			}
			if want := filepath.Join(filepath.Dir(tt.wantTasks), "todos"); s.TodosDir != want {
				t.Errorf("todos dir = %q, want %q", s.TodosDir, want)
			}
			if s.StateDir != tt.wantState {
				t.Errorf("state dir = %q, want %q", s.StateDir, tt.wantState)
			}
			if s.LogLevel != tt.wantLevel {
				t.Errorf("log level = %v, want %v", s.LogLevel, tt.wantLevel)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	home := t.TempDir()
	bad := filepath.Join(home, "bad.yaml")
	if err := os.WriteFile(bad, []byte("tmux:\n  sockt: typo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Overrides
		want string
	}{
		{"missing explicit config", Overrides{ConfigPath: filepath.Join(home, "nope.yaml")}, "open config"},
		{"unknown key", Overrides{ConfigPath: bad}, "sockt"},
		{"both socket kinds", Overrides{TmuxSocket: "a", TmuxSocketPath: "/b"}, "choose one"},
		{"socket path as a name", Overrides{TmuxSocket: "/tmp/tmux-0/work"}, "--tmux-socket-path /tmp/tmux-0/work"},
		{"bad level", Overrides{LogLevel: "loud"}, "log level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.o, env(nil), Dirs{Home: home})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestXDGDirs(t *testing.T) {
	d := Dirs{Home: "/h", ConfigHome: "/c", StateHome: "relative"}
	if got := d.DefaultConfigPath(); got != "/c/system3/config.yaml" {
		t.Errorf("config path = %q", got)
	}
	// The XDG spec says relative paths are invalid and must be ignored.
	if got := d.DefaultStateDir(); got != "/h/.local/state/system3" {
		t.Errorf("state dir = %q", got)
	}
}

func TestMissingDefaultConfigIsFine(t *testing.T) {
	s, err := Resolve(Overrides{}, env(nil), Dirs{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.LogLevel != slog.LevelInfo {
		t.Errorf("level = %v", s.LogLevel)
	}
}

func TestMonitorSettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.yaml")
	body := "monitor:\n  idle_after: 15m\n  heartbeat_every: \"off\"\n  error_grace: 45s\n  loop_threshold: 4\n  loop_window: 5m\n  resume_after_limit: true\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Monitor
	if m.IdleAfter != 15*time.Minute || m.HeartbeatEvery != -1 || m.ErrorGrace != 45*time.Second || m.LoopThreshold != 4 || m.LoopWindow != 5*time.Minute || !m.ResumeAfterLimit {
		t.Fatalf("monitor = %+v", m)
	}
	// Off unless asked for.
	if err := os.WriteFile(p, []byte("monitor:\n  idle_after: 15m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(p, true); err != nil || c.Monitor.ResumeAfterLimit {
		t.Fatalf("resume_after_limit by default: %+v, %v", c.Monitor, err)
	}
	if err := os.WriteFile(p, []byte("monitor:\n  heartbeat_every: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), "not a duration") {
		t.Fatalf("err = %v", err)
	}
}

func TestDirsFromEnvironment(t *testing.T) {
	d := DirsFrom(env(map[string]string{"HOME": "/h", "XDG_STATE_HOME": "/s"}))
	if d.DefaultConfigPath() != "/h/.config/system3/config.yaml" || d.DefaultStateDir() != "/s/system3" || d.DefaultTasksDir() != "/h/.claude/tasks" {
		t.Fatalf("dirs = %+v", d)
	}
}

func TestUsageSettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.yaml")
	body := "usage:\n  prices:\n    - {model: 'claude-opus-*', input: 15, output: 75, cache_write: 18.75, cache_read: 1.5}\n" +
		"  budgets:\n    - {session: 'orch-big-*', usd: 50}\n    - {session: 'orch-*', usd: 5}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Usage.Prices) != 1 || c.Usage.Prices[0].CacheRead != 1.5 || c.Usage.Prices[0].Model != "claude-opus-*" {
		t.Fatalf("prices = %+v", c.Usage.Prices)
	}
	for _, tt := range []struct {
		session string
		usd     float64
		ok      bool
	}{{"orch-big-auth", 50, true}, {"orch-auth", 5, true}, {"scratch", 0, false}} {
		if usd, ok := c.Usage.BudgetFor(tt.session); usd != tt.usd || ok != tt.ok {
			t.Errorf("budget of %s = %v %v", tt.session, usd, ok)
		}
	}
	for body, want := range map[string]string{
		"usage:\n  prices: [{model: '[', input: 1}]\n":       "not a glob",
		"usage:\n  prices: [{model: 'x', input: -1}]\n":      "cannot be negative",
		"usage:\n  budgets: [{session: 'orch-*', usd: 0}]\n": "more than 0",
		"usage:\n  budgets: [{usd: 3}]\n":                    "not a glob",
	} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
}

func TestHosts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.yaml")
	body := "hosts:\n  web1:\n    ssh: lab-web1\n  gpu:\n    ssh: me@gpu.example\n    system3: ~/bin/system3\n    state_dir: /srv/s3\n    ssh_options: [-F, ~/.ssh/lab.conf]\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	hs := c.RemoteHosts("/home/me")
	if len(hs) != 2 || hs[0].Name != "gpu" || hs[1].Name != "web1" || hs[1].SSH != "lab-web1" ||
		hs[0].System3 != "~/bin/system3" || hs[0].StateDir != "/srv/s3" || strings.Join(hs[0].SSHOptions, " ") != "-F /home/me/.ssh/lab.conf" {
		t.Fatalf("hosts = %+v", hs)
	}
	for _, tt := range []struct{ body, want string }{
		{"hosts:\n  local:\n    ssh: a\n", "this machine"},
		{"hosts:\n  'a:b':\n    ssh: a\n", "no colon"},
		{"hosts:\n  web1: {}\n", "ssh destination"},
		{"hosts:\n  web1:\n    ssh: -oProxyCommand=x\n", "ssh destination"},
		{"hosts:\n  web1:\n    ssh: a\n    sshh: b\n", "sshh"},
	} {
		if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %q: err = %v, want it to mention %q", tt.body, err, tt.want)
		}
	}
}

func TestSupervisorPane(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.yaml")
	body := "supervisor:\n  session: sup\n  reasons: [awaiting_input, worker_failed]\n  sessions: ['orch-*']\n  min_interval: 30s\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Supervisor; s.Session != "sup" || strings.Join(s.Reasons, ",") != "awaiting_input,worker_failed" || s.Sessions[0] != "orch-*" || s.MinInterval != 30*time.Second {
		t.Fatalf("supervisor = %+v", s)
	}
	for _, tt := range []struct{ body, want string }{
		{"supervisor:\n  reasons: [awaiting_input]\n", "supervisor.session"},
		{"supervisor:\n  session: sup\n  reasons: [awaiting]\n", `"awaiting" is not a wake reason (one of awaiting_input, `},
		{"supervisor:\n  session: sup\n  sessions: ['[']\n", "not a glob"},
		{"supervisor:\n  session: sup\n  min_interval: -1s\n", "cannot be negative"},
		{"supervisor:\n  session: sup\n  pane: '%3'\n", "pane"},
	} {
		if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, true); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %q: err = %v, want it to mention %q", tt.body, err, tt.want)
		}
	}
}
