package tmux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The native client speaks the command-client side of tmux's client/server
// protocol over the server's unix socket, as a forked "tmux -u list-panes"
// whose stdin and stdout are pipes does, so a command costs a connection
// instead of a fork and exec of the tmux binary (several milliseconds of
// CPU each, at every 100 ms listing and every capture).
//
// Facts it relies on, the same in tmux 3.2 through 3.7 (tmux-protocol.h,
// client.c, server-client.c, file.c, compat/imsg.c):
//
//   - Every message is an imsg: a 16-byte header (type u32, len u32 or
//     len u16 + flags u16 before 3.7, peerid u32, pid u32, in host byte
//     order) and len-16 bytes of data, at most 16384 bytes in all. peerid's
//     low byte carries PROTOCOL_VERSION, 8 since 3.2; a peer whose version
//     differs is answered with MSG_VERSION and dropped.
//   - The client identifies itself (flags, TERM, features, tty name, cwd,
//     stdin, stdout, pid, its environment, done; the native client sends
//     no environment), then sends MSG_COMMAND: an
//     int argc and the NUL-terminated arguments. It never passes file
//     descriptors here: the server closes a stdin that is not a tty at once
//     and keeps stdout only for control mode, so a client without them
//     leaves the server in the state a piped client does. Without a
//     descriptor the header carries no fd flag, and both header layouts
//     agree byte for byte on a little-endian host.
//   - The server asks the client to open stdout (stream 1) and stderr
//     (stream 2), or another stream number on stdout, with MSG_WRITE_OPEN,
//     sends nothing on it until MSG_WRITE_READY, then MSG_WRITE chunks; it
//     ends the command with MSG_EXIT (an int status and an optional
//     message), or MSG_SHUTDOWN when it is exiting.
//   - tmux 3.2 to 3.6 end the server (fatalx) on an identify or reply
//     message of the wrong size: every message below has exactly the size
//     tmux's own client sends.
//
// Only read-only commands that need no stdin and cannot start a server
// (nativeCommands) take this path; everything else forks tmux. So does
// every command when SYSTEM3_TMUX_FORK=1 (ForkEnv), when the socket cannot
// be reached (tmux's own client then says why, in its words), and when the
// server answers in a protocol this client does not speak.

// ForkEnv names the environment variable that, set to 1, makes every tmux
// command fork the tmux binary rather than speak the protocol directly.
const ForkEnv = "SYSTEM3_TMUX_FORK"

// tmux message types (tmux-protocol.h).
const (
	msgVersion = 12

	msgIdentifyFlags     = 100
	msgIdentifyTerm      = 101
	msgIdentifyTTYName   = 102
	msgIdentifyStdin     = 104
	msgIdentifyEnviron   = 105
	msgIdentifyDone      = 106
	msgIdentifyClientPID = 107
	msgIdentifyCwd       = 108
	msgIdentifyFeatures  = 109
	msgIdentifyStdout    = 110
	msgIdentifyLongFlags = 111

	msgCommand    = 200
	msgDetach     = 201
	msgDetachKill = 202
	msgExit       = 203
	msgExited     = 204
	msgReady      = 207
	msgShell      = 209
	msgShutdown   = 210
	msgOldStderr  = 211
	msgOldStdin   = 212
	msgOldStdout  = 213
	msgExec       = 217
	msgFlags      = 218

	msgReadOpen   = 300
	msgRead       = 301
	msgReadDone   = 302
	msgWriteOpen  = 303
	msgWrite      = 304
	msgWriteReady = 305
	msgWriteClose = 306
	msgReadCancel = 307
)

const (
	protocolVersion = 8
	imsgHeaderSize  = 16
	maxImsgSize     = 16384

	clientUTF8          = 0x10000   // -u
	clientDefaultSocket = 0x8000000 // no -S

	ebadf = int32(syscall.EBADF)
)

// nativeCommands are the commands the native client carries: they only
// read, need no stdin and never start a server, so running one again by
// fork after the native client gave up is harmless.
var nativeCommands = map[string]bool{
	"list-panes":      true,
	"list-sessions":   true,
	"list-windows":    true,
	"capture-pane":    true,
	"display-message": true,
	"has-session":     true,
	"show-options":    true,
}

