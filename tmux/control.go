package tmux

import (
	"strconv"
	"strings"
)

// ctlBlock is one %begin ... %end/%error reply.
type ctlBlock struct {
	Time   int64
	Number uint64
	// Flags is 1 when the command was written by this control client and 0
	// when tmux ran it on the client's behalf (the attach command, hooks).
	Flags int
	Lines []string
	Err   bool // ended with %error
}

// ctlParser turns control-mode output, one line at a time, into reply
// blocks and notification events. It keeps only the lines of the block in
// progress.
type ctlParser struct {
	// decode makes %output events carry their decoded bytes; without it
	// the payload is skipped, which is all a "pane changed" consumer needs.
	decode bool

	inBlock bool
	block   ctlBlock
}

// feed takes one line without its trailing newline. It returns a finished
// block, or an event for a known notification, or neither (a line inside a
// block, an unknown notification, or noise).
func (p *ctlParser) feed(line string) (*ctlBlock, *Event) {
	if p.inBlock {
		if guard, _, n, _, ok := parseGuard(line); ok && (guard == "%end" || guard == "%error") && n == p.block.Number {
			b := p.block
			b.Err = guard == "%error"
			p.inBlock = false
			p.block = ctlBlock{}
			return &b, nil
		}
		// Pane text can look like anything, including notifications: inside
		// a block only the matching guard ends it (tmux never interleaves
		// notifications with a block).
		p.block.Lines = append(p.block.Lines, line)
		return nil, nil
	}
	if strings.HasPrefix(line, "%begin ") {
		if _, t, n, f, ok := parseGuard(line); ok {
			p.inBlock = true
			p.block = ctlBlock{Time: t, Number: n, Flags: f}
		}
		return nil, nil
	}
	if ev, ok := parseNotification(line, p.decode); ok {
		return nil, &ev
	}
	return nil, nil
}

// parseGuard parses "%begin|%end|%error TIME NUMBER FLAGS".
func parseGuard(line string) (guard string, t int64, n uint64, flags int, ok bool) {
	f := strings.Split(line, " ")
	if len(f) != 4 {
		return "", 0, 0, 0, false
	}
	switch f[0] {
	case "%begin", "%end", "%error":
	default:
		return "", 0, 0, 0, false
	}
	var err1, err2, err3 error
	t, err1 = strconv.ParseInt(f[1], 10, 64)
	n, err2 = strconv.ParseUint(f[2], 10, 64)
	flags, err3 = strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || err3 != nil {
		return "", 0, 0, 0, false
	}
	return f[0], t, n, flags, true
}

// parseNotification maps a %notification line onto an Event. Unknown
// notifications (tmux adds new ones) return ok == false and are ignored.
func parseNotification(line string, decode bool) (Event, bool) {
	if !strings.HasPrefix(line, "%") {
		return Event{}, false
	}
	name, rest, _ := strings.Cut(line, " ")
	first, after, _ := strings.Cut(rest, " ")
	switch name {
	case "%output":
		if !strings.HasPrefix(first, "%") {
			return Event{}, false
		}
		ev := Event{Kind: EventOutput, PaneID: first}
		if decode {
			ev.Data = decodeOutput(after)
		}
		return ev, true
	case "%extended-output":
		// %extended-output PANE AGE ... : VALUE
		if !strings.HasPrefix(first, "%") {
			return Event{}, false
		}
		ev := Event{Kind: EventOutput, PaneID: first}
		if decode {
			s := after
			for {
				tok, r, found := strings.Cut(s, " ")
				if tok == ":" {
					ev.Data = decodeOutput(r)
					break
				}
				if !found {
					break
				}
				s = r
			}
		}
		return ev, true
	case "%window-add":
		return Event{Kind: EventWindowAdd, WindowID: first}, first != ""
	case "%window-close":
		return Event{Kind: EventWindowClose, WindowID: first}, first != ""
	case "%window-renamed":
		return Event{Kind: EventWindowRenamed, WindowID: first, Name: after}, first != ""
	case "%unlinked-window-add":
		return Event{Kind: EventUnlinkedWindowAdd, WindowID: first}, first != ""
	case "%unlinked-window-close":
		return Event{Kind: EventUnlinkedWindowClose, WindowID: first}, first != ""
	case "%session-changed":
		return Event{Kind: EventSessionChanged, SessionID: first, Name: after}, first != ""
	case "%sessions-changed":
		return Event{Kind: EventSessionsChanged}, true
	case "%session-renamed":
		// The manual says "%session-renamed NAME"; tmux 3.3 sends
		// "%session-renamed $ID NAME".
		if isID(first, '$') && after != "" {
			return Event{Kind: EventSessionRenamed, SessionID: first, Name: after}, true
		}
		return Event{Kind: EventSessionRenamed, Name: rest}, true
	case "%pane-mode-changed":
		return Event{Kind: EventPaneModeChanged, PaneID: first}, first != ""
	case "%layout-change":
		layout, _, _ := strings.Cut(after, " ")
		return Event{Kind: EventLayoutChange, WindowID: first, Layout: layout}, first != ""
	case "%exit":
		return Event{Kind: EventExit, Reason: rest}, true
	}
	return Event{}, false
}

// isID reports whether s is a tmux id such as "$3" with the given sigil.
func isID(s string, sigil byte) bool {
	if len(s) < 2 || s[0] != sigil {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decodeOutput undoes %output escaping: tmux writes bytes below 0x20 and
// the backslash as \ooo octal and everything else raw. A backslash not
// followed by three octal digits is kept as is.
func decodeOutput(s string) []byte {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3' {
			b = append(b, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
			continue
		}
		b = append(b, c)
	}
	return b
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
