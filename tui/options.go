package tui

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Options configure the dashboard. The zero value works: no templates, no
// bell, no MCP line, the wall clock, and colour unless NO_COLOR is set.
type Options struct {
	// Server names the tmux server in the header, the way tmux.Server's
	// String does ("tmux server -L work"); empty: the name the service
	// reports in its snapshot.
	Server string
	// Templates are saved guidance messages that ctrl+t offers in the
	// compose box.
	Templates []Template
	// Bell rings the terminal bell when a wake that needs a person is
	// raised (not for heartbeats and summaries).
	Bell bool
	// BellOut is where the bell ("\a") is written. Run sets it to its
	// output; with New and a nil BellOut the bell is not rung.
	BellOut io.Writer
	// MCP reports the embedded MCP server for the header; nil hides it.
	// It is called off the UI goroutine, twice a second.
	MCP func() MCPStatus
	// Hosts reports the other hosts of the config (hosts:) for the
	// header, which names each disconnected one with when it was last
	// seen; nil hides them. It is called off the UI goroutine, twice a
	// second, so it returns what is known without asking the hosts.
	Hosts func() []HostStatus
	// Jump switches the operator's tmux client to the session's pane (the
	// caller runs tmux switch-client). It is called off the UI goroutine.
	// When it is nil, or returns an error (say, the dashboard does not run
	// inside tmux), the status line shows how to attach instead.
	Jump func(api.Session) error
	// AttachHint returns the command that attaches a terminal to the
	// session's pane; nil: one is derived from Server, such as
	// "tmux -L work attach -t build:0.1".
	AttachHint func(api.Session) string
	// Notice reports a change in where the dashboard's monitors run (the
	// daemon it attached to went, and it took over); a new text is shown
	// in the status line. It is called off the UI goroutine, with the
	// ticks. Nil: nothing to report.
	Notice func() string
	// Clock tells the time for ages; nil: time.Now.
	Clock func() time.Time
	// NoColor draws without colour. The NO_COLOR environment variable
	// does the same.
	NoColor bool
}

// Template is one saved guidance message.
type Template struct {
	Name string
	Text string
}

// HostStatus is another host as the header shows it.
type HostStatus struct {
	Name      string
	Connected bool
	// LastSeen is when it last answered; zero when never.
	LastSeen time.Time
}

// hostsText is the header's hosts item, and whether a host is
// disconnected: "hosts: 3 connected", or "hosts: web1 disconnected since
// 14:02, gpu never seen (1 of 3 connected)".
func hostsText(hs []HostStatus, now time.Time) (string, bool) {
	var down []string
	for _, h := range hs {
		if h.Connected {
			continue
		}
		switch {
		case h.LastSeen.IsZero():
			down = append(down, clean(h.Name)+" never seen")
		case now.Sub(h.LastSeen) < 20*time.Hour:
			down = append(down, clean(h.Name)+" disconnected since "+h.LastSeen.Local().Format("15:04"))
		default:
			down = append(down, clean(h.Name)+" disconnected since "+h.LastSeen.Local().Format("Jan 2 15:04"))
		}
	}
	if len(down) == 0 {
		return "hosts: " + strconv.Itoa(len(hs)) + " connected", false
	}
	return "hosts: " + strings.Join(down, ", ") + " (" + strconv.Itoa(len(hs)-len(down)) + " of " + strconv.Itoa(len(hs)) + " connected)", true
}

// MCPStatus is the embedded MCP server as the header shows it.
type MCPStatus struct {
	// Addr is where it listens ("127.0.0.1:8889"); empty when it does not.
	Addr string
	// Err says why it is not serving ("port taken"); empty when it is, or
	// when it is turned off.
	Err string
	// Clients counts the connected clients.
	Clients int
}

// text is the header's MCP item.
func (s MCPStatus) text() string {
	switch {
	case s.Err != "":
		// Errors often name MCP already ("MCP port … is in use").
		e := clean(s.Err)
		if strings.HasPrefix(e, "MCP ") {
			return e
		}
		return "MCP: " + e
	case s.Addr == "":
		return "MCP: off"
	case s.Clients > 0:
		return "MCP: " + clean(s.Addr) + " (" + strconv.Itoa(s.Clients) + " " + plural(s.Clients, "client", "clients") + ")"
	}
	return "MCP: " + clean(s.Addr)
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok && os.Getenv("NO_COLOR") != "" {
		o.NoColor = true
	}
	return o
}

// tmuxArgs returns the tmux flags that select the server Server names.
func tmuxArgs(server string) string {
	switch {
	case strings.HasPrefix(server, "tmux server -L "):
		return "tmux -L " + shellQuote(strings.TrimPrefix(server, "tmux server -L "))
	case strings.HasPrefix(server, "tmux server -S "):
		return "tmux -S " + shellQuote(strings.TrimPrefix(server, "tmux server -S "))
	}
	return "tmux"
}

// attachHint is the command that attaches a terminal to sess.
func (m *Model) attachHint(sess api.Session) string {
	if m.opts.AttachHint != nil {
		return m.opts.AttachHint(sess)
	}
	return tmuxArgs(m.serverName()) + " attach -t " + shellQuote(sess.Target)
}
