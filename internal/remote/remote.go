// Package remote reaches the system3 daemon of another host through the
// user's own ssh: each call runs `ssh DEST system3 attach --stdio`, which
// relays the socket protocol of [ipc] over ssh's standard input and output,
// so the user's ssh config (Host aliases, keys, agent, ControlMaster, jump
// hosts, known_hosts) applies as it does for ssh itself and nothing listens
// on a network port. A [Link] is one host's client: it keeps when the host
// was last seen and why it is not reachable, in sentences that say what to
// do, and reconnects with backoff.
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
)

// ExitNoDaemon is the exit status of `system3 attach --stdio` when no
// daemon serves the host's state dir.
const ExitNoDaemon = 3

// Host is one configured host.
type Host struct {
	// Name is how system3 calls it: sessions are NAME:SESSION.
	Name string
	// SSH is the destination as ssh takes it: a Host alias of the user's
	// ssh config, HOST or USER@HOST.
	SSH string
	// System3 is the program to run there (default "system3", found on
	// the remote PATH; a leading ~/ is the remote home).
	System3 string
	// StateDir is the remote state dir, when not the default.
	StateDir string
	// SSHOptions are extra ssh arguments, put before system3's own
	// options so they win (ssh takes the first value of each option).
	SSHOptions []string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckName refuses a host name that could not be told apart in
// HOST:SESSION, and the reserved name of this machine.
func CheckName(name string) error {
	if name == api.LocalHost {
		return fmt.Errorf("the host name %q is this machine; give the remote host another name", api.LocalHost)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("host name %q must be letters, digits, dots, dashes or underscores (no colon), like web1", name)
	}
	return nil
}

// Check reports a host that could not be reached as configured.
func (h Host) Check() error {
	if err := CheckName(h.Name); err != nil {
		return err
	}
	if h.SSH == "" || strings.HasPrefix(h.SSH, "-") || strings.ContainsAny(h.SSH, " \t\n") {
		return fmt.Errorf("host %s: ssh destination %q must be an ssh Host alias, HOST or USER@HOST", h.Name, h.SSH)
	}
	return nil
}

func (h Host) binary() string {
	if h.System3 == "" {
		return "system3"
	}
	return h.System3
}

// SSHArgv is the full argv that runs the remote command made of args (each
// quoted for the remote shell) on the host.
func (h Host) SSHArgv(args ...string) []string {
	argv := []string{"ssh"}
	argv = append(argv, h.SSHOptions...)
	// BatchMode: never ask for a password or to accept a host key on a
	// terminal system3 owns; ServerAlive: notice a link that died without
	// closing.
	argv = append(argv, "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "--", h.SSH)
	return append(argv, remoteCommand(args))
}

// System3Argv is the argv running the host's system3 with args, on its
// state dir.
func (h Host) System3Argv(args ...string) []string {
	cmd := []string{h.binary()}
	if h.StateDir != "" {
		cmd = append(cmd, "--state-dir", h.StateDir)
	}
	return h.SSHArgv(append(cmd, args...)...)
}

// remoteCommand quotes args for the remote shell, which is what ssh runs
// its command with. A leading ~/ stays unquoted, so it means the remote
// home.
func remoteCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		prefix := ""
		if strings.HasPrefix(a, "~/") {
			prefix, a = "~/", a[2:]
		}
		q[i] = prefix + shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Kinds of failure, matched with errors.Is on a [*LinkError].
var (
	ErrUnreachable     = errors.New("host unreachable")
	ErrHostKeyChanged  = errors.New("host key changed")
	ErrHostKeyUnknown  = errors.New("host key not verified")
	ErrAuth            = errors.New("ssh login refused")
	ErrNotInstalled    = errors.New("system3 not installed")
	ErrNoDaemon        = errors.New("no system3 daemon on the host")
	ErrLinkLost        = errors.New("ssh link lost")
	ErrRemoteFailed    = errors.New("remote system3 failed")
	errSSHFailed       = errors.New("ssh failed")
	maxStderr          = 16 << 10
	exitWait           = 5 * time.Second // for ssh to exit once its output ended
	closeGrace         = 2 * time.Second // for ssh to exit once its input closed
	exitCommandMissing = 127
)

// LinkError says why a host could not be used, in one sentence that says
// what to do.
type LinkError struct {
	Host string
	Kind error
	msg  string
}

func (e *LinkError) Error() string { return e.msg }
func (e *LinkError) Unwrap() error { return e.Kind }

// classify turns ssh's exit status and the end of its standard error into
// a LinkError.
func (h Host) classify(code int, stderr string) *LinkError {
	last := lastLine(stderr)
	e := func(kind error, format string, args ...any) *LinkError {
		return &LinkError{Host: h.Name, Kind: kind, msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		return e(ErrHostKeyChanged, "refused to connect to host %s: its ssh host key changed since it was recorded in known_hosts; if the host was reinstalled, check the new key and replace the old one (ssh-keygen -R), otherwise someone may be intercepting the connection", h.Name)
	case strings.Contains(stderr, "Host key verification failed"):
		return e(ErrHostKeyUnknown, "refused to connect to host %s: its ssh host key is not in known_hosts; run `ssh %s` once to check and accept it", h.Name, h.SSH)
	case code == 255 && strings.Contains(stderr, "Permission denied"):
		return e(ErrAuth, "host %s refused the ssh login (%s); check that `ssh %s true` works without a password (load the key into ssh-agent)", h.Name, last, h.SSH)
	case code == 255 && containsAny(stderr, "Connection refused", "No route to host", "Connection timed out", "Could not resolve hostname", "Network is unreachable", "Operation timed out", "Name or service not known"):
		return e(ErrUnreachable, "host %s is down or unreachable: %s", h.Name, last)
	case code == 255 && containsAny(stderr, "closed by remote host", "Connection reset", "Broken pipe", "not responding", "Connection closed"):
		return e(ErrLinkLost, "the ssh link to host %s dropped: %s", h.Name, last)
	case code == 255:
		return e(errSSHFailed, "ssh to host %s failed: %s", h.Name, orStatus(last, code))
	case code == ExitNoDaemon && strings.Contains(stderr, "no system3 daemon"):
		return e(ErrNoDaemon, "no system3 daemon on host %s: run system3 serve there", h.Name)
	case code == exitCommandMissing || code == 126 || strings.Contains(stderr, "command not found"):
		return e(ErrNotInstalled, "host %s has no %s: install it with system3 hosts install %s, or set hosts.%s.system3 to its path there", h.Name, h.binary(), h.Name, h.Name)
	}
	return e(ErrRemoteFailed, "system3 on host %s failed: %s", h.Name, orStatus(last, code))
}

func orStatus(line string, code int) string {
	if line == "" {
		return fmt.Sprintf("exit status %d", code)
	}
	return line
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// lastLine is the last line of ssh's standard error that is not a warning
// about known_hosts, cleaned of control characters.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(s, "\r", "")), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "Warning: Permanently added") {
			continue
		}
		l = strings.TrimPrefix(l, "system3: ")
		return strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, l)
	}
	return ""
}

