package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Target names the pane an action goes to. Pane is a tmux pane id ("%3");
// Session is a session name, a tmux target ("build:0.1") or a session id
// ("$2"). A session with several panes resolves to the one pane running an
// agent; when several do, the call fails and lists them.
type Target struct {
	Session string `json:"session,omitempty"`
	Pane    string `json:"pane,omitempty"`
}

func (t Target) String() string {
	if t.Pane != "" {
		return t.Pane
	}
	return t.Session
}

// InjectRequest types text into a pane.
type InjectRequest struct {
	Target
	Text string `json:"text"`
	// NoEnter types the text without submitting it.
	NoEnter bool `json:"no_enter,omitempty"`
	// Urgent interrupts the agent (Escape) before typing, so the guidance
	// is read now rather than after the current step.
	Urgent bool `json:"urgent,omitempty"`
	// VisibleControls types what CheckText would refuse (control bytes,
	// ESC, invalid UTF-8) as visible text instead ("^[", "^C", "\xff"):
	// see the tmux package's VisibleText. Without it such a text is refused.
	VisibleControls bool `json:"visible_controls,omitempty"`
	// WhenIdle types only while the pane, read again right before typing,
	// is idle at its prompt; otherwise nothing is typed and the error
	// matches ErrNotIdle. A supervisor pane's wakes go this way, so a
	// wake never lands in a dialog or in the middle of a turn.
	WhenIdle bool `json:"when_idle,omitempty"`
	// WhileLimited types only while the pane, read again right before
	// typing, shows the usage limit that resets at this time, with
	// nothing to continue the agent by itself (state rate_limited, no
	// kind); otherwise nothing is typed and the error matches
	// ErrLimitChanged. system3's continue after a limit goes this way, so
	// it lands only at the prompt of the limit it was meant for.
	WhileLimited time.Time `json:"while_limited,omitzero"`
	// Origin says who asks, for the audit log: "tui", "cli", "mcp:<client>".
	Origin string `json:"origin"`

	// size is the length of the text the sender had, when the socket
	// carried only its first MaxText bytes.
	size int
}

// wireTextLimit is the longest text InjectRequest's JSON carries as a
// string; longer text (and text that is not text) goes as base64, which
// keeps every byte and bounds the request at 4/3 of the text.
const wireTextLimit = 128 << 10

// MaxText is the most one action types, in bytes: the tmux package's
// MaxText, which a test of package monitor keeps equal. The service refuses
// longer text; the audit log keeps every text whole up to it.
const MaxText = 256 << 10

// MarshalJSON keeps the text byte for byte (encoding/json would turn
// invalid UTF-8 into U+FFFD): text that is not valid UTF-8, or that is
// long, goes as text_base64. Text over MaxText, which the service
// refuses anyway, is cut to that and its length sent as text_bytes, so
// the refusal is audited on the far side.
func (r InjectRequest) MarshalJSON() ([]byte, error) {
	type plain InjectRequest
	w := struct {
		plain
		Text       string `json:"text,omitempty"`
		TextBase64 string `json:"text_base64,omitempty"`
		TextBytes  int    `json:"text_bytes,omitempty"`
	}{plain: plain(r)}
	text := r.Text
	if len(text) > MaxText {
		w.TextBytes, text = len(text), text[:MaxText]
	}
	if len(text) <= wireTextLimit && utf8.ValidString(text) {
		w.Text = text
	} else {
		w.TextBase64 = base64.StdEncoding.EncodeToString([]byte(text))
	}
	return json.Marshal(w)
}

// WireSize is the length the sender's text had when the socket carried
// only its first MaxText bytes, and 0 otherwise.
func (r InjectRequest) WireSize() int { return r.size }

