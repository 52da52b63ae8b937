package ipc

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestConnectionLimit(t *testing.T) {
	srv := serve(t, newFake(t), func(s *Server) { s.maxConns = 2 })
	held := []*rawConn{rawDial(t, srv.path), rawDial(t, srv.path)}
	testkit.WaitFor(t, 5*time.Second, "both connections to be served", func() bool { return srv.active.Load() == 2 })

	busy := rawDial(t, srv.path)
	rep := busy.reply()
	if rep.Error == nil || rep.Error.Code != codeBusy || !strings.Contains(rep.Error.Message, "already serves 2 connections") {
		t.Fatalf("over the limit: reply %+v, want a busy error", rep.Error)
	}
	busy.eof()
	// The client sees the daemon's sentence.
	c, err := Dial(context.Background(), srv.path)
	if err == nil {
		_, err = c.Snapshot(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "close some dashboards") {
		t.Fatalf("client over the limit: err = %v", err)
	}

	for _, r := range held {
		r.conn.Close()
	}
	testkit.WaitFor(t, 5*time.Second, "the held connections to be freed", func() bool { return srv.active.Load() == 0 })
	if _, err := dial(t, srv.path).Snapshot(context.Background()); err != nil {
		t.Fatalf("under the limit again: %v", err)
	}
}

// TestPeerOtherUserRefused connects as another user to a socket whose
// modes were loosened: the peer-credential check still refuses it.
func TestPeerOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user; CI runs as root")
	}
	srv := serve(t, newFake(t))
	if err := os.Chmod(filepath.Dir(srv.path), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(srv.path, 0o777); err != nil {
		t.Fatal(err)
	}
	// The other user must be able to run this test binary.
	bin := filepath.Join(testkit.ShortDir(t), "peer.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPeerDialHelper$")
	cmd.Env = append(os.Environ(), "IPC_PEER_DIAL="+srv.path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "peer: closed without a hello") {
		t.Fatalf("another user got an answer from the daemon:\n%s", out)
	}
	// The owner is still served.
	if _, err := dial(t, srv.path).Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestPeerDialHelper runs in the child of TestPeerOtherUserRefused.
func TestPeerDialHelper(t *testing.T) {
	path := os.Getenv("IPC_PEER_DIAL")
	if path == "" {
		t.Skip("helper for TestPeerOtherUserRefused")
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial as uid %d: %v", os.Getuid(), err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		os.Stdout.WriteString("peer: closed without a hello\n")
		return
	}
	os.Stdout.WriteString("peer: got " + line)
}
