package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
)

// The freedesktop notification service.
const (
	fdoName   = "org.freedesktop.Notifications"
	fdoPath   = "/org/freedesktop/Notifications"
	fdoIface  = "org.freedesktop.Notifications"
	focusKey  = "focus"
	cmdTimout = 10 * time.Second
)

// OSC selects the terminal escape a Desktop channel writes.
type OSC int

// The escapes: OSC 9 (iTerm2, WezTerm, Windows Terminal, kitty...) and
// OSC 777 (urxvt, foot, Ghostty, WezTerm...).
const (
	OSCOff OSC = 0
	OSC9   OSC = 9
	OSC777 OSC = 777
)

// Desktop shows a wake on the operator's desktop: the freedesktop
// notification service over D-Bus (with a "Focus" action that switches
// the operator's tmux client to the pane), notify-send when D-Bus cannot
// be reached, osascript on macOS, and optionally an OSC 9 or 777 escape
// written to the terminal (wrapped for tmux's passthrough inside tmux).
type Desktop struct {
	// BusAddress is the session bus; empty: $DBUS_SESSION_BUS_ADDRESS.
	BusAddress string
	// Focus switches the operator to a pane; nil: no Focus action.
	Focus func(ctx context.Context, pane string) error
	// OSC writes the escape to Terminal when not OSCOff; InTmux wraps it in
	// tmux's DCS passthrough (the tmux option allow-passthrough must be on).
	OSC      OSC
	Terminal io.Writer
	InTmux   bool
	// NoSystem turns the D-Bus, notify-send and osascript paths off
	// (only the OSC escape is written).
	NoSystem bool
	Log      *slog.Logger
	// GOOS defaults to runtime.GOOS; tests set it.
	GOOS string

	mu      sync.Mutex
	conn    *dbus.Conn
	actions bool              // the server shows action buttons
	panes   map[uint32]string // notification id -> pane, for Focus
	closed  bool
}

// Name is "desktop".
func (d *Desktop) Name() string { return "desktop" }

// Send shows m.
func (d *Desktop) Send(ctx context.Context, m Message) error {
	if d.OSC != OSCOff && d.Terminal != nil {
		if _, err := io.WriteString(d.Terminal, OSCSequence(d.OSC, m.Title, m.Body, d.InTmux)); err != nil {
			return fmt.Errorf("write the terminal notification: %w", err)
		}
	}
	if d.NoSystem {
		return nil
	}
	goos := d.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	if goos == "darwin" {
		return d.osascript(ctx, m)
	}
	err := d.dbusNotify(ctx, m)
	if err == nil {
		return nil
	}
	if _, lerr := exec.LookPath("notify-send"); lerr != nil {
		return fmt.Errorf("desktop notification: %w (and notify-send is not installed)", err)
	}
	d.log().Debug("notify: D-Bus failed, using notify-send", "err", err)
	return d.notifySend(ctx, m)
}

func (d *Desktop) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// connect returns the bus connection, opening it (and the ActionInvoked
// listener) once.
func (d *Desktop) connect(ctx context.Context) (*dbus.Conn, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, false, errors.New("desktop notifications closed")
	}
	if d.conn != nil && d.conn.Connected() {
		return d.conn, d.actions, nil
	}
	var conn *dbus.Conn
	var err error
	if d.BusAddress != "" {
		conn, err = dbus.Connect(d.BusAddress, dbus.WithContext(ctx))
	} else {
		conn, err = dbus.ConnectSessionBus(dbus.WithContext(ctx))
	}
	if err != nil {
		return nil, false, fmt.Errorf("connect to the D-Bus session bus: %w", err)
	}
	var caps []string
	if err := conn.Object(fdoName, fdoPath).CallWithContext(ctx, fdoIface+".GetCapabilities", 0).Store(&caps); err != nil {
		conn.Close()
		return nil, false, fmt.Errorf("no desktop notification service on the session bus: %w", err)
	}
	d.conn, d.actions, d.panes = conn, slices.Contains(caps, "actions"), map[uint32]string{}
	if d.actions && d.Focus != nil {
		if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchInterface(fdoIface), dbus.WithMatchMember("ActionInvoked")); err == nil {
			ch := make(chan *dbus.Signal, 16)
			conn.Signal(ch)
			go d.listen(ch)
		}
	}
	return conn, d.actions, nil
}

