package tmux_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// TestNativeMatchesForkedClient runs the commands system3 runs every tick,
// over the native client and by forking tmux, against hostile names and
// screens, and wants the same bytes.
func TestNativeMatchesForkedClient(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 60*time.Second)

	base := t.TempDir()
	dir := filepath.Join(base, hostileDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Colours, invalid UTF-8, control bytes, wide characters, and lines
	// longer than one protocol message, with the history the capture
	// reads well over 64 KB.
	script := filepath.Join(base, "screen.sh")
	if err := os.WriteFile(script, []byte(`
i=0
while [ $i -lt 300 ]; do
  printf '\033[3%dm%04d \377\376 \300\200 é 中 🎉 \001\037|~| ' $((i % 8)) $i
  head -c 400 /dev/zero | tr '\0' 'x'
  printf '\033[0m\n'
  i=$((i+1))
done
head -c 70000 /dev/zero | tr '\0' 'y'
printf '\nEND\n'
exec sleep 1000
`), 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := srv.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := namesFor(v)
	id := tmuxRun(t, srv, "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", n.session, "-n", n.window, "-c", dir, "-x", "80", "-y", "24", "/bin/sh "+script)
	tmuxRun(t, srv, "select-pane", "-t", id, "-T", n.title)
	testkit.WaitFor(t, 20*time.Second, "the screen to be drawn", func() bool {
		s, err := c.Capture(ctx, id, tmux.CaptureOptions{})
		return err == nil && strings.Contains(s, "END")
	})

	capture := []string{"capture-pane", "-p", "-J", "-e", "-t", id, "-S", "-"}
	batch := []string{"display-message", "-p", "m0", ";", "capture-pane", "-p", "-J", "-t", id, ";",
		"display-message", "-p", "m1", ";", "capture-pane", "-p", "-J", "-e", "-t", "%0", "-S", "-50", ";",
		"display-message", "-p", "m2"}
	for _, args := range [][]string{
		{"list-panes", "-a", "-F", tmux.PaneFormat},
		{"list-sessions", "-F", "#{session_id} #{session_name} #{session_windows}"},
		capture,
		batch,
		{"display-message", "-p", "-t", id, "#{pane_title}|#{pane_current_path}|#{session_name}"},
		{"show-options", "-g"},
		{"has-session", "-t", "main"},
	} {
		name := strings.Join(args, " ")
		if len(name) > 40 {
			name = name[:40]
		}
		// What tmux shows can change between the two calls (a new
		// window's automatic rename lands on a timer): they must agree in
		// one of a few tries.
		var nat, fork []byte
		for try := 0; try < 5 && (try == 0 || !bytes.Equal(nat, fork)); try++ {
			var err error
			var fellBack bool
			nat, err, fellBack = srv.RunNative(ctx, args...)
			if fellBack || err != nil {
				t.Fatalf("%s: native client fell back %v: %v", name, fellBack, err)
			}
			if fork, err = srv.RunForked(ctx, args...); err != nil {
				t.Fatalf("%s: forked: %v", name, err)
			}
		}
		if !bytes.Equal(nat, fork) {
			t.Errorf("%s: native output (%d bytes) differs from the forked client's (%d bytes)\nnative %q\nforked %q", name, len(nat), len(fork), clip(nat), clip(fork))
		}
		// tmux drops invalid UTF-8 from the screen, but not from names
		// (3.4 and later print it as an escape).
		if slices.Equal(args, capture) && (len(nat) < 64<<10 || !bytes.Contains(nat, []byte("\x1b[31m")) || !bytes.Contains(nat, []byte("中 🎉"))) {
			t.Errorf("the capture is %d bytes, wants over 64 KB with colours and wide characters: %q", len(nat), clip(nat))
		}
		if args[0] == "list-panes" && !bytes.Contains(nat, []byte("\xff")) && !bytes.Contains(nat, []byte(`\377`)) {
			t.Errorf("the listing has no invalid UTF-8 in it: %q", clip(nat))
		}
	}

	// Errors read the same, down to the sentinel.
	for _, args := range [][]string{
		{"capture-pane", "-p", "-t", "%999"},
		{"has-session", "-t", "=nosuch"},
		{"display-message", "-p", "ok", ";", "capture-pane", "-p", "-t", "%998"},
		{"list-panes", "-t", "nosuch:"},
	} {
		nat, nerr, fellBack := srv.RunNative(ctx, args...)
		fork, ferr := srv.RunForked(ctx, args...)
		if fellBack || nerr == nil || ferr == nil {
			t.Fatalf("%v: native %v (fell back %v), forked %v: want both to fail", args, nerr, fellBack, ferr)
		}
		if nerr.Error() != ferr.Error() || !errors.Is(nerr, tmux.ErrNotFound) || !errors.Is(ferr, tmux.ErrNotFound) || !bytes.Equal(nat, fork) {
			t.Errorf("%v:\nnative %v (%q)\nforked %v (%q)", args, nerr, nat, ferr, fork)
		}
	}
	if _, err := c.Capture(ctx, "%999", tmux.CaptureOptions{}); !errors.Is(err, tmux.ErrNotFound) ||
		err.Error() != "capture %999 on "+srv.String()+": can't find pane: %999" {
		t.Errorf("capture of a missing pane: %v", err)
	}
}

// TestNativeNoServer: without a server the native client steps aside and
// the forked client's words, and ErrNoServer, are what callers get.
func TestNativeNoServer(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 20*time.Second)
	srv := tmuxtest.NewStoppedServer(t)
	if _, err, fellBack := srv.RunNative(ctx, "list-panes", "-a"); !fellBack {
		t.Errorf("native client with no socket: %v, want it to fall back", err)
	}
	_, err := tmux.NewClient(srv).ListPanes(ctx)
	if !errors.Is(err, tmux.ErrNoServer) || !strings.Contains(err.Error(), "error connecting to "+srv.Path) {
		t.Errorf("ListPanes with no socket: %v", err)
	}

	// A socket nobody listens on any more.
	stale := tmux.Server{Path: filepath.Join(filepath.Dir(srv.Path), "stale")}
	ln, err := net.Listen("unix", stale.Path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err, fellBack := stale.RunNative(ctx, "list-panes", "-a"); !fellBack {
		t.Errorf("native client on a stale socket: %v, want it to fall back", err)
	}
	_, err = tmux.NewClient(stale).ListPanes(ctx)
	if !errors.Is(err, tmux.ErrNoServer) || !strings.Contains(err.Error(), "no server running on "+stale.Path) {
		t.Errorf("ListPanes on a stale socket: %v", err)
	}
}

// TestNativeServerKilledMidCommand kills a busy server under native
// commands: each one succeeds or says there is no server, none hangs.
func TestNativeServerKilledMidCommand(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "seq 1 2000; exec sleep 1000")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 60*time.Second)
	pid := serverPID(t, srv)
	var ok, gone atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.Capture(ctx, "%0", tmux.CaptureOptions{History: -1})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, tmux.ErrNoServer):
					gone.Add(1)
				default:
					t.Errorf("capture while the server died: %v", err)
				}
			}
		})
	}
	testkit.WaitFor(t, 20*time.Second, "some captures", func() bool { return ok.Load() >= 20 })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "captures to see the server gone", func() bool { return gone.Load() >= 8 })
	close(stop)
	wg.Wait()

	// Cut short inside a reply: a fake server that opens stdout, writes
	// part of it and closes.
	fake := fakeServer(t, func(f *fakeConn) {
		f.send(303, ints(1, 1, 0)) // MSG_WRITE_OPEN stream 1, fd 1
		f.expect(305, ints(1, 0))  // MSG_WRITE_READY
		f.send(304, append(ints(1), "partial"...))
	})
	out, err, fellBack := fake.RunNative(ctx, "list-panes", "-a")
	if fellBack || !errors.Is(err, tmux.ErrNoServer) || !strings.Contains(err.Error(), "server exited unexpectedly") || string(out) != "partial" {
		t.Errorf("server gone mid-reply: %q, %v (fell back %v)", out, err, fellBack)
	}
}