// nativeOK reports whether args (a command, or a command list split by
// ";" arguments) may run over the native client.
func nativeOK(args []string) bool {
	if len(args) == 0 || os.Getenv(ForkEnv) == "1" || !littleEndian {
		return false
	}
	start := true
	for _, a := range args {
		switch {
		case start:
			if !nativeCommands[a] {
				return false
			}
			start = false
		case a == ";":
			start = true
		case strings.HasSuffix(a, ";"):
			// tmux splits a command list at an argument ending in ";"
			// too; rather than parse its escapes, fork.
			return false
		}
	}
	return !start
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// errFallback means the native client could not carry the command and did
// not run it to completion; it is then forked instead.
var errFallback = errors.New("tmux command needs a forked client")

// nativeSocketPath is the socket a forked "tmux [-L name | -S path]" connects to
// (tmux.c make_label): -S as given; for the default server $TMUX up to its
// first comma; otherwise $TMUX_TMPDIR or /tmp, resolved, then
// tmux-UID/NAME. ok is false when it cannot be worked out the way every
// tmux from 3.2 on would.
func (s Server) nativeSocketPath() (string, bool) {
	if s.Path != "" {
		return s.Path, true
	}
	label := s.Name
	if label == "" {
		if t := os.Getenv("TMUX"); t != "" && t[0] != ',' {
			p, _, _ := strings.Cut(t, ",")
			return p, true
		}
		label = "default"
	}
	dir := "/tmp/"
	if d := os.Getenv("TMUX_TMPDIR"); d != "" {
		dir = d
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		// tmux 3.2 to 3.6 skip a $TMUX_TMPDIR that does not exist, 3.7
		// uses it anyway: let tmux decide.
		return "", false
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", false
	}
	return filepath.Join(dir, "tmux-"+strconv.Itoa(os.Getuid()), label), true
}

// nativeReply is what a forked client would have printed and returned.
type nativeReply struct {
	stdout, stderr []byte
	status         int
	shutdown       bool // the server is exiting
}

// execNative runs args over the native client. It returns an error
// matching errFallback when the command should be forked instead.
func (s Server) execNative(ctx context.Context, op, target string, args []string) ([]byte, error) {
	r, err := s.nativeRoundTrip(ctx, args)
	if errors.Is(err, errFallback) {
		return nil, err
	}
	e := &Error{Op: op, Target: target, Server: s.String()}
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		e.Msg = "cancelled"
		e.Err = ctx.Err()
		return r.stdout, e
	case err != nil && (ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)):
		e.Msg = fmt.Sprintf("tmux did not answer within %s (is the server wedged?)", s.timeout())
		e.Err = context.DeadlineExceeded
		return r.stdout, e
	case err != nil:
		e.Msg = err.Error()
		e.Err = err
		return r.stdout, e
	case r.shutdown:
		// A forked client exits 0 here with whatever it got; a listing
		// cut short by the server's exit is not a listing.
		e.Msg = "server exited"
		e.Err = ErrNoServer
		return r.stdout, e
	case r.status == 0:
		return r.stdout, nil
	}
	if msg := strings.TrimSpace(string(r.stderr)); msg != "" {
		e.Msg = firstLine(msg)
		e.Err = classify(e.Msg)
	} else {
		e.Err = fmt.Errorf("tmux exited with status %d", r.status)
	}
	return r.stdout, e
}

// nativeRoundTrip connects, identifies, sends the command and collects the
// reply. The connection is closed whatever happens, so the server never
// keeps a half-identified client of ours.
func (s Server) nativeRoundTrip(ctx context.Context, args []string) (nativeReply, error) {
	var r nativeReply
	path, ok := s.nativeSocketPath()
	if !ok {
		return r, errFallback
	}
	hello, ok := identify(s.Path == "" && (s.Name != "" || os.Getenv("TMUX") == ""), args)
	if !ok {
		return r, errFallback
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		// No server, a stale socket, a path too long: a forked client
		// says which, in the words callers classify.
		return r, errFallback
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if _, err := conn.Write(hello); err != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		// The server went between accept and our first write.
		return r, errFallback
	}

	in := replyReaders.Get().(*bufio.Reader)
	in.Reset(conn)
	defer func() {
		in.Reset(nil)
		replyReaders.Put(in)
	}()
	rd := &replyReader{ctx: ctx, conn: conn, in: in, streams: map[int32]int32{}}
	return rd.read()
}

