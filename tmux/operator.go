package tmux

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
)

// Operator is the tmux server and client of the terminal system3 runs in,
// read from $TMUX, for what concerns the person at the keyboard: a message
// on their status line, or switching their client to a pane.
type Operator struct {
	Server Server
	// Pane is $TMUX_PANE: the pane system3 itself runs in.
	Pane string
}

// OperatorFromEnv returns the operator's tmux when system3 runs inside tmux
// ($TMUX is "socket-path,server-pid,session-index").
func OperatorFromEnv(getenv func(string) string) (Operator, bool) {
	v := getenv("TMUX")
	if v == "" {
		return Operator{}, false
	}
	path, _, _ := strings.Cut(v, ",")
	if path == "" {
		return Operator{}, false
	}
	return Operator{Server: Server{Path: path}, Pane: getenv("TMUX_PANE")}, true
}

// SameServer reports whether s is the operator's server, so a pane on s can
// be switched to. The default server and -L names resolve to their socket
// paths the way tmux does ($TMUX_TMPDIR or /tmp, tmux-UID).
func (o Operator) SameServer(s Server, uid int, getenv func(string) string) bool {
	return samePath(o.Server.Path, s.socketPath(uid, getenv))
}

func samePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ca, cb := filepath.Clean(a), filepath.Clean(b)
	if ra, err := filepath.EvalSymlinks(ca); err == nil {
		ca = ra
	}
	if rb, err := filepath.EvalSymlinks(cb); err == nil {
		cb = rb
	}
	return ca == cb
}

// EnclosingServer is the server a plain "tmux" command reaches from inside
// tmux: $TMUX's socket, named the way the user knows it ("-L work" when the
// socket is in tmux's socket directory, else its path). ok is false outside
// tmux.
func EnclosingServer(uid int, getenv func(string) string) (Server, bool) {
	v := getenv("TMUX")
	path, _, _ := strings.Cut(v, ",")
	if path == "" {
		return Server{}, false
	}
	name := filepath.Base(path)
	if samePath(filepath.Dir(path), filepath.Dir(Server{Name: name}.socketPath(uid, func(k string) string {
		if k == "TMUX" {
			return ""
		}
		return getenv(k)
	}))) {
		if name == "default" {
			return Server{}, true
		}
		return Server{Name: name}, true
	}
	return Server{Path: path}, true
}

// Command is the tmux command line that reaches s: "tmux", "tmux -L work"
// or "tmux -S /path", quoted for a POSIX shell.
func (s Server) Command() string {
	args := s.argv()
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(append([]string{"tmux"}, args...), " ")
}

// Argv is the command line of a plain forked tmux client that runs args
// on s: the binary ($SYSTEM3_TMUX or "tmux", as for every command), the
// server's flags, then args. It is for programs that stand for other
// supervisors (system3 bench's naive bash loop runs it from a script);
// system3's own commands go through Client.
func (s Server) Argv(args ...string) []string {
	return append([]string{s.bin()}, s.argv(args...)...)
}

// socketPath is where the server's socket lives. For the default server
// run from inside tmux, that is $TMUX's socket.
func (s Server) socketPath(uid int, getenv func(string) string) string {
	if s.Path != "" {
		return s.Path
	}
	name := s.Name
	if name == "" {
		if v := getenv("TMUX"); v != "" {
			p, _, _ := strings.Cut(v, ",")
			return p
		}
		name = "default"
	}
	dir := getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(uid), name)
}

// DisplayMessage shows text on the operator's status line. The text is
// data: tmux's # formats are escaped.
func (o Operator) DisplayMessage(ctx context.Context, text string) error {
	text = strings.ReplaceAll(strings.Join(strings.Fields(text), " "), "#", "##")
	args := []string{"display-message"}
	if o.Pane != "" {
		args = append(args, "-t", o.Pane)
	}
	_, err := o.Server.run(ctx, "display-message", o.Pane, nil, append(args, text)...)
	return err
}

// SwitchTo switches the operator's client to a pane (its session, window
// and the pane itself) on the operator's server.
func (o Operator) SwitchTo(ctx context.Context, pane string) error {
	if _, err := o.Server.run(ctx, "switch-client", pane, nil, "switch-client", "-t", pane); err != nil {
		return err
	}
	if _, err := o.Server.run(ctx, "select-window", pane, nil, "select-window", "-t", pane); err != nil {
		return err
	}
	_, err := o.Server.run(ctx, "select-pane", pane, nil, "select-pane", "-t", pane)
	return err
}

// AttachCommand is the shell command that attaches a terminal to target on
// s, for telling an operator outside tmux how to get there.
func (s Server) AttachCommand(target string) string {
	args := s.argv("attach", "-t", target)
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(append([]string{"tmux"}, args...), " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:%=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
