package tmux

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pane is one tmux pane as list-panes reports it.
type Pane struct {
	ID           string // "%3": unique on the server for its lifetime
	SessionID    string // "$1"
	SessionName  string
	WindowID     string // "@2"
	WindowIndex  int
	WindowName   string
	WindowActive bool // the window is its session's current window
	Index        int  // pane index within the window
	Active       bool // the window's active pane
	PID          int
	TTY          string
	Command      string // pane_current_command: the foreground process name
	Path         string // pane_current_path
	Title        string
	Dead         bool // the process exited and remain-on-exit kept the pane
	// DeadStatus is the exit status when Dead, or -1 while tmux reports
	// none: it learns the status when it reaps the process, which can lag
	// Dead, and it may never learn it for a command that exits at once.
	// 0 when not Dead.
	DeadStatus  int
	Width       int
	Height      int
	CursorX     int
	CursorY     int
	InMode      bool   // in copy mode, view mode or another mode that swallows keys
	Mode        string // "copy-mode", "view-mode"... empty when not in a mode
	AlternateOn bool   // the alternate screen is active (full-screen apps)
	Activity    time.Time
	HistorySize int // lines of scrollback above the visible screen
	ServerPID   int // the tmux server's pid: a new one means the server was restarted
}

// Session is one tmux session.
type Session struct {
	ID       string // "$1"
	Name     string
	Windows  int
	Attached int // number of attached clients, system3's control clients included
	Created  time.Time
}

// field is one tmux format variable in a record. String fields are written
// as "<byte length>:<value>" because some values (pane_current_path,
// pane_current_command) are not sanitized by tmux and may contain any byte,
// including the separators and newlines.
type field struct {
	name string
	str  bool
}

// recordSep separates fields; records end with '\n'. It is printable
// ASCII, so every tmux version prints it verbatim (3.4 and later print a
// control byte such as \x1f in command output as the four characters
// "\037"). Only non-string fields (numbers, ids, flags) are delimited by it,
// so a value containing it cannot forge a field; it is three bytes so that a
// value torn by a concurrent change is caught (see parseRecords).
const recordSep = "|~|"

// escapeBackslashes doubles every backslash in a string value, using the
// s/// format modifier (tmux 2.9 and later). tmux 3.4 and later print command
// output through vis(3) with VIS_OCTAL|VIS_CSTYLE|VIS_NOSLASH: a control byte
// or a byte that is not valid UTF-8 becomes "\ooo" or "\n"-style, while a
// backslash stays a single backslash, so "\037" in a path would read the
// same as the byte 0x1f. With backslashes doubled by the format, the output
// of every version is unambiguous, and one decoder (readValue) reads both:
// 3.2 and 3.3 print other bytes raw, 3.4 and later escape them.
// In the format, the pattern \\ is the regular expression for one
// backslash, and in the replacement each \\ is one literal backslash.
const escapeBackslashes = `s/\\/\\\\/:`

var paneFields = []field{
	{"pane_id", false},
	{"session_id", false},
	{"session_name", true},
	{"window_id", false},
	{"window_index", false},
	{"window_name", true},
	{"window_active", false},
	{"pane_index", false},
	{"pane_active", false},
	{"pane_pid", false},
	{"pane_tty", true},
	{"pane_current_command", true},
	{"pane_current_path", true},
	{"pane_title", true},
	{"pane_dead", false},
	{"pane_dead_status", false},
	{"pane_width", false},
	{"pane_height", false},
	{"cursor_x", false},
	{"cursor_y", false},
	{"pane_in_mode", false},
	{"pane_mode", true},
	{"alternate_on", false},
	{"window_activity", false},
	{"history_size", false},
	{"pid", false},
}

var sessionFields = []field{
	{"session_id", false},
	{"session_name", true},
	{"session_windows", false},
	{"session_attached", false},
	{"session_created", false},
}

var (
	paneFormat    = recordFormat(paneFields)
	sessionFormat = recordFormat(sessionFields)
)

func recordFormat(fields []field) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString(recordSep)
		}
		if f.str {
			// The length is of the value itself, before any escaping.
			fmt.Fprintf(&b, "#{n:%s}:#{%s%s}", f.name, escapeBackslashes, f.name)
		} else {
			fmt.Fprintf(&b, "#{%s}", f.name)
		}
	}
	return b.String()
}