// UnmarshalJSON reads what MarshalJSON writes.
func (r *InjectRequest) UnmarshalJSON(b []byte) error {
	type plain InjectRequest
	var w struct {
		plain
		Text       string `json:"text"`
		TextBase64 string `json:"text_base64"`
		TextBytes  int    `json:"text_bytes"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = InjectRequest(w.plain)
	r.Text, r.size = w.Text, w.TextBytes
	if w.TextBase64 != "" {
		t, err := base64.StdEncoding.DecodeString(w.TextBase64)
		if err != nil {
			return fmt.Errorf("text_base64: %w", err)
		}
		r.Text = string(t)
	}
	return nil
}

// KeysRequest presses keys in a pane (tmux key names from the allowed set).
type KeysRequest struct {
	Target
	Keys   []string `json:"keys"`
	Origin string   `json:"origin"`
}

// AnswerRequest answers the prompt a session is waiting at. Answer is an
// option number ("2"), an option's label (or a unique prefix of it), "yes"
// (the first option that starts with Yes) or "no" (decline the way the
// agent expects: Escape, or its No option).
//
// An answer is a compare-and-set: right before typing, system3 reads the
// pane again and types only if it still shows the prompt the answer is
// for, and no answer was typed into that prompt already. Wake (a wake's
// id) or Prompt (a Session's or a Wake's Prompt) name that prompt; with
// neither, it is the prompt the registry holds for the target.
type AnswerRequest struct {
	Target
	Answer string `json:"answer"`
	// Wake is the id of the awaiting_input wake the answer is for; the
	// target may be left empty (the wake names its pane).
	Wake string `json:"wake,omitempty"`
	// Prompt is the identity of the prompt the answer is for.
	Prompt string `json:"prompt,omitempty"`
	Origin string `json:"origin"`
}

// InterruptRequest stops what the agent is doing (Escape for agents that
// take it, Ctrl-C otherwise).
type InterruptRequest struct {
	Target
	Origin string `json:"origin"`
}

// PreviewRequest asks for a pane's screen.
type PreviewRequest struct {
	Target
	// Lines keeps only the last Lines lines (0: the visible screen).
	Lines int `json:"lines,omitempty"`
	// History includes this many lines of scrollback above the screen.
	History int `json:"history,omitempty"`
	// Escapes keeps colour escape sequences, for a coloured preview.
	Escapes bool `json:"escapes,omitempty"`
}

// Preview is a pane's screen at one moment.
type Preview struct {
	Pane    string   `json:"pane"`
	Session string   `json:"session"`
	Lines   []string `json:"lines"`
	// Truncated is how many lines above Lines were cut.
	Truncated int       `json:"truncated"`
	Taken     time.Time `json:"taken"`
}

// PreviewUpdate is one screen of a preview stream (Service.WatchPreview):
// the pane's screen, or, with Err set, why it could not be read this time
// (the stream goes on; the next change is read again).
type PreviewUpdate struct {
	Preview
	Err string `json:"error,omitempty"`
}

// PreviewEvery is how often, at most, a preview stream reads a pane that
// keeps printing: the dashboard's live preview follows it at this pace,
// and a pane that prints nothing is not read at all.
const PreviewEvery = 250 * time.Millisecond

// ActionResult says what an action sent and whether it arrived.
type ActionResult struct {
	Action  string `json:"action"` // inject, keys, answer, interrupt
	Pane    string `json:"pane"`
	Session string `json:"session"`
	Target  string `json:"target"` // session:window.pane
	Text    string `json:"text,omitempty"`
	// Keys are the keys pressed, in order (for inject: the Escape of an
	// urgent message).
	Keys []string `json:"keys,omitempty"`
	// Option is the option an answer chose, as the screen showed it.
	Option string `json:"option,omitempty"`
	// Delivered: tmux accepted everything. Verified: the pane was seen to
	// take the text (for keys, only Delivered applies).
	Delivered bool      `json:"delivered"`
	Verified  bool      `json:"verified"`
	Method    string    `json:"method,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	At        time.Time `json:"at"`
}

// Errors of the actions. They match with errors.Is, also across the socket.
var (
	// ErrUnknownTarget: no such pane or session is being watched.
	ErrUnknownTarget = errors.New("no such session or pane")
	// ErrAmbiguousTarget: a session name matches several agent panes.
	ErrAmbiguousTarget = errors.New("the session has several agent panes")
	// ErrNotAwaiting: an answer for a session that is not at a prompt.
	ErrNotAwaiting = errors.New("the session is not waiting for an answer")
	// ErrPromptChanged: the prompt an answer was for is no longer the one
	// on screen (another prompt, no prompt, an answer typed already, or
	// its wake resolved): nothing was typed.
	ErrPromptChanged = errors.New("the prompt changed since")
	// ErrBadAnswer: the answer matches no option.
	ErrBadAnswer = errors.New("the answer matches no option")
	// ErrBadRequest: the request itself is not valid (no target, no text,
	// a key outside the allowed set).
	ErrBadRequest = errors.New("invalid request")
	// ErrUnknownList: no task list has that id.
	ErrUnknownList = errors.New("no such task list")
	// ErrUnknownTask: the task list has no task with that id.
	ErrUnknownTask = errors.New("no such task")
	// ErrNoSender: the service was built without a way to type into panes.
	ErrNoSender = errors.New("this system3 cannot send to panes")
	// ErrAuditUnwritable: the audit log cannot be written, so the action
	// was refused before anything was sent.
	ErrAuditUnwritable = errors.New("the audit log cannot be written, so nothing was sent")
	// ErrNotIdle: text meant for a pane idle at its prompt
	// (InjectRequest.WhenIdle) found it working, at a dialog or gone from
	// its prompt: nothing was typed.
	ErrNotIdle = errors.New("the pane is not idle at its prompt")
	// ErrLimitChanged: the usage limit a continue was meant for is no
	// longer on screen as it was (see InjectRequest.WhileLimited).
	ErrLimitChanged = errors.New("the usage limit is no longer on screen as it was")
	// ErrHookRefused matches Hook's error for an event that cannot be
	// shown to come from the pane it names.
	ErrHookRefused = errors.New("hook event refused")
	// ErrUnknownWake: no wake with that id, or it was acknowledged and
	// has since been forgotten.
	ErrUnknownWake = errors.New("no such wake")
)

// ResolveTarget picks the session t names from sessions (of the tmux
// server named server, for messages).
func ResolveTarget(t Target, sessions []Session, server string) (Session, error) {
	name := strings.TrimSpace(t.String())
	if name == "" {
		return Session{}, fmt.Errorf("%w: name a session or a pane", ErrBadRequest)
	}
	var matches, agents []Session
	for _, ss := range sessions {
		switch {
		case t.Pane != "" && ss.Pane == t.Pane:
			return ss, nil
		case t.Pane != "":
		case ss.Target == name || ss.Pane == name:
			return ss, nil
		case ss.Session == name || ss.SessionID == name:
			matches = append(matches, ss)
			if ss.IsAgent() {
				agents = append(agents, ss)
			}
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(agents) == 1:
		return agents[0], nil
	case len(matches) == 0:
		return Session{}, fmt.Errorf("%w: %q is not a session or pane on %s; run `system3 status` to list them", ErrUnknownTarget, name, server)
	}
	pick := agents
	if len(pick) == 0 {
		pick = matches
	}
	SortSessions(pick)
	names := make([]string, len(pick))
	for i, p := range pick {
		names[i] = fmt.Sprintf("%s (%s, %s)", p.Target, p.Pane, p.Agent)
	}
	return Session{}, fmt.Errorf("%w: %q has %d panes; name one: %s", ErrAmbiguousTarget, name, len(pick), strings.Join(names, ", "))
}
