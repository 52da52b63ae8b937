package tmux

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds every tmux invocation whose Server has no Timeout.
const DefaultTimeout = 5 * time.Second

// waitDelay is how long the pipes of a tmux client that exited (or was
// killed) may stay open before exec gives up on them; it stops a wedged
// child from wedging us. On a machine loaded far beyond its cores, reading
// a client's last output has been seen to take more than a second.
const waitDelay = 3 * time.Second

// Server selects a tmux server: the user's default one, a named socket
// (-L Name) or a socket path (-S Path). The zero value is the default server,
// reached the way a plain "tmux" command reaches it (including $TMUX when
// system3 runs inside tmux).
type Server struct {
	Name    string        // -L socket name; ignored when Path is set
	Path    string        // -S socket path
	Bin     string        // tmux binary; $SYSTEM3_TMUX, else "tmux" (looked up in $PATH), when empty
	Timeout time.Duration // deadline for each invocation; DefaultTimeout when zero
	// Config is passed as -f to commands that may start the server
	// (NewSession). Empty means tmux's usual configuration files. Tests set
	// it to /dev/null so a private server never reads the user's config.
	Config string
	// Fork makes every command fork a tmux client, as the environment
	// variable SYSTEM3_TMUX_FORK=1 does for all servers: the native client
	// (proto.go) is not used. For measuring against tools that fork.
	Fork bool
}

// String names the server for messages: "default tmux server",
// "tmux server -L foo" or "tmux server -S /path".
func (s Server) String() string {
	switch {
	case s.Path != "":
		return "tmux server -S " + s.Path
	case s.Name != "":
		return "tmux server -L " + s.Name
	}
	return "default tmux server"
}

// BinEnv names the environment variable that chooses the tmux binary for
// every Server whose Bin is empty: a path, or a name looked up in $PATH.
const BinEnv = "SYSTEM3_TMUX"

func (s Server) bin() string {
	if s.Bin != "" {
		return s.Bin
	}
	if b := os.Getenv(BinEnv); b != "" {
		return b
	}
	return "tmux"
}

func (s Server) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultTimeout
	}
	return s.Timeout
}

// argv prefixes a tmux command with the server selection flags.
func (s Server) argv(args ...string) []string {
	var a []string
	switch {
	case s.Path != "":
		a = append(a, "-S", s.Path)
	case s.Name != "":
		a = append(a, "-L", s.Name)
	}
	return append(a, args...)
}

// clientArgv is argv for the clients system3 itself runs. -u: tmux
// replaces every non-ASCII character, and the control character that
// separates listed fields, with "_" for a client whose locale is not UTF-8
// (LANG unset, as under cron, systemd or an MCP client's minimal
// environment), which would garble every listing and capture.
func (s Server) clientArgv(args ...string) []string {
	return s.argv(append([]string{"-u"}, args...)...)
}

// run forks one tmux client with the server's deadline, once the tmux
// binary is known to be recent enough (CheckVersion). op and target only
// label errors. stdin, when non-nil, is fed to the client (load-buffer -).
func (s Server) run(ctx context.Context, op, target string, stdin []byte, args ...string) ([]byte, error) {
	if err := s.CheckVersion(ctx); err != nil {
		return nil, err
	}
	return s.exec(ctx, op, target, stdin, args...)
}

// exec is run without the version check. A client that exited but whose
// output pipe stayed open past waitDelay (exec.ErrWaitDelay, seen on a
// heavily loaded machine) may have lost output: it is run once more.
func (s Server) exec(ctx context.Context, op, target string, stdin []byte, args ...string) ([]byte, error) {
	out, err := s.exec1(ctx, op, target, stdin, args...)
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		out, err = s.exec1(ctx, op, target, stdin, args...)
	}
	return out, err
}

// exec1 runs one command: over the native client (proto.go) when it can
// carry it, else by forking a tmux client.
func (s Server) exec1(ctx context.Context, op, target string, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	if stdin == nil && !s.Fork && nativeOK(args) {
		out, err := s.execNative(ctx, op, target, args)
		if !errors.Is(err, errFallback) {
			return out, err
		}
	}
	return s.fork(ctx, op, target, stdin, args...)
}

// fork runs one tmux client process; ctx carries the deadline.
func (s Server) fork(ctx context.Context, op, target string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.bin(), s.clientArgv(args...)...)
	cmd.WaitDelay = waitDelay
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), s.execError(ctx, op, target, err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// Version reports the tmux binary's version string, such as "tmux 3.3a". It
// does not need a running server.
func (s Server) Version(ctx context.Context) (string, error) {
	out, err := s.exec(ctx, "version", "", nil, "-V")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