// readValue decodes one string value of n bytes starting at out[pos] and
// returns it with the position after it. "\\" is a backslash (doubled by
// the format); on tmux 3.4 and later "\ooo" and the C escapes \a \b \t \n
// \v \f \r \s \0 are one byte each; any other byte stands for itself.
func readValue(out []byte, pos, n int) (string, int, error) {
	v := make([]byte, 0, n)
	for len(v) < n {
		if pos >= len(out) {
			return "", pos, fmt.Errorf("value of %d bytes past end of output", n)
		}
		c := out[pos]
		if c != '\\' || pos+1 >= len(out) {
			v = append(v, c)
			pos++
			continue
		}
		d := out[pos+1]
		if d >= '0' && d <= '3' && pos+3 < len(out) && isOctal(out[pos+2]) && isOctal(out[pos+3]) {
			v = append(v, (d-'0')<<6|(out[pos+2]-'0')<<3|(out[pos+3]-'0'))
			pos += 4
			continue
		}
		if e, ok := cEscapes[d]; ok {
			v = append(v, e)
			pos += 2
			continue
		}
		// A lone backslash (not produced by the format): keep it.
		v = append(v, c)
		pos++
	}
	return string(v), pos, nil
}

// cEscapes are vis(3)'s VIS_CSTYLE escapes, and the doubled backslash.
var cEscapes = map[byte]byte{
	'\\': '\\', 'a': '\a', 'b': '\b', 't': '\t', 'n': '\n', 'v': '\v', 'f': '\f', 'r': '\r', 's': ' ', '0': 0,
}