// TestNativeDeadline: a wedged server (stopped with SIGSTOP) costs the
// caller its deadline, not more, and keeps no client of ours once it runs
// again.
func TestNativeDeadline(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	ctx := ctxFor(t, 30*time.Second)
	pid := serverPID(t, srv)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	wedged := srv
	wedged.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := tmux.NewClient(wedged).ListPanes(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 300ms") || took > 3*time.Second {
		t.Errorf("wedged server after %s: %v", took, err)
	}
	// A caller's own cancellation ends it too.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err, _ = srv.RunNative(cctx, "list-panes", "-a")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "no client left on the server", func() bool {
		return tmuxRun(t, srv, "list-clients", "-F", "#{client_name}") == ""
	})
	if _, err := tmux.NewClient(srv).ListPanes(ctx); err != nil {
		t.Errorf("after the server ran again: %v", err)
	}
}

// TestNativeChurn runs 2,000 native commands while sessions come and go:
// the server lives, and no descriptor, goroutine (goleak, in TestMain) or
// client is left behind.
func TestNativeChurn(t *testing.T) {
	srv := tmuxtest.NewServer(t, "seq 1 100; exec sleep 1000")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 5*time.Minute)
	pid := serverPID(t, srv)
	fdsBefore := openFDs(t)

	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("churn%d", i%4)
			// Failures are expected: the session may already exist or be gone.
			_ = exec.Command(tmuxtest.Bin(), "-S", srv.Path, "new-session", "-d", "-s", name, "sleep 100", ";",
				"split-window", "-t", name, "sleep 100").Run()
			_ = exec.Command(tmuxtest.Bin(), "-S", srv.Path, "kill-session", "-t", fmt.Sprintf("=churn%d", (i+2)%4)).Run()
			n++
		}
	}()

	const total, workers = 2000, 4
	var done atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				var err error
				switch i % 3 {
				case 0:
					_, err = c.ListPanes(ctx)
				case 1:
					_, err = c.Capture(ctx, "%0", tmux.CaptureOptions{History: 50})
				default:
					for _, r := range c.CaptureMany(ctx, []string{"%0", "%1", "%2", "%3"}, tmux.CaptureOptions{}) {
						if r.Err != nil && !errors.Is(r.Err, tmux.ErrNotFound) {
							err = r.Err
						}
					}
				}
				if err != nil {
					t.Errorf("command %d: %v", i, err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	n := <-churned
	t.Logf("%d native commands, %d churn rounds", done.Load(), n)
	if n == 0 {
		t.Error("no session churned during the commands")
	}
	if got := serverPID(t, srv); got != pid {
		t.Fatalf("the server changed from pid %d to %d", pid, got)
	}
	testkit.WaitFor(t, 10*time.Second, "no client left on the server", func() bool {
		return tmuxRun(t, srv, "list-clients", "-F", "#{client_name}") == ""
	})
	if fdsAfter := openFDs(t); fdsAfter > fdsBefore+2 {
		t.Errorf("%d descriptors open before, %d after", fdsBefore, fdsAfter)
	}
}

// TestNativeForkEnv: list-panes and capture-pane never run the tmux
// binary, unless Server.Fork or SYSTEM3_TMUX_FORK=1 says to.
func TestNativeForkEnv(t *testing.T) {
	srv := tmuxtest.NewServer(t)
	ctx := ctxFor(t, 20*time.Second)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	real, err := exec.LookPath(tmuxtest.Bin())
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "tmux")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\necho \"$*\" >> "+log+"\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logged := func() string { b, _ := os.ReadFile(log); return string(b) }
	s := srv
	s.Bin = wrapper
	c := tmux.NewClient(s)
	run := func() {
		t.Helper()
		if _, err := c.ListPanes(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Capture(ctx, "%0", tmux.CaptureOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if l := logged(); strings.Contains(l, "list-panes") || strings.Contains(l, "capture-pane") {
		t.Errorf("the native client forked tmux:\n%s", l)
	}
	forked := func(how string) {
		t.Helper()
		if l := logged(); !strings.Contains(l, "list-panes") || !strings.Contains(l, "capture-pane") {
			t.Errorf("with %s tmux was not forked:\n%s", how, l)
		}
		os.Remove(log)
	}
	c.Server.Fork = true
	run()
	forked("Server.Fork")
	c.Server.Fork = false
	t.Setenv(tmux.ForkEnv, "1")
	run()
	forked(tmux.ForkEnv + "=1")
}

func TestNativeOK(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"list-panes", "-a", "-F", "#{pane_id}"}, true},
		{[]string{"capture-pane", "-p", "-t", "%1"}, true},
		{[]string{"display-message", "-p", "x", ";", "capture-pane", "-p", "-t", "%1", ";", "display-message", "-p", "y"}, true},
		{[]string{"has-session", "-t", "=a"}, true},
		{nil, false},
		{[]string{"-V"}, false},
		{[]string{"new-session", "-d"}, false},
		{[]string{"load-buffer", "-"}, false},
		{[]string{"send-keys", "-t", "%1", "x"}, false},
		{[]string{"list-panes", ";", "kill-server"}, false},
		{[]string{"list-panes", "-F", "x;", "kill-server"}, false},
		{[]string{"list-panes", ";"}, false},
		{[]string{"lsp"}, false},
	} {
		if got := tmux.NativeOK(c.args); got != c.want {
			t.Errorf("nativeOK(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestNativeProtocol checks, against a fake server, that every message the
// native client sends has the size tmux's server insists on (tmux 3.2 to
// 3.6 end the whole server on a wrong one), and how it reads each way a
// reply can go.
func TestNativeProtocol(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 30*time.Second)
	big := bytes.Repeat([]byte("0123456789abcdef"), 10000)
	cases := []struct {
		name   string
		script func(f *fakeConn)
		check  func(out []byte, err error, fellBack bool) bool
	}{
		{"output in many messages, stderr, status 0", func(f *fakeConn) {
			f.send(303, ints(1, 1, 0))
			f.expect(305, ints(1, 0))
			for chunk := range slices.Chunk(big, 16000) {
				f.send(304, append(ints(1), chunk...))
			}
			f.send(303, append(ints(2, 2, 0), "-\x00"...))
			f.expect(305, ints(2, 0))
			f.send(304, append(ints(2), "warning\n"...))
			f.send(303, ints(3, 1, 0)) // another stream on stdout
			f.expect(305, ints(3, 0))
			f.send(304, append(ints(3), "tail"...))
			f.send(306, ints(3))
			f.send(203, ints(0))
		}, func(out []byte, err error, fb bool) bool {
			return err == nil && !fb && bytes.Equal(out, append(slices.Clip(big), "tail"...))
		}},
		{"a file by name is refused", func(f *fakeConn) {
			f.send(303, append(ints(4, -1, 0), "/tmp/x\x00"...))
			f.expect(305, ints(4, int32(syscall.EBADF)))
			f.send(300, append(ints(5, -1), "/etc/passwd\x00"...)) // MSG_READ_OPEN
			f.expect(302, ints(5, int32(syscall.EBADF)))
			f.send(203, ints(0))
		}, func(out []byte, err error, fb bool) bool { return err == nil && !fb && len(out) == 0 }},
		{"status 1 with tmux's words", func(f *fakeConn) {
			f.send(303, ints(2, 2, 0))
			f.expect(305, ints(2, 0))
			f.send(304, append(ints(2), "can't find pane: %9\n"...))
			f.send(203, ints(1))
		}, func(out []byte, err error, fb bool) bool {
			return errors.Is(err, tmux.ErrNotFound) && strings.HasSuffix(err.Error(), ": can't find pane: %9")
		}},
		{"exit message", func(f *fakeConn) {
			f.send(203, append(ints(1), "access not allowed\x00"...))
		}, func(out []byte, err error, fb bool) bool {
			return err != nil && strings.HasSuffix(err.Error(), ": access not allowed")
		}},
		{"shutdown", func(f *fakeConn) { f.send(210, nil) }, func(out []byte, err error, fb bool) bool {
			return errors.Is(err, tmux.ErrNoServer)
		}},
		{"protocol version mismatch", func(f *fakeConn) { f.sendPeer(12, nil, 7) }, func(out []byte, err error, fb bool) bool {
			return fb
		}},
		{"another version's messages", func(f *fakeConn) { f.sendPeer(203, ints(0), 9) }, func(out []byte, err error, fb bool) bool {
			return fb
		}},
		{"closed before answering", func(f *fakeConn) {}, func(out []byte, err error, fb bool) bool { return fb }},
		{"a write to a stream never opened", func(f *fakeConn) {
			f.send(304, append(ints(7), "x"...))
			f.send(203, ints(0))
		}, func(out []byte, err error, fb bool) bool { return err != nil && !fb }},
		{"an oversized header", func(f *fakeConn) {
			f.raw(ints(304, 1<<20, 8, 1))
		}, func(out []byte, err error, fb bool) bool { return err != nil && !fb }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeServer(t, tc.script)
			out, err, fb := srv.RunNative(ctx, "list-panes", "-a", "-F", "#{pane_id}")
			if !tc.check(out, err, fb) {
				t.Errorf("got %q, %v (fell back %v)", clip(out), err, fb)
			}
		})
	}

	t.Run("deadline", func(t *testing.T) {
		hold := make(chan struct{})
		srv := fakeServer(t, func(f *fakeConn) { <-hold })
		defer close(hold)
		srv.Timeout = 200 * time.Millisecond
		start := time.Now()
		_, err, _ := srv.RunNative(ctx, "list-panes")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Errorf("after %s: %v", time.Since(start), err)
		}
	})
}

// fakeConn is one client connection to a fake tmux server.
type fakeConn struct {
	t    *testing.T
	conn net.Conn
}

// fakeServer listens on a fresh socket, checks that the first client
// identifies itself as tmux's server requires and sends its command, then
// runs script and closes the connection.
func fakeServer(t *testing.T, script func(f *fakeConn)) tmux.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "s3f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		f := &fakeConn{t: t, conn: conn}
		if f.identify() {
			script(f)
		}
	}()
	return tmux.Server{Path: path}
}

