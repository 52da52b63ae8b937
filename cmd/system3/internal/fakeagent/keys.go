package fakeagent

import (
	"bytes"
	"unicode/utf8"
)

type keyKind int

const (
	kRune keyKind = iota
	kEnter
	kBackspace
	kTab
	kEsc
	kUp
	kDown
	kCtrlC
	kCtrlD
	kCtrlU
	kPaste
)

// String names the key kind, for Options.Inputs.
func (k keyKind) String() string {
	names := [...]string{kRune: "rune", kEnter: "enter", kBackspace: "backspace", kTab: "tab", kEsc: "escape",
		kUp: "up", kDown: "down", kCtrlC: "ctrl-c", kCtrlD: "ctrl-d", kCtrlU: "ctrl-u", kPaste: "paste"}
	if int(k) < len(names) {
		return names[k]
	}
	return "key"
}

type key struct {
	kind keyKind
	r    rune
	text string // kPaste
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// keyParser turns what a terminal in raw mode sends into keys. It keeps
// state between reads: a bracketed paste, or an escape sequence, may be
// split across them.
type keyParser struct {
	pending []byte
	pasting bool
	paste   []byte
}

func (p *keyParser) parse(b []byte) []key {
	data := append(p.pending, b...)
	p.pending = nil
	var keys []key
	for len(data) > 0 {
		if p.pasting {
			i := bytes.Index(data, pasteEnd)
			if i < 0 {
				// Keep a tail that may be the start of the end marker.
				keep := min(len(data), len(pasteEnd)-1)
				p.paste = append(p.paste, data[:len(data)-keep]...)
				p.pending = append(p.pending, data[len(data)-keep:]...)
				return keys
			}
			p.paste = append(p.paste, data[:i]...)
			keys = append(keys, key{kind: kPaste, text: string(bytes.ToValidUTF8(p.paste, []byte("\uFFFD")))})
			p.pasting, p.paste = false, nil
			data = data[i+len(pasteEnd):]
			continue
		}
		c := data[0]
		switch {
		case c == 0x1b:
			n, k, ok := escape(data)
			if n == 0 { // incomplete sequence: wait for the rest
				p.pending = append(p.pending, data...)
				return keys
			}
			if bytes.HasPrefix(data, pasteStart) {
				p.pasting = true
			} else if ok {
				keys = append(keys, k)
			}
			data = data[n:]
			continue
		case c == '\r' || c == '\n':
			keys = append(keys, key{kind: kEnter})
		case c == 0x7f || c == 0x08:
			keys = append(keys, key{kind: kBackspace})
		case c == '\t':
			keys = append(keys, key{kind: kTab})
		case c == 0x03:
			keys = append(keys, key{kind: kCtrlC})
		case c == 0x04:
			keys = append(keys, key{kind: kCtrlD})
		case c == 0x15:
			keys = append(keys, key{kind: kCtrlU})
		case c < 0x20:
			// other control keys do nothing
		default:
			r, size := utf8.DecodeRune(data)
			if r == utf8.RuneError && size <= 1 {
				if !utf8.FullRune(data) {
					p.pending = append(p.pending, data...)
					return keys
				}
				data = data[1:]
				continue
			}
			keys = append(keys, key{kind: kRune, r: r})
			data = data[size:]
			continue
		}
		data = data[1:]
	}
	return keys
}

// escape reads an escape sequence at the start of data and returns its
// length (0: incomplete) and the key it stands for (ok false: a key the
// agent ignores). A lone ESC at the end of a read is the Escape key: a
// terminal sends a whole sequence in one write.
func escape(data []byte) (int, key, bool) {
	if len(data) == 1 {
		return 1, key{kind: kEsc}, true
	}
	switch data[1] {
	case '[':
		j := 2
		for j < len(data) && (data[j] < 0x40 || data[j] > 0x7e) {
			j++
		}
		if j == len(data) {
			return 0, key{}, false
		}
		switch string(data[2 : j+1]) {
		case "A":
			return j + 1, key{kind: kUp}, true
		case "B":
			return j + 1, key{kind: kDown}, true
		}
		return j + 1, key{}, false
	case 'O':
		if len(data) < 3 {
			return 0, key{}, false
		}
		switch data[2] {
		case 'A':
			return 3, key{kind: kUp}, true
		case 'B':
			return 3, key{kind: kDown}, true
		}
		return 3, key{}, false
	case 0x1b:
		return 1, key{kind: kEsc}, true
	}
	// Alt+key: ignored.
	_, size := utf8.DecodeRune(data[1:])
	return 1 + size, key{}, false
}