// parseRecords splits tmux output made with recordFormat into records of
// raw field values.
func parseRecords(out []byte, fields []field) ([][]string, error) {
	var recs [][]string
	pos := 0
	for pos < len(out) {
		rec := make([]string, len(fields))
		for i, f := range fields {
			last := i == len(fields)-1
			if f.str {
				colon := bytes.IndexByte(out[pos:], ':')
				if colon < 0 || colon > 10 {
					return nil, fmt.Errorf("record %d field %s: missing length", len(recs)+1, f.name)
				}
				n, err := strconv.Atoi(string(out[pos : pos+colon]))
				if err != nil || n < 0 {
					return nil, fmt.Errorf("record %d field %s: bad length %q", len(recs)+1, f.name, out[pos:pos+colon])
				}
				pos += colon + 1
				if n > len(out)-pos {
					return nil, fmt.Errorf("record %d field %s: length %d past end of output", len(recs)+1, f.name, n)
				}
				rec[i], pos, err = readValue(out, pos, n)
				if err != nil {
					return nil, fmt.Errorf("record %d field %s: %w", len(recs)+1, f.name, err)
				}
			} else {
				end := pos
				for end < len(out) && out[end] != '\n' && !bytes.HasPrefix(out[end:], []byte(recordSep)) {
					end++
				}
				rec[i] = string(out[pos:end])
				pos = end
			}
			// What follows each value must be the separator (or the end of
			// the record): this catches a value that changed between tmux
			// expanding its length and expanding it (a process changing
			// directory mid-listing) instead of misreading every later field.
			want := recordSep
			if last {
				want = "\n"
			}
			if pos >= len(out) {
				if last {
					break // tolerate a missing final newline
				}
				return nil, fmt.Errorf("record %d: truncated after %s", len(recs)+1, f.name)
			}
			if !bytes.HasPrefix(out[pos:], []byte(want)) {
				return nil, fmt.Errorf("record %d: unexpected %q after %s", len(recs)+1, out[pos], f.name)
			}
			pos += len(want)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// fieldReader converts raw record values, remembering the first error.
type fieldReader struct {
	rec []string
	i   int
	err error
}

func (r *fieldReader) str() string {
	s := r.rec[r.i]
	r.i++
	return s
}

func (r *fieldReader) int() int {
	s := r.str()
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("field %d: %w", r.i, err)
	}
	return n
}

// optInt is int, or none when the field is empty.
func (r *fieldReader) optInt(none int) int {
	s := r.str()
	if s == "" {
		return none
	}
	n, err := strconv.Atoi(s)
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("field %d: %w", r.i, err)
	}
	return n
}

func (r *fieldReader) bool() bool { return r.int() != 0 }

func (r *fieldReader) time() time.Time {
	n := r.int()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(int64(n), 0)
}

func parsePanes(out []byte) ([]Pane, error) {
	recs, err := parseRecords(out, paneFields)
	if err != nil {
		return nil, err
	}
	panes := make([]Pane, 0, len(recs))
	for _, rec := range recs {
		r := fieldReader{rec: rec}
		p := Pane{
			ID:           r.str(),
			SessionID:    r.str(),
			SessionName:  r.str(),
			WindowID:     r.str(),
			WindowIndex:  r.int(),
			WindowName:   r.str(),
			WindowActive: r.bool(),
			Index:        r.int(),
			Active:       r.bool(),
			PID:          r.int(),
			TTY:          r.str(),
			Command:      r.str(),
			Path:         r.str(),
			Title:        r.str(),
			Dead:         r.bool(),
			DeadStatus:   r.optInt(-1),
			Width:        r.int(),
			Height:       r.int(),
			CursorX:      r.int(),
			CursorY:      r.int(),
			InMode:       r.bool(),
			Mode:         r.str(),
			AlternateOn:  r.bool(),
			Activity:     r.time(),
			HistorySize:  r.int(),
			ServerPID:    r.int(),
		}
		if r.err != nil {
			return nil, fmt.Errorf("pane %q: %w", p.ID, r.err)
		}
		if !p.Dead {
			p.DeadStatus = 0
		}
		if !strings.HasPrefix(p.ID, "%") {
			return nil, fmt.Errorf("pane id %q does not start with %%", p.ID)
		}
		panes = append(panes, p)
	}
	return panes, nil
}

func parseSessions(out []byte) ([]Session, error) {
	recs, err := parseRecords(out, sessionFields)
	if err != nil {
		return nil, err
	}
	sessions := make([]Session, 0, len(recs))
	for _, rec := range recs {
		r := fieldReader{rec: rec}
		s := Session{
			ID:       r.str(),
			Name:     r.str(),
			Windows:  r.int(),
			Attached: r.int(),
			Created:  r.time(),
		}
		if r.err != nil {
			return nil, fmt.Errorf("session %q: %w", s.ID, r.err)
		}
		sessions = append(sessions, s)
	}
	return sessions, nil
}

// PaneSignal is the part of a pane that says whether its screen may have
// changed: what a watcher compares many times a second. A listing of these
// numbers costs the tmux server about a fifth of a full listing
// (pane_current_command and pane_current_path read /proc for every pane,
// and every field is looked up and formatted for every pane).
type PaneSignal struct {
	ID               string
	Activity         int64 // window_activity, in whole seconds
	CursorX, CursorY int
	HistorySize      int
}

// signalFormat lists PaneSignal's fields separated by single spaces: ids
// and numbers never contain one.
const signalFormat = "#{pane_id} #{window_activity} #{cursor_x} #{cursor_y} #{history_size}"

const signalFields = 5

func parseSignals(out []byte) ([]PaneSignal, error) {
	var sigs []PaneSignal
	for line := range bytes.Lines(out) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		var f [signalFields][]byte
		n := 0
		for part := range bytes.SplitSeq(line, []byte(" ")) {
			if n == signalFields {
				n++
				break
			}
			f[n] = part
			n++
		}
		if n != signalFields {
			return nil, fmt.Errorf("record %d: %d fields, want %d", len(sigs)+1, n, signalFields)
		}
		var v [signalFields - 1]int
		for i := range v {
			x, err := strconv.Atoi(string(f[i+1]))
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", len(sigs)+1, err)
			}
			v[i] = x
		}
		s := PaneSignal{ID: string(f[0]), Activity: int64(v[0]), CursorX: v[1], CursorY: v[2], HistorySize: v[3]}
		if !isID(s.ID, '%') {
			return nil, fmt.Errorf("record %d: pane id %q does not start with %%", len(sigs)+1, s.ID)
		}
		sigs = append(sigs, s)
	}
	return sigs, nil
}

// Signal is the PaneSignal part of a full listing.
func (p Pane) Signal() PaneSignal {
	var act int64
	if !p.Activity.IsZero() {
		act = p.Activity.Unix()
	}
	return PaneSignal{ID: p.ID, Activity: act, CursorX: p.CursorX, CursorY: p.CursorY, HistorySize: p.HistorySize}
}