func (f *fakeConn) read() (typ uint32, data []byte, ok bool) {
	var hdr [16]byte
	if _, err := io.ReadFull(f.conn, hdr[:]); err != nil {
		f.t.Errorf("fake server: reading: %v", err)
		return 0, nil, false
	}
	typ = binary.NativeEndian.Uint32(hdr[0:])
	n := binary.NativeEndian.Uint16(hdr[4:])
	flags := binary.NativeEndian.Uint16(hdr[6:])
	if peer := binary.NativeEndian.Uint32(hdr[8:]); peer&0xff != 8 || flags != 0 || n < 16 || n > 16384 {
		f.t.Errorf("fake server: message %d: peerid %d, flags %d, len %d", typ, peer, flags, n)
		return 0, nil, false
	}
	data = make([]byte, n-16)
	if _, err := io.ReadFull(f.conn, data); err != nil {
		f.t.Errorf("fake server: reading: %v", err)
		return 0, nil, false
	}
	return typ, data, true
}

// identify reads messages up to the command, applying the checks tmux's
// server_client_dispatch_identify makes, fatally, on each.
func (f *fakeConn) identify() bool {
	seen := map[uint32]bool{}
	cstr := func(d []byte) bool { return len(d) > 0 && d[len(d)-1] == 0 }
	for {
		typ, d, ok := f.read()
		if !ok {
			return false
		}
		if seen[106] {
			if typ != 200 || len(d) < 4 || !cstr(d) {
				f.t.Errorf("fake server: after identify done, message %d %q, want the command", typ, d)
				return false
			}
			argc := binary.NativeEndian.Uint32(d)
			if args := strings.Split(string(d[4:len(d)-1]), "\x00"); int(argc) != len(args) || args[0] != "list-panes" {
				f.t.Errorf("fake server: command argc %d %q", argc, args)
				return false
			}
			for _, need := range []uint32{100, 101, 102, 104, 106, 107, 108, 109, 110, 111} {
				if !seen[need] {
					f.t.Errorf("fake server: no identify message %d", need)
				}
			}
			return true
		}
		seen[typ] = true
		var good bool
		switch typ {
		case 100, 109: // flags, features: int
			good = len(d) == 4
			if typ == 100 && good && binary.NativeEndian.Uint32(d)&0x10000 == 0 {
				f.t.Error("fake server: the client is not UTF-8 (-u)")
			}
		case 111: // long flags
			good = len(d) == 8
		case 101, 102, 108: // term, tty name, cwd
			good = cstr(d)
		case 105: // environ
			good = cstr(d) && bytes.IndexByte(d, '=') > 0
		case 104, 110, 106: // stdin, stdout, done
			good = len(d) == 0
		case 107: // pid
			good = len(d) == 4 && int(binary.NativeEndian.Uint32(d)) == os.Getpid()
		default:
			f.t.Errorf("fake server: unexpected message %d before identify done", typ)
			return false
		}
		if !good {
			f.t.Errorf("fake server: message %d has a size tmux's server would die of: %q", typ, d)
			return false
		}
	}
}