// replyReaders keeps the buffered readers of finished commands: each
// command would otherwise allocate 64 KB for its answer, a dozen times a
// second while panes print, for the garbage collector to clear. Nothing
// read keeps a reference into the buffer (every message is copied out).
var replyReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// replyReader collects the server's answer to one command: what a forked
// client would print and return.
type replyReader struct {
	ctx     context.Context
	conn    net.Conn
	in      *bufio.Reader
	r       nativeReply
	streams map[int32]int32 // stream -> 1 (stdout) or 2 (stderr)
	got     bool            // a message came
}

// read reads messages until the command's end.
func (rd *replyReader) read() (nativeReply, error) {
	var hdr [imsgHeaderSize]byte
	for {
		if _, err := io.ReadFull(rd.in, hdr[:]); err != nil {
			if !rd.got && rd.ctx.Err() == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				// Nothing came back: the server died or refused us
				// before saying anything; a forked client tells.
				return rd.r, errFallback
			}
			return lost(rd.ctx, rd.r, err)
		}
		typ := binary.NativeEndian.Uint32(hdr[0:])
		size := binary.NativeEndian.Uint32(hdr[4:]) &^ 0x80000000
		peer := binary.NativeEndian.Uint32(hdr[8:])
		if size < imsgHeaderSize || size > 0xffff {
			return rd.r, errors.New("unreadable message from the tmux server; set " + ForkEnv + "=1 to fork tmux instead")
		}
		data := make([]byte, size-imsgHeaderSize)
		if _, err := io.ReadFull(rd.in, data); err != nil {
			return lost(rd.ctx, rd.r, err)
		}
		first := !rd.got
		rd.got = true
		if typ == msgVersion || peer&0xff != protocolVersion {
			// Another protocol version: tmux's own client explains.
			return rd.r, errFallback
		}
		if done, err := rd.handle(typ, data, first); done {
			return rd.r, err
		}
	}
}

// handle takes one message; done says the reply ends with it, with err.
func (rd *replyReader) handle(typ uint32, data []byte, first bool) (done bool, err error) {
	switch typ {
	case msgExit:
		if len(data) >= 4 {
			rd.r.status = int(int32(binary.NativeEndian.Uint32(data)))
		}
		if len(data) > 4 {
			m, _, _ := bytes.Cut(data[4:], []byte{0})
			rd.r.stderr = append(append(rd.r.stderr, m...), '\n')
		}
		return true, nil
	case msgShutdown:
		rd.r.shutdown = true
		return true, nil
	case msgWriteOpen:
		return rd.writeOpen(data)
	case msgWrite:
		return rd.write(data)
	case msgWriteClose:
		if len(data) >= 4 {
			delete(rd.streams, int32(binary.NativeEndian.Uint32(data)))
		}
	case msgReadOpen:
		// Nothing this client runs reads; say there is nothing to read.
		if len(data) < 8 {
			return true, errors.New("malformed read request from the tmux server")
		}
		stream := int32(binary.NativeEndian.Uint32(data))
		if err := writeMsg(rd.conn, msgReadDone, int32s(stream, ebadf)); err != nil {
			return rd.lost(err)
		}
	case msgReadCancel, msgFlags:
	case msgOldStderr, msgOldStdin, msgOldStdout:
		if first {
			return true, errFallback
		}
		return true, errors.New("the tmux server is too old for this client")
	case msgReady, msgDetach, msgDetachKill, msgExited, msgShell, msgExec:
		return true, fmt.Errorf("tmux server sent message %d to a command client", typ)
	}
	return false, nil
}

// writeOpen answers the server's request to open a stream: stdout and
// stderr only.
func (rd *replyReader) writeOpen(data []byte) (done bool, err error) {
	if len(data) < 12 {
		return true, errors.New("malformed write request from the tmux server")
	}
	stream := int32(binary.NativeEndian.Uint32(data[0:]))
	fd := int32(binary.NativeEndian.Uint32(data[4:]))
	var errno int32
	switch {
	case rd.streams[stream] != 0:
		errno = ebadf
	case fd == 1 || fd == 2:
		// Our stdout or stderr; the path, "-", is ignored.
		rd.streams[stream] = fd
	default:
		// A file by name: not something these commands write.
		errno = ebadf
	}
	if err := writeMsg(rd.conn, msgWriteReady, int32s(stream, errno)); err != nil {
		return rd.lost(err)
	}
	return false, nil
}

