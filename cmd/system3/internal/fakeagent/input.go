package fakeagent

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

type eventKind int

const (
	evTimeout   eventKind = iota
	evSubmit              // a prompt was submitted (text)
	evInterrupt           // Escape or Ctrl-C while working
	evChoice              // a dialog option was chosen (choice; -1 cancelled)
	evAnswer              // free text typed into a question (text)
	evExit                // Ctrl-C twice at an empty prompt
)

type event struct {
	kind   eventKind
	text   string
	choice int
}

// wait redraws, then waits up to d (forever when d <= 0) for the first
// event the current mode produces, animating the spinner meanwhile.
func (a *agent) wait(ctx context.Context, d time.Duration) (event, error) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if a.m.mode == modeWorking || a.m.mode == modeRetrying {
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		tick = t.C
	}
	a.draw()
	for {
		// A footer note ("Press Ctrl-C again to exit") goes away by itself.
		var noteGone <-chan time.Time
		if a.m.footerNote != "" {
			left := a.m.footerUntil.Sub(a.now())
			if left <= 0 {
				a.m.footerNote = ""
				a.draw()
			} else {
				noteGone = time.After(left)
			}
		}
		select {
		case <-ctx.Done():
			return event{}, ctx.Err()
		case <-timeout:
			return event{kind: evTimeout}, nil
		case <-tick:
			a.m.spin.frame++
			if a.m.mode == modeWorking {
				a.m.spin.tokens += 3 + a.rng.IntN(14)
			}
		case <-noteGone:
		case <-a.opt.Resized:
			a.resize()
		case b, ok := <-a.keys:
			if !ok {
				a.keys = nil // no more input; the script plays on
				continue
			}
			for _, k := range a.keysP.parse(b) {
				if ev, ok := a.key(k); ok {
					a.draw()
					return ev, nil
				}
			}
		}
		a.draw()
	}
}

// key applies one key to the current mode and reports an event it causes.
func (a *agent) key(k key) (event, bool) {
	mode := a.m.mode
	ev, ok := a.applyKey(k)
	if a.opt.Inputs != nil {
		line := mode.String() + " " + k.kind.String()
		if k.kind == kPaste {
			line += " " + strconv.Itoa(len(k.text))
		}
		if ok && ev.kind == evSubmit {
			line += "\n" + mode.String() + " submit " + strconv.Itoa(len(ev.text))
		}
		io.WriteString(a.opt.Inputs, line+"\n")
	}
	return ev, ok
}

func (a *agent) applyKey(k key) (event, bool) {
	m := &a.m
	switch m.mode {
	case modePermission:
		return a.dialogKey(k, false)
	case modeQuestion:
		return a.dialogKey(k, true)
	case modeGone:
		return event{}, false
	}
	working := m.mode == modeWorking || m.mode == modeRetrying
	switch k.kind {
	case kRune:
		m.input = append(m.input, k.r)
	case kPaste:
		text := strings.ReplaceAll(k.text, "\r\n", "\n")
		text = strings.ReplaceAll(text, "\r", "\n")
		if n := strings.Count(text, "\n"); n > 0 || utf8.RuneCountInString(text) > 800 {
			m.pastes++
			m.input = append(m.input, []rune(fmt.Sprintf("[Pasted text #%d +%d lines]", m.pastes, n))...)
			m.pasted = append(m.pasted, pasted{marker: fmt.Sprintf("[Pasted text #%d +%d lines]", m.pastes, n), text: text})
		} else {
			m.input = append(m.input, []rune(text)...)
		}
	case kBackspace:
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case kCtrlU:
		m.input = nil
	case kEnter:
		text := strings.TrimSpace(string(m.input))
		if text == "" {
			return event{}, false
		}
		for _, p := range m.pasted {
			text = strings.Replace(text, p.marker, p.text, 1)
		}
		m.input, m.pasted = nil, nil
		return event{kind: evSubmit, text: text}, true
	case kEsc:
		if working {
			return event{kind: evInterrupt}, true
		}
		m.input, m.pasted = nil, nil
	case kCtrlC, kCtrlD:
		switch {
		case working:
			return event{kind: evInterrupt}, true
		case len(m.input) > 0:
			m.input, m.pasted = nil, nil
		case m.footerNote != "" && a.now().Before(m.footerUntil):
			return event{kind: evExit}, true
		default:
			name := "Ctrl-C"
			if k.kind == kCtrlD {
				name = "Ctrl-D"
			}
			m.footerNote, m.footerUntil = "Press "+name+" again to exit", a.now().Add(2*time.Second)
		}
	}
	return event{}, false
}

// dialogKey handles keys in a permission dialog or a question: a digit
// picks an option at once, arrows move, Enter picks the highlighted one,
// Escape cancels.
func (a *agent) dialogKey(k key, question bool) (event, bool) {
	d := a.m.dialog
	n := len(d.options)
	typeOpt := n - 2 // "Type something." in questions
	if d.typing {
		switch k.kind {
		case kRune:
			d.typed = append(d.typed, k.r)
		case kPaste:
			d.typed = append(d.typed, []rune(strings.ReplaceAll(k.text, "\n", " "))...)
		case kBackspace:
			if len(d.typed) > 0 {
				d.typed = d.typed[:len(d.typed)-1]
			}
		case kEnter:
			if t := strings.TrimSpace(string(d.typed)); t != "" {
				return event{kind: evAnswer, text: t}, true
			}
		case kEsc, kCtrlC:
			d.typing, d.typed = false, nil
		case kUp, kDown:
			d.typing, d.typed = false, nil
			return a.dialogKey(k, question)
		}
		return event{}, false
	}
	pick := func(i int) (event, bool) {
		if question && i == typeOpt {
			d.cursor, d.typing = i, true
			return event{}, false
		}
		return event{kind: evChoice, choice: i}, true
	}
	switch k.kind {
	case kRune:
		if k.r >= '1' && k.r <= '9' && int(k.r-'1') < n {
			return pick(int(k.r - '1'))
		}
	case kUp:
		d.cursor = (d.cursor + n - 1) % n
	case kDown, kTab:
		d.cursor = (d.cursor + 1) % n
	case kEnter:
		return pick(d.cursor)
	case kEsc, kCtrlC:
		return event{kind: evChoice, choice: -1}, true
	}
	return event{}, false
}