// listen focuses the pane of a notification whose Focus action was
// clicked; it ends when the connection closes.
func (d *Desktop) listen(ch <-chan *dbus.Signal) {
	for sig := range ch {
		if sig.Name != fdoIface+".ActionInvoked" || len(sig.Body) < 2 {
			continue
		}
		id, _ := sig.Body[0].(uint32)
		key, _ := sig.Body[1].(string)
		d.mu.Lock()
		pane, ok := d.panes[id]
		d.mu.Unlock()
		if !ok || (key != focusKey && key != "default") {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimout)
		if err := d.Focus(ctx, pane); err != nil {
			d.log().Warn("notify: focus the pane", "pane", pane, "err", err)
		}
		cancel()
	}
}

func (d *Desktop) dbusNotify(ctx context.Context, m Message) error {
	conn, actions, err := d.connect(ctx)
	if err != nil {
		return err
	}
	ev := m.Wake()
	var acts []string
	focus := actions && d.Focus != nil && ev.Pane != "" && !m.Digest() && !m.Test
	if focus {
		acts = []string{"default", "Focus pane", focusKey, "Focus pane"}
	}
	hints := map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(ev.Reason.Info().Urgency)), "category": dbus.MakeVariant("im.received")}
	var id uint32
	call := conn.Object(fdoName, fdoPath).CallWithContext(ctx, fdoIface+".Notify", 0,
		"system3", uint32(0), "dialog-information", m.Title, escapeMarkup(m.Body), acts, hints, int32(-1))
	if err := call.Store(&id); err != nil {
		d.mu.Lock()
		if d.conn == conn {
			d.conn = nil
		}
		d.mu.Unlock()
		conn.Close()
		return fmt.Errorf("desktop notification: %w", err)
	}
	if focus {
		d.mu.Lock()
		d.panes[id] = ev.Pane
		if len(d.panes) > 256 { // ids of old notifications the user never clicked
			for k := range d.panes {
				if k < id-128 {
					delete(d.panes, k)
				}
			}
		}
		d.mu.Unlock()
	}
	return nil
}

// Close ends the D-Bus connection.
func (d *Desktop) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.conn != nil {
		err := d.conn.Close()
		d.conn = nil
		return err
	}
	return nil
}

// escapeMarkup keeps a body from being read as the notification markup
// some servers support.
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func (d *Desktop) notifySend(ctx context.Context, m Message) error {
	return runQuiet(ctx, "notify-send", "--app-name=system3", "--urgency="+m.Wake().Reason.Info().Urgency.String(), "--", m.Title, escapeMarkup(m.Body))
}

// osascriptProgram takes the title and body as arguments, so no text is
// ever AppleScript source.
const osascriptProgram = `on run argv
display notification (item 2 of argv) with title (item 1 of argv)
end run`

func (d *Desktop) osascript(ctx context.Context, m Message) error {
	return runQuiet(ctx, "osascript", "-e", osascriptProgram, m.Title, m.Body)
}

func runQuiet(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, cmdTimout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(tail(string(out), 300)))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// OSCSequence is the terminal escape that shows a notification. Text is
// cleaned of control characters (so it cannot end the escape) and of ';'
// in OSC 777's title. Inside tmux, the escape is wrapped in tmux's DCS
// passthrough with every ESC doubled; tmux forwards it only with the
// option allow-passthrough on (tmux 3.3 or later).
func OSCSequence(kind OSC, title, body string, inTmux bool) string {
	title = strings.ReplaceAll(Clean(title, 200), "\n", " ")
	body = strings.ReplaceAll(Clean(body, 500), "\n", " · ")
	var seq string
	switch kind {
	case OSC777:
		seq = "\x1b]777;notify;" + strings.ReplaceAll(title, ";", ",") + ";" + body + "\x07"
	default:
		text := title
		if body != "" {
			text += ": " + body
		}
		seq = "\x1b]9;" + text + "\x07"
	}
	if inTmux {
		seq = "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return seq
}