// write takes a chunk of an open stream.
func (rd *replyReader) write(data []byte) (done bool, err error) {
	if len(data) < 4 {
		return true, errors.New("malformed write from the tmux server")
	}
	switch rd.streams[int32(binary.NativeEndian.Uint32(data))] {
	case 1:
		rd.r.stdout = append(rd.r.stdout, data[4:]...)
	case 2:
		rd.r.stderr = append(rd.r.stderr, data[4:]...)
	default:
		return true, errors.New("tmux server wrote to a stream it never opened")
	}
	return false, nil
}

// lost ends the reply as lost does, when the connection broke.
func (rd *replyReader) lost(err error) (done bool, _ error) {
	rd.r, err = lost(rd.ctx, rd.r, err)
	return true, err
}

// lost ends a reply whose connection broke: what tmux's client prints
// when the server goes away, unless ctx ended it.
func lost(ctx context.Context, r nativeReply, err error) (nativeReply, error) {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return r, err
	}
	r.stderr = append(r.stderr, "server exited unexpectedly\n"...)
	r.status = 1
	return r, nil
}

func int32s(v ...int32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, uint32(x))
	}
	return b
}

// appendMsg appends one imsg. No descriptor is passed, so the header's
// flag bits are zero.
func appendMsg(b []byte, typ uint32, data []byte) []byte {
	b = binary.NativeEndian.AppendUint32(b, typ)
	b = binary.NativeEndian.AppendUint32(b, uint32(imsgHeaderSize+len(data)))
	b = binary.NativeEndian.AppendUint32(b, protocolVersion)
	b = binary.NativeEndian.AppendUint32(b, uint32(ourPID))
	return append(b, data...)
}

func writeMsg(w io.Writer, typ uint32, data []byte) error {
	_, err := w.Write(appendMsg(nil, typ, data))
	return err
}

// ourPID is in every message header; asked once, not once a message.
var ourPID = os.Getpid()

// clientCwd is the working directory the native client reports, looked up
// once: the read-only commands it sends never use it.
var clientCwd = sync.OnceValue(func() string {
	cwd, err := os.Getwd()
	if err != nil || cwd == "" {
		if cwd, err = os.UserHomeDir(); err != nil || cwd == "" {
			cwd = "/"
		}
	}
	return cwd
})

func cstring(s string) []byte { return append([]byte(s), 0) }

// identify builds what tmux's client sends before its main loop: the
// identify messages of a client started as "tmux -u" with stdin and stdout
// not a terminal, then the command. ok is false when the command is too
// long for one message (tmux's client refuses it too).
func identify(defaultSocket bool, args []string) ([]byte, bool) {
	flags := uint64(clientUTF8)
	if defaultSocket {
		flags |= clientDefaultSocket
	}
	cwd := clientCwd()
	var cmd []byte
	cmd = binary.NativeEndian.AppendUint32(cmd, uint32(len(args)))
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, false
		}
		cmd = append(cmd, a...)
		cmd = append(cmd, 0)
	}
	if imsgHeaderSize+len(cmd) > maxImsgSize {
		return nil, false
	}

	b := make([]byte, 0, 4096)
	b = appendMsg(b, msgIdentifyFlags, int32s(int32(uint32(flags))))
	b = appendMsg(b, msgIdentifyLongFlags, binary.NativeEndian.AppendUint64(nil, flags))
	b = appendMsg(b, msgIdentifyTerm, cstring(os.Getenv("TERM")))
	b = appendMsg(b, msgIdentifyFeatures, int32s(0))
	b = appendMsg(b, msgIdentifyTTYName, cstring(""))
	b = appendMsg(b, msgIdentifyCwd, cstring(cwd))
	b = appendMsg(b, msgIdentifyStdin, nil)
	b = appendMsg(b, msgIdentifyStdout, nil)
	b = appendMsg(b, msgIdentifyClientPID, int32s(int32(ourPID)))
	// No MSG_IDENTIFY_ENVIRON: the commands sent here never read the
	// client's environment (it matters to commands that start processes),
	// and tmux would copy every variable for each connection, a third of
	// the server's work for a capture.
	b = appendMsg(b, msgIdentifyDone, nil)
	return appendMsg(b, msgCommand, cmd), true
}