// Run runs `ssh DEST args...` to completion with stdin, returning its
// standard output, or a LinkError.
func (h Host) Run(ctx context.Context, stdin io.Reader, argv []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = stdin
	var out bytes.Buffer
	errb := &tailBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &out, errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), h.classify(ee.ExitCode(), errb.String())
	}
	if err != nil {
		return nil, fmt.Errorf("run ssh for host %s: %w (is OpenSSH's ssh installed?)", h.Name, err)
	}
	return out.Bytes(), nil
}

// dial starts `ssh DEST system3 attach --stdio` and returns its standard
// input and output as one connection. onData is called on the first bytes
// the remote daemon sends.
func (h Host) dial(onData func()) (io.ReadWriteCloser, error) {
	argv := h.System3Argv("attach", "--stdio")
	cmd := exec.Command(argv[0], argv[1:]...)
	// Plain pipes rather than StdinPipe and StdoutPipe: Wait closes those
	// as soon as ssh exits, which could drop the last reply unread.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	c := &sshConn{h: h, cmd: cmd, stdin: inW, stdout: outR, stderr: &tailBuffer{max: maxStderr}, exited: make(chan struct{}), onData: onData}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	// A ControlPersist master ssh leaves behind may hold its standard
	// error open for good.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, &ipc.TransportError{Err: fmt.Errorf("start ssh for host %s: %w (is OpenSSH's ssh installed?)", h.Name, err)}
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// sshConn is one ssh process's standard input and output.
type sshConn struct {
	h      Host
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	onData func()

	dataOnce  sync.Once
	closeOnce sync.Once
	exited    chan struct{}
	waitErr   error
}

func (c *sshConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if n > 0 && c.onData != nil {
		c.dataOnce.Do(c.onData)
	}
	if err != nil {
		return n, c.explain(err)
	}
	return n, nil
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.stdin.Write(p)
	if err != nil {
		return n, c.explain(err)
	}
	return n, nil
}

// explain replaces the end of the output (or a broken input) by why ssh
// ended, once it has: a clean exit is io.EOF, a failed one a LinkError.
func (c *sshConn) explain(err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, io.ErrClosedPipe) {
		return err
	}
	select {
	case <-c.exited:
	case <-time.After(exitWait):
		return err
	}
	var ee *exec.ExitError
	if !errors.As(c.waitErr, &ee) {
		return err
	}
	code := ee.ExitCode()
	if code < 0 {
		// Killed by a signal: Close, or someone else.
		return err
	}
	return &ipc.TransportError{Err: c.h.classify(code, c.stderr.String())}
}

// Close ends the call: closing ssh's input ends the remote relay, and ssh
// with it; one that does not exit soon is killed.
func (c *sshConn) Close() error {
	c.closeOnce.Do(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(closeGrace):
			c.cmd.Process.Kill()
			<-c.exited
		}
		c.stdout.Close()
	})
	return nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// CommandLine is a shell command line a person can run to reach the host's
// system3 with args, as system3 reaches it (without its own ssh options).
func (h Host) CommandLine(args ...string) string {
	parts := []string{"ssh"}
	for _, o := range h.SSHOptions {
		parts = append(parts, shellQuote(o))
	}
	cmd := []string{h.binary()}
	if h.StateDir != "" {
		cmd = append(cmd, "--state-dir", h.StateDir)
	}
	parts = append(parts, shellQuote(h.SSH), shellQuote(remoteCommand(append(cmd, args...))))
	return strings.Join(parts, " ")
}

// RunCLI runs `system3 ARGS...` on the host through ssh, its standard
// output and error streamed to stdout and stderr as they come, and returns
// the remote command's exit status. A failure of ssh or of reaching the
// remote system3 (exit 255, 127, 126) is returned as a LinkError and
// status -1; any other status is the remote command's own, its reasons
// already on stderr.
func (h Host) RunCLI(ctx context.Context, stdout, stderr io.Writer, args ...string) (int, error) {
	argv := h.System3Argv(args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	tail := &tailBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, io.MultiWriter(stderr, tail)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code == 255 || code == exitCommandMissing || code == 126 {
			return -1, h.classify(code, tail.String())
		}
		return code, nil
	}
	if err != nil {
		return -1, fmt.Errorf("run ssh for host %s: %w (is OpenSSH's ssh installed?)", h.Name, err)
	}
	return 0, nil
}
