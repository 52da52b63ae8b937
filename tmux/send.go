package tmux

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// PasteThreshold is the length above which SendText pastes through a
// buffer instead of typing with send-keys -l.
const PasteThreshold = 512

const (
	defaultEnterDelay    = 100 * time.Millisecond
	defaultVerifyTimeout = time.Second
	verifyPoll           = 50 * time.Millisecond
	pastedMarker         = "[Pasted text #"
)

// SendOptions tunes SendText. The zero value types the text, pauses, presses
// Enter and checks that the input was submitted.
type SendOptions struct {
	NoEnter    bool          // deliver the text only
	EnterDelay time.Duration // overrides Client.EnterDelay
	NoVerify   bool          // press Enter once and do not look at the pane
	Paste      bool          // use a paste buffer even for short single-line text
}

// SendResult says how far a SendText got.
type SendResult struct {
	Pane   string
	Method string // "send-keys" or "paste-buffer"
	// Delivered: tmux accepted the text (and the Enter, if one was asked for).
	Delivered bool
	// Verified: after Enter the pane was seen to change where the text had
	// been (the input box cleared, or the cursor moved on).
	Verified bool
	// Attempts is the number of Enter presses: 0 with NoEnter, 2 when the
	// first Enter was swallowed and retried.
	Attempts int
	// Detail explains a result that is delivered but not verified.
	Detail string
}

var bufferSeq atomic.Uint64

// bufferName is unique across concurrent sends and system3 processes:
// buffers are server-wide, and a shared name would let two sends paste each
// other's text.
func bufferName() string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("system3-%d-%d-%s", os.Getpid(), bufferSeq.Add(1), hex.EncodeToString(r[:]))
}

// SendText delivers text to a pane as data, never as tmux key names nor as
// terminal input that means a key: text that CheckText refuses (a control
// character, ESC, invalid UTF-8) or longer than MaxText is refused before
// anything is sent (ErrNotText, ErrTextTooLong), so no byte of it reaches
// the pane and no bracketed paste can be ended early. Single-line text up
// to PasteThreshold bytes is typed with send-keys -l; longer or multi-line
// text is loaded into a
// uniquely named buffer and pasted with bracketed paste (-p, which only adds
// markers when the application asked for them) keeping newlines as newlines
// (-r). A pane in copy mode or another mode leaves it first, since modes
// swallow keys. Then, unless NoEnter, it pauses and presses Enter as a
// separate key.
//
// Verification (unless NoVerify) compares the screen before and after Enter.
// Before Enter it waits (up to half of VerifyTimeout) for the end of the
// text, or a "[Pasted text #" marker, to show, and notes that row. If for
// VerifyTimeout after Enter the row stays unchanged and the cursor does not
// move, Enter was swallowed and it is pressed once more. When the text never
// shows (an application that does not echo), the result is delivered but
// not verified, and Enter is never repeated: a second Enter could answer a
// prompt that the first one opened.
//
// Sends to one pane are serialised. A dead or missing pane is an error
// naming the server and pane.
func (c *Client) SendText(ctx context.Context, pane, text string, opt SendOptions) (SendResult, error) {
	res := SendResult{Pane: pane}
	if err := c.checkSendable(pane, text); err != nil {
		return res, err
	}
	unlock, err := c.lockPane(ctx, pane)
	if err != nil {
		return res, &Error{Op: "send text to", Target: pane, Server: c.Server.String(), Msg: "waiting for an earlier send: " + err.Error(), Err: err}
	}
	defer unlock()

	if err := c.prepare(ctx, pane, "send text to"); err != nil {
		return res, err
	}

	if res.Method, err = c.typeText(ctx, pane, text, opt.Paste); err != nil {
		return res, err
	}
	if opt.NoEnter {
		res.Delivered = true
		return res, nil
	}

	if err := sleep(ctx, c.enterDelay(opt)); err != nil {
		return res, &Error{Op: "send text to", Target: pane, Server: c.Server.String(), Msg: "cancelled before Enter", Err: err}
	}

	var before screen
	row := -1
	if !opt.NoVerify && text != "" {
		if before, row, err = c.awaitText(ctx, pane, text); err != nil {
			return res, err
		}
	}
	return c.submit(ctx, pane, text, opt, before, row, res)
}

