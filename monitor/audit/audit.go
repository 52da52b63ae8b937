// Package audit keeps the audit log: one JSON line for every text or key
// system3 sends into a pane and every MCP tool call, whoever asked (the
// dashboard, the CLI or an MCP client), in audit.jsonl in the state dir.
//
// Several processes may append to the same file (the dashboard and a
// `system3 inject`); each entry is written with one write on a file opened
// O_APPEND, so lines never interleave. A failing write (full disk, read-only
// dir) is reported to the caller and by Health, and never stops an action.
package audit

import (
	"encoding/json"
	"errors"
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
}

// Log appends entries to the audit file. The zero value is not usable; a
// nil *Log drops every entry (for tests and tools that audit nothing).
type Log struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	lastErr error
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
	l.rotateLocked()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return l.failLocked(fmt.Errorf("audit log: %w (fix the state dir; actions still run but are not audited)", err))
	}
	// A line torn by a crash must not swallow this one: start on a new line.
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	_, werr := f.Write(line)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return l.failLocked(fmt.Errorf("audit log: write %s: %w (free space or fix permissions; actions still run but are not audited)", l.path, err))
	}
	l.lastErr = nil
	return nil
}

func (l *Log) rotateLocked() {
	fi, err := os.Stat(l.path)
	if err != nil || fi.Size() < rotateAt {
		return
	}
	// Another process may rotate at the same moment; losing that race
	// only means one of us renames the fresh file, which stays readable.
	_ = os.Rename(l.path, l.path+".1")
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
