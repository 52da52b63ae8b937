// Package audit keeps the audit log: one JSON line for every text or key
// system3 sends into a pane and every MCP tool call, whoever asked (the
// dashboard, the CLI or an MCP client), in audit.jsonl in the state dir.
//
// Several processes may append to the same file (the dashboard and a
// `system3 inject`); each entry is written with one write on a file opened
// O_APPEND, so lines never interleave. A Log keeps its file open between
// entries and opens it again when the file at its path is another one
// (rotated or removed by another process). A failing write (full disk,
// read-only dir) is reported to the caller and by Health, and never stops
// an action.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"
)

// File is the log's name in the state dir.
const File = "audit.jsonl"

// MaxText caps the text kept per entry; longer text is cut and the entry
// says how many bytes were dropped.
const MaxText = 16 << 10

// rotateAt is the size past which the log is renamed to audit.jsonl.1
// (replacing the previous one) and a new file is started.
const rotateAt = 32 << 20

// Entry is one audited action.
type Entry struct {
	Time   time.Time `json:"time"`
	Origin string    `json:"origin"` // "tui", "cli", "mcp:<client name>"
	// Action: inject, keys, answer, interrupt, tool_call.
	Action string `json:"action"`
	// Target is what the caller named (a session or pane); Pane the pane it
	// resolved to.
	Target  string   `json:"target,omitempty"`
	Pane    string   `json:"pane,omitempty"`
	Text    string   `json:"text,omitempty"`
	Cut     int      `json:"text_cut_bytes,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Tool    string   `json:"tool,omitempty"`
	Args    string   `json:"args,omitempty"`
	Result  string   `json:"result,omitempty"`
	Sent    bool     `json:"delivered"`
	Checked bool     `json:"verified"`
	Error   string   `json:"error,omitempty"`

	// MCPSession is the MCP session a tool call came in on ("stdio" for
	// system3 mcp, the Mcp-Session-Id over HTTP).
	MCPSession string `json:"mcp_session,omitempty"`
}

// Log appends entries to the audit file. The zero value is not usable; a
// nil *Log drops every entry (for tests and tools that audit nothing).
type Log struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	lastErr error
	f       *os.File    // open on path, or nil
	fi      os.FileInfo // f's identity, to notice a rotation
	end     int64       // f's size after this log's last line
}

// Open returns the log in dir. The file is created on the first entry,
// 0600, since it holds what was typed into terminals.
func Open(dir string) *Log {
	return &Log{path: filepath.Join(dir, File), now: time.Now}
}

// Path is the log file.
func (l *Log) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Write appends e, filling its time when zero. An error says what failed;
// the action it records has happened regardless.
func (l *Log) Write(e Entry) error {
	if l == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = e.Time.UTC()
	if len(e.Text) > MaxText {
		cut := MaxText
		for cut > 0 && !utf8.RuneStart(e.Text[cut]) {
			cut--
		}
		e.Cut = len(e.Text) - cut
		e.Text = e.Text[:cut]
	}
	line, err := json.Marshal(e)
	if err != nil {
		return l.fail(fmt.Errorf("audit: encode entry: %w", err))
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	size, err := l.openLocked()
	if err != nil {
		return l.failLocked(fmt.Errorf("audit log: %w (fix the state dir; actions still run but are not audited)", err))
	}
	// A line torn by a crash must not swallow this one: start on a new
	// line. The last byte is this log's own newline when nothing was
	// appended since.
	if size > 0 && size != l.end {
		last := make([]byte, 1)
		if _, err := l.f.ReadAt(last, size-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := l.f.Write(line); err != nil {
		l.closeLocked()
		return l.failLocked(fmt.Errorf("audit log: write %s: %w (free space or fix permissions; actions still run but are not audited)", l.path, err))
	}
	l.end = size + int64(len(line))
	l.lastErr = nil
	return nil
}

// openLocked makes l.f the file at l.path, rotating it first when it is
// too large, and returns its size.
func (l *Log) openLocked() (int64, error) {
	fi, err := os.Stat(l.path)
	if err == nil && fi.Size() >= rotateAt {
		// Another process may rotate at the same moment; losing that race
		// only means one of us renames the fresh file, which stays readable.
		_ = os.Rename(l.path, l.path+".1")
		fi, err = os.Stat(l.path)
	}
	if err == nil && l.f != nil && os.SameFile(fi, l.fi) {
		return fi.Size(), nil
	}
	l.closeLocked()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return 0, err
	}
	l.f, l.fi, l.end = f, fi, -1
	return fi.Size(), nil
}

func (l *Log) closeLocked() {
	if l.f != nil {
		l.f.Close()
		l.f, l.fi = nil, nil
	}
}

// Close closes the file; a later Write opens it again.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLocked()
	return nil
}

func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failLocked(err)
}

func (l *Log) failLocked(err error) error {
	l.lastErr = err
	return err
}

// Health returns the last write's error, nil once a write succeeds again.
func (l *Log) Health() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// Read returns the entries in the file at path, skipping lines that do not
// parse (a torn write), for `system3 audit` and tests.
func Read(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		var e Entry
		if json.Unmarshal(data[:i], &e) == nil {
			out = append(out, e)
		}
		if i < len(data) {
			i++
		}
		data = data[i:]
	}
	return out, nil
}