// checkSendable refuses text that CheckSize or CheckText refuses, before
// anything is sent.
func (c *Client) checkSendable(pane, text string) error {
	if err := CheckSize(len(text)); err != nil {
		return &Error{Op: "send text to", Target: pane, Server: c.Server.String(), Msg: err.Error(), Err: err}
	}
	if err := CheckText(text); err != nil {
		return &Error{Op: "send text to", Target: pane, Server: c.Server.String(), Msg: err.Error(), Err: err}
	}
	return nil
}

// typeText delivers the text without Enter, typed with send-keys -l or
// pasted through a buffer (see SendText), and returns the method used.
func (c *Client) typeText(ctx context.Context, pane, text string, forcePaste bool) (string, error) {
	paste := forcePaste || len(text) > PasteThreshold || strings.Contains(text, "\n")
	switch {
	case text == "":
		return "none", nil
	case paste:
		return "paste-buffer", c.paste(ctx, pane, text)
	default:
		_, err := c.run(ctx, "send text to", pane, "send-keys", "-l", "-t", pane, "--", text)
		return "send-keys", err
	}
}

// enterDelay is the pause between the text and Enter: the send's own, the
// client's, or the default.
func (c *Client) enterDelay(opt SendOptions) time.Duration {
	delay := opt.EnterDelay
	if delay <= 0 {
		delay = c.EnterDelay
	}
	if delay <= 0 {
		delay = defaultEnterDelay
	}
	return delay
}

// awaitText reads the screen until the text shows, for up to half the
// verify timeout: a busy application may not have drawn it yet. It returns
// the last screen read and the row showing the text, or -1.
func (c *Client) awaitText(ctx context.Context, pane, text string) (screen, int, error) {
	deadline := time.Now().Add(c.verifyTimeout() / 2)
	for {
		before, err := c.screen(ctx, pane)
		if err != nil {
			return before, -1, err
		}
		row := findTextRow(before, text)
		if row >= 0 || time.Now().After(deadline) {
			return before, row, nil
		}
		if err := sleep(ctx, verifyPoll); err != nil {
			return before, row, &Error{Op: "send text to", Target: pane, Server: c.Server.String(), Msg: "cancelled before Enter", Err: err}
		}
	}
}

// submit presses Enter, and once more if the text still sits where it was
// (before, row) after the first (see SendText).
func (c *Client) submit(ctx context.Context, pane, text string, opt SendOptions, before screen, row int, res SendResult) (SendResult, error) {
	for {
		if err := c.pressEnter(ctx, pane); err != nil {
			return res, err
		}
		res.Attempts++
		res.Delivered = true
		if opt.NoVerify || text == "" {
			return res, nil
		}
		if row < 0 {
			res.Detail = "the text is not visible in the pane, so its submission could not be checked"
			return res, nil
		}
		pending, err := c.stillPending(ctx, pane, before, row)
		if err != nil {
			return res, err
		}
		if !pending {
			res.Verified = true
			return res, nil
		}
		if res.Attempts >= 2 {
			res.Detail = "the text still sits in the input after pressing Enter twice"
			return res, nil
		}
	}
}

