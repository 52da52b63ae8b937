// Package notify carries wakes to the operator outside the dashboard:
// desktop notifications (freedesktop D-Bus, notify-send, osascript, OSC 9
// and 777 through tmux), push to a phone (ntfy) and a generic webhook
// (Slack or Mattermost), with routing per reason and session, quiet hours,
// de-duplication across restarts, digests of bursts and retries.
package notify

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/system3-dev/system3/internal/api"
)

// Message is what a channel delivers: one wake, or a digest of several.
type Message struct {
	Title string
	Body  string
	// Wakes are the wakes the message is about: one, or a digest's.
	Wakes []api.Wake
	// Test marks `system3 notify test`'s sample.
	Test bool
}

// Digest reports whether the message gathers several wakes.
func (m Message) Digest() bool { return len(m.Wakes) > 1 }

// Wake is the message's one wake (the first of a digest).
func (m Message) Wake() api.Wake {
	if len(m.Wakes) == 0 {
		return api.Wake{}
	}
	return m.Wakes[0]
}

// Channel delivers messages somewhere. Send may be slow; the dispatcher
// never calls it from the monitors' goroutines.
type Channel interface {
	Name() string
	Send(ctx context.Context, m Message) error
}

// ForWake builds the message about one wake: the session and reason as
// title, the question (and options) as body.
func ForWake(ev api.Wake) Message {
	title := fmt.Sprintf("%s: %s", place(ev), ev.Reason.Info().Label)
	var body []string
	if ev.Question != "" {
		body = append(body, ev.Question)
		if ev.Details != "" && ev.Reason == api.ReasonAwaitingInput {
			// What is being approved: the command, the file, the URL.
			body = append(body, "About: "+Clean(ev.Details, 300))
		}
	}
	for i, o := range ev.Options {
		body = append(body, fmt.Sprintf("%d. %s", i+1, o))
	}
	if len(body) == 0 && ev.Details != "" {
		body = append(body, firstLine(ev.Details))
	}
	if len(body) == 0 && len(ev.Evidence.Lines) > 0 {
		body = append(body, ev.Evidence.Lines[len(ev.Evidence.Lines)-1])
	}
	if ev.SuggestedAction != "" {
		body = append(body, "→ "+ev.SuggestedAction)
	}
	return Message{Title: Clean(title, 200), Body: Clean(strings.Join(body, "\n"), 2000), Wakes: []api.Wake{ev}}
}

// ForDigest builds one message about a burst of wakes.
func ForDigest(evs []api.Wake) Message {
	if len(evs) == 1 {
		return ForWake(evs[0])
	}
	var lines []string
	for _, ev := range evs {
		l := fmt.Sprintf("%s: %s", place(ev), ev.Reason.Info().Label)
		if ev.Question != "" {
			l += " — " + ev.Question
		}
		lines = append(lines, l)
	}
	return Message{
		Title: fmt.Sprintf("system3: %d wakes", len(evs)),
		Body:  Clean(strings.Join(lines, "\n"), 2000),
		Wakes: slices.Clone(evs),
	}
}

// Sample is the message `system3 notify test` sends.
func Sample() Message {
	ev := api.Wake{ID: "w0000000000-test", Reason: api.ReasonAwaitingInput, Session: "system3-test", Pane: "%0",
		Question: "This is a test notification from system3. Do you see it?", Options: []string{"Yes", "No"},
		SuggestedAction: "nothing: this is a test"}
	m := ForWake(ev)
	m.Test = true
	return m
}

func place(ev api.Wake) string {
	switch {
	case ev.Session != "" && ev.Pane != "":
		return ev.Session + " " + ev.Pane
	case ev.Session != "":
		return ev.Session
	case ev.Pane != "":
		return ev.Pane
	}
	return "system3"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Clean makes text from a screen safe to show anywhere: control characters
// (escape sequences, BEL) become spaces, newlines stay, and it is cut to
// max runes.
func Clean(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n':
		case r == '\t':
			r = ' '
		case unicode.IsControl(r) || r == unicode.ReplacementChar:
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// Route selects the wakes a channel gets: any of Reasons (empty: all) in a
// session matching any of Sessions (path.Match globs; empty: all).
type Route struct {
	Reasons  []api.Reason
	Sessions []string
}

// Validate reports a bad glob or unknown reason in one sentence.
func (r Route) Validate() error {
	for _, g := range r.Sessions {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("session glob %q is not valid (use *, ? and [a-z]): %w", g, err)
		}
	}
	for _, x := range r.Reasons {
		if !x.Known() {
			return fmt.Errorf("unknown wake reason %q", x)
		}
	}
	return nil
}

// Match reports whether the route takes ev.
func (r Route) Match(ev api.Wake) bool {
	if len(r.Reasons) > 0 && !slices.Contains(r.Reasons, ev.Reason) {
		return false
	}
	if len(r.Sessions) == 0 {
		return true
	}
	for _, g := range r.Sessions {
		if ok, _ := path.Match(g, ev.Session); ok {
			return true
		}
	}
	return false
}
