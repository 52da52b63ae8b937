// Package notifytest is test support for notification channels: a private
// D-Bus session bus with a freedesktop notification server that records
// what it is shown.
package notifytest

import (
	"bufio"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// Names of the freedesktop notification service.
const (
	Name  = "org.freedesktop.Notifications"
	Path  = "/org/freedesktop/Notifications"
	Iface = "org.freedesktop.Notifications"
)

// PrivateBus starts a private D-Bus session bus (dbus-daemon, Debian
// package dbus) for the test and returns its address.
func PrivateBus(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(testkit.LookPath(t, "dbus-daemon"), "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// Note is one notification the server was asked to show.
type Note struct {
	App, Summary, Body string
	Actions            []string
	Urgency            byte
	ID                 uint32
}

// Server is a freedesktop notification server on a bus.
type Server struct {
	Conn *dbus.Conn
	mu   sync.Mutex
	got  []Note
	seen chan struct{}
}

// NewServer serves org.freedesktop.Notifications on the bus at addr, with
// the "actions" capability, until the test ends.
func NewServer(t testing.TB, addr string) *Server {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &Server{Conn: conn, seen: make(chan struct{}, 64)}
	if err := conn.Export(s, Path, Iface); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName(Name, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", r, err)
	}
	return s
}

// Notify records a notification (the D-Bus method).
func (s *Server) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, _ := hints["urgency"].Value().(byte)
	id := uint32(40 + len(s.got) + 1)
	s.got = append(s.got, Note{App: app, Summary: summary, Body: body, Actions: actions, Urgency: u, ID: id})
	s.seen <- struct{}{}
	return id, nil
}

// GetCapabilities says the server shows bodies and actions.
func (s *Server) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"body", "actions"}, nil
}

// GetServerInformation names the server.
func (s *Server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "notifytest", "system3", "1", "1.2", nil
}

// CloseNotification does nothing.
func (s *Server) CloseNotification(id uint32) *dbus.Error { return nil }

// Next waits for the next notification.
func (s *Server) Next(t testing.TB) Note {
	t.Helper()
	select {
	case <-s.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("no notification within 30s")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[len(s.got)-1]
}

// Click emits ActionInvoked for notification id, as a click on action key.
func (s *Server) Click(t testing.TB, id uint32, key string) {
	t.Helper()
	if err := s.Conn.Emit(Path, Iface+".ActionInvoked", id, key); err != nil {
		t.Fatal(err)
	}
}
