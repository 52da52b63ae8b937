package tmux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Captured is one pane's result from CaptureMany.
type Captured struct {
	Pane   string
	Screen string
	Err    error
}

// CaptureMany captures several panes with one tmux client, as Capture
// does each: a client costs the tmux server a connection to accept and
// identify (and a forked one several milliseconds of CPU more), the
// capture itself a fraction of that.
//
// The panes are captured in one command list, each preceded by a
// display-message of a numbered random marker, so the output splits
// exactly whatever the screens show. tmux stops a command list at the first
// command that fails: that pane (the first whose output did not complete)
// gets the error, and the panes after it are captured by another client.
// Results are in the order of panes.
func (c *Client) CaptureMany(ctx context.Context, panes []string, opt CaptureOptions) []Captured {
	out := make([]Captured, len(panes))
	for i, p := range panes {
		out[i].Pane = p
	}
	if c.Control != nil {
		for i, p := range panes {
			out[i].Screen, out[i].Err = c.Capture(ctx, p, opt)
		}
		return out
	}
	for done := 0; done < len(panes); {
		n, err := c.captureBatch(ctx, panes[done:], opt, out[done:])
		done += n
		if err == nil {
			continue
		}
		if done < len(panes) {
			out[done].Err = err
			done++
		}
		if ctx.Err() != nil || errors.Is(err, ErrNoServer) || errors.Is(err, ErrNoTmux) || errors.Is(err, ErrTooOld) {
			// Nothing after this can succeed either.
			for ; done < len(panes); done++ {
				out[done].Err = err
			}
		}
	}
	return out
}

// captureBatch captures panes in one client, fills res for those it got,
// and returns how many it got and the error that stopped it.
func (c *Client) captureBatch(ctx context.Context, panes []string, opt CaptureOptions, res []Captured) (int, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return 0, err
	}
	tag := "system3-capture-" + hex.EncodeToString(nonce[:]) + "-"
	marker := func(i int) string { return tag + fmt.Sprint(i) }
	var args []string
	for i, p := range panes {
		if i > 0 {
			args = append(args, ";")
		}
		args = append(args, "display-message", "-p", marker(i), ";")
		args = append(args, captureArgs(p, opt)...)
	}
	// The last marker closes the last capture.
	args = append(args, ";", "display-message", "-p", marker(len(panes)))
	raw, err := c.Server.run(ctx, "capture", strings.Join(panes, ","), nil, args...)
	got := 0
	rest := raw
	if !bytes.HasPrefix(rest, []byte(marker(0)+"\n")) {
		return 0, batchErr(err)
	}
	rest = rest[len(marker(0))+1:]
	for i := range panes {
		end := []byte(marker(i+1) + "\n")
		at := bytes.Index(rest, end)
		if at < 0 || (at > 0 && rest[at-1] != '\n') {
			break
		}
		res[i].Screen = finishCapture(string(rest[:at]), opt)
		rest = rest[at+len(end):]
		got++
	}
	if got == len(panes) {
		return got, nil
	}
	return got, batchErr(err)
}

// batchErr is the error of a command list that stopped early; tmux said
// why on stderr, or the output was cut short.
func batchErr(err error) error {
	if err != nil {
		return err
	}
	return &Error{Op: "capture", Msg: "tmux's output ended early", Err: errors.New("short output")}
}

func captureArgs(pane string, opt CaptureOptions) []string {
	args := []string{"capture-pane", "-p", "-J", "-t", pane}
	if opt.Escapes {
		args = append(args, "-e")
	}
	switch {
	case opt.History < 0:
		args = append(args, "-S", "-")
	case opt.History > 0:
		args = append(args, "-S", fmt.Sprint(-opt.History))
	}
	return args
}

func finishCapture(out string, opt CaptureOptions) string {
	s := expandTabs(strings.TrimSuffix(out, "\n"))
	if opt.KeepTrailing {
		return s
	}
	return trimCapture(s)
}

// tabWidth is tmux's default distance between tab stops.
const tabWidth = 8

// tabCond measures cells as tmux does: wcwidth(), no East Asian ambiguity.
var tabCond = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// expandTabs turns each tab into the spaces up to the next tab stop, as
// every capture read before tmux 3.6, which keeps a tab in the screen and
// gives it back to capture-pane: the same screen then reads the same on
// every version, for rules and for the cursor's column. Stops are taken to
// be every 8 cells from each line's start (tmux's default; a program that
// sets its own stops is rare) and escape sequences (-e) take no cells.
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 64)
	col := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			col = 0
		case c == '\t':
			n := tabWidth - col%tabWidth
			b.WriteString("        "[:n])
			col += n
			i++
			continue
		case c == 0x1b:
			// An SGR or OSC sequence from capture-pane -e: copy it whole.
			j := escapeEnd(s, i)
			b.WriteString(s[i:j])
			i = j
			continue
		case c < utf8.RuneSelf:
			col++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			col += tabCond.RuneWidth(r)
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// escapeEnd returns the index just past the escape sequence at s[i]: a CSI
// ends at its final byte, an OSC at BEL or ST; anything else is ESC and
// one byte.
func escapeEnd(s string, i int) int {
	if i+1 >= len(s) {
		return len(s)
	}
	switch s[i+1] {
	case '[':
		for j := i + 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1
			}
		}
		return len(s)
	case ']':
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	return i + 2
}