// prepare checks that the pane is alive and takes it out of copy mode (or
// any other mode) so keys reach the application.
func (c *Client) prepare(ctx context.Context, pane, op string) error {
	p, err := c.PaneInfo(ctx, pane)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Op = op
		}
		return err
	}
	if p.Dead {
		msg := "pane is dead: its command has exited"
		if p.DeadStatus != 0 {
			msg += fmt.Sprintf(" with status %d", p.DeadStatus)
		}
		return &Error{Op: op, Target: pane, Server: c.Server.String(), Msg: msg, Err: ErrPaneDead}
	}
	if p.InMode {
		if _, err := c.run(ctx, op, pane, "copy-mode", "-q", "-t", pane); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) paste(ctx context.Context, pane, text string) error {
	name := bufferName()
	// load-buffer always forks: it reads the text from stdin, byte for byte,
	// with no quoting and no command-line length limits.
	if _, err := c.Server.run(ctx, "send text to", pane, []byte(text), "load-buffer", "-b", name, "-"); err != nil {
		return err
	}
	if _, err := c.run(ctx, "send text to", pane, "paste-buffer", "-p", "-r", "-d", "-b", name, "-t", pane); err != nil {
		// -d only deletes the buffer after a successful paste.
		_, _ = c.run(context.WithoutCancel(ctx), "delete buffer for", pane, "delete-buffer", "-b", name)
		return err
	}
	return nil
}

func (c *Client) pressEnter(ctx context.Context, pane string) error {
	_, err := c.run(ctx, "press Enter in", pane, "send-keys", "-t", pane, "Enter")
	return err
}

// stillPending watches the pane for up to VerifyTimeout and reports whether
// nothing happened where the text was: the row is unchanged and the cursor
// has not moved.
func (c *Client) stillPending(ctx context.Context, pane string, before screen, row int) (bool, error) {
	deadline := time.Now().Add(c.verifyTimeout())
	for {
		if err := sleep(ctx, verifyPoll); err != nil {
			return false, &Error{Op: "verify send to", Target: pane, Server: c.Server.String(), Msg: "cancelled", Err: err}
		}
		after, err := c.screen(ctx, pane)
		if err != nil {
			return false, err
		}
		if !samePlace(before, after, row) {
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, nil
		}
	}
}

func (c *Client) verifyTimeout() time.Duration {
	if c.VerifyTimeout <= 0 {
		return defaultVerifyTimeout
	}
	return c.VerifyTimeout
}

func samePlace(before, after screen, row int) bool {
	return after.cx == before.cx && after.cy == before.cy &&
		row < len(after.rows) && after.rows[row] == before.rows[row]
}

// findTextRow finds the screen row showing the end of the text (or a
// pasted-text marker), searching upwards from the bottom so the input box
// wins over earlier copies in the transcript. A probe of one or two
// characters matches too easily, so it is only looked for near the cursor.
// It returns -1 when the text is not visible.
func findTextRow(sc screen, text string) int {
	for i := len(sc.rows) - 1; i >= 0; i-- {
		if strings.Contains(sc.rows[i], pastedMarker) {
			return i
		}
	}
	probe := tailProbe(text)
	if probe == "" {
		return -1
	}
	lo, hi := 0, len(sc.rows)-1
	if utf8.RuneCountInString(probe) < 3 {
		lo, hi = max(0, sc.cy-2), min(len(sc.rows)-1, sc.cy+2)
	}
	for i := hi; i >= lo; i-- {
		if strings.Contains(sc.rows[i], probe) {
			return i
		}
	}
	return -1
}

