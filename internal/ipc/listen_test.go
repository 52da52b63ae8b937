package ipc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

func TestListenPermissions(t *testing.T) {
	srv := serve(t, newFake(t))
	fi, err := os.Stat(srv.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want a socket with 0600", fi.Mode())
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(testkit.ShortDir(t), SocketFile)
	// A process that died leaves its socket file behind.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("Dial of a stale socket = %v, want ErrNoDaemon", err)
	}

	ln, err = Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	srv := NewServer(ln, backend.New(newFake(t), backend.Parts{}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after Run: %v", err)
	}
}

func TestListenDoesNotStealLiveSocket(t *testing.T) {
	srv := serve(t, newFake(t))
	if _, err := Listen(srv.path); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "another process is serving") {
		t.Fatalf("second Listen = %v, want ErrInUse", err)
	}
	if _, err := dial(t, srv.path).Snapshot(context.Background()); err != nil {
		t.Fatalf("the first server stopped answering: %v", err)
	}
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(testkit.ShortDir(t), SocketFile)
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me" {
		t.Error("the file was replaced")
	}
}

func TestPathTooLong(t *testing.T) {
	path := "/tmp/" + strings.Repeat("d", maxPathLen) + "/" + SocketFile
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "use a shorter --state-dir") {
		t.Errorf("Listen = %v", err)
	}
	if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "shorter --state-dir") {
		t.Errorf("Dial = %v", err)
	}
}

func TestDialWithoutDaemon(t *testing.T) {
	dir := testkit.ShortDir(t)
	for _, path := range []string{
		filepath.Join(dir, SocketFile),
		filepath.Join(dir, "missing", SocketFile),
	} {
		if _, err := Dial(context.Background(), path); !errors.Is(err, ErrNoDaemon) {
			t.Errorf("Dial(%s) = %v, want ErrNoDaemon", path, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, filepath.Join(dir, SocketFile)); err == nil {
		t.Error("Dial with a cancelled ctx succeeded")
	}
}