func (f *fakeConn) sendPeer(typ uint32, data []byte, peer uint32) {
	b := binary.NativeEndian.AppendUint32(nil, typ)
	b = binary.NativeEndian.AppendUint16(b, uint16(16+len(data)))
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint32(b, peer)
	b = binary.NativeEndian.AppendUint32(b, 1)
	f.raw(append(b, data...))
}

func (f *fakeConn) send(typ uint32, data []byte) { f.sendPeer(typ, data, 8) }

// raw writes b. A client that has already hung up (as it does on a
// message it refuses, such as a write to a stream never opened) is not
// the fake server's failure: each case checks what the client returned.
func (f *fakeConn) raw(b []byte) {
	if _, err := f.conn.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		f.t.Errorf("fake server: writing: %v", err)
	}
}

func (f *fakeConn) expect(typ uint32, data []byte) {
	got, d, ok := f.read()
	if ok && (got != typ || !bytes.Equal(d, data)) {
		f.t.Errorf("fake server: got message %d %v, want %d %v", got, d, typ, data)
	}
}

func ints(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func serverPID(t *testing.T, s tmux.Server) int {
	t.Helper()
	pid, err := strconv.Atoi(tmuxRun(t, s, "display-message", "-p", "#{pid}"))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func openFDs(t *testing.T) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}