// tailProbe is the end of the text's last line as a terminal would show
// it: cut at the last control character (tmux draws a tab as spaces), with
// surrounding spaces trimmed, at most 16 characters so a wrapped line still
// matches its last row.
func tailProbe(text string) string {
	s := strings.TrimRight(text, " \t\r\n")
	if i := strings.LastIndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return ""
	}
	if n := utf8.RuneCountInString(s); n > 16 {
		r := []rune(s)
		s = string(r[n-16:])
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Key is a key that SendKeys may press to answer a prompt. Only the
// constants below are accepted; use ParseKey for user input. Keys are never
// built from arbitrary strings, because tmux would interpret them as key
// syntax.
type Key string

// The allowed keys, named as tmux names them.
const (
	KeyEnter     Key = "Enter"
	KeyEscape    Key = "Escape"
	KeyTab       Key = "Tab"
	KeyBTab      Key = "BTab" // shift-tab
	KeySpace     Key = "Space"
	KeyBackspace Key = "BSpace"
	KeyUp        Key = "Up"
	KeyDown      Key = "Down"
	KeyLeft      Key = "Left"
	KeyRight     Key = "Right"
	KeyCtrlC     Key = "C-c"
	KeyY         Key = "y"
	KeyN         Key = "n"
	Key0         Key = "0"
	Key1         Key = "1"
	Key2         Key = "2"
	Key3         Key = "3"
	Key4         Key = "4"
	Key5         Key = "5"
	Key6         Key = "6"
	Key7         Key = "7"
	Key8         Key = "8"
	Key9         Key = "9"
)

// allowedKeys is the closed set SendKeys accepts, in a stable order.
var allowedKeys = []Key{KeyEnter, KeyEscape, KeyTab, KeyBTab, KeySpace, KeyBackspace,
	KeyUp, KeyDown, KeyLeft, KeyRight, KeyCtrlC, KeyY, KeyN,
	Key0, Key1, Key2, Key3, Key4, Key5, Key6, Key7, Key8, Key9}

var keyAliases = map[string]Key{
	"esc": KeyEscape, "return": KeyEnter, "shift-tab": KeyBTab, "shift+tab": KeyBTab,
	"backspace": KeyBackspace, "ctrl-c": KeyCtrlC, "ctrl+c": KeyCtrlC, "^c": KeyCtrlC,
}

// AllowedKeys lists every key SendKeys accepts, in a stable order (for help
// texts and enums in tool schemas).
func AllowedKeys() []Key { return append([]Key(nil), allowedKeys...) }

// Valid reports whether k is one of the allowed keys.
func (k Key) Valid() bool {
	for _, a := range allowedKeys {
		if k == a {
			return true
		}
	}
	return false
}

// ParseKey maps a user's key name onto an allowed Key, ignoring case for
// names longer than one character ("enter", "ESC", "ctrl+c", "C-c", "7").
func ParseKey(s string) (Key, error) {
	if len(s) > 1 {
		l := strings.ToLower(s)
		if k, ok := keyAliases[l]; ok {
			return k, nil
		}
		for _, k := range allowedKeys {
			if strings.ToLower(string(k)) == l {
				return k, nil
			}
		}
	} else if k := Key(s); k.Valid() {
		return k, nil
	}
	return "", fmt.Errorf("%w: %q (allowed: %s)", ErrInvalidKey, s, keyList())
}

func keyList() string {
	s := make([]string, len(allowedKeys))
	for i, k := range allowedKeys {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// SendKeys presses keys in a pane, in order, to answer a prompt. Every key
// must be one of AllowedKeys. Like SendText it leaves copy mode first,
// refuses dead panes and is serialised with other sends to the pane.
func (c *Client) SendKeys(ctx context.Context, pane string, keys ...Key) error {
	for _, k := range keys {
		if !k.Valid() {
			return &Error{Op: "send keys to", Target: pane, Server: c.Server.String(),
				Msg: fmt.Sprintf("key %q is not allowed (allowed: %s)", string(k), keyList()), Err: ErrInvalidKey}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	unlock, err := c.lockPane(ctx, pane)
	if err != nil {
		return &Error{Op: "send keys to", Target: pane, Server: c.Server.String(), Msg: "waiting for an earlier send: " + err.Error(), Err: err}
	}
	defer unlock()
	if err := c.prepare(ctx, pane, "send keys to"); err != nil {
		return err
	}
	args := []string{"send-keys", "-t", pane}
	for _, k := range keys {
		args = append(args, string(k))
	}
	_, err = c.run(ctx, "send keys to", pane, args...)
	return err
}
