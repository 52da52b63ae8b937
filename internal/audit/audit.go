// Package audit keeps the audit log: one JSON line for every text or key
// system3 sends into a pane and every MCP tool call, whoever asked (the
// dashboard, the CLI or an MCP client), in audit.jsonl in the state dir.
//
// Several processes may append to the same file (the dashboard and a
// `system3 inject`); each entry is written with one write on a file opened
// O_APPEND, so lines never interleave. A Log keeps its file open between
// entries and opens it again when the file at its path is another one
// (rotated or removed by another process). A failing write (full disk,
// read-only dir) is reported to the caller and by Health; the service
// refuses an action whose entry cannot be written (see monitor's actions).
//
// An action that types into a pane is written twice: an "attempt" entry
// before anything is sent, holding the exact text, and a "result" entry
// with the same ID once tmux answered. Read folds the two into one entry;
// an attempt without a result is an action whose outcome was never learnt
// (a crash mid-send). A refused action is one "refused" entry saying why.
// Text is kept byte for byte: a text that is not valid UTF-8 (only ever in
// a refused entry) is stored base64-encoded in text_base64.
package audit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/statedir"
	"github.com/system3-dev/system3/tmux"

	"github.com/system3-dev/system3/internal/api"
)

// File is the log's name in the state dir.
const File = "audit.jsonl"

// MaxText caps the text kept per entry: the most a send may type
// (tmux.MaxText), so a text that was sent is always kept whole. Only a
// longer text, refused, is cut, and its entry says how many bytes were
// dropped.
const MaxText = tmux.MaxText

// The phases of an action's entries.
const (
	PhaseAttempt = "attempt" // written before sending; the text as it goes to tmux
	PhaseResult  = "result"  // written after; delivered, verified, error
	PhaseRefused = "refused" // nothing was sent; error says why
)

// rotateAt is the size past which the log is renamed to audit.jsonl.1
// (replacing the previous one) and a new file is started.
const rotateAt = 32 << 20

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
func (l *Log) Write(e api.AuditEntry) error {
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
	// encoding/json would turn invalid UTF-8 into U+FFFD: keep the bytes.
	if !utf8.ValidString(e.Text) {
		e.TextBase64, e.Text = base64.StdEncoding.EncodeToString([]byte(e.Text)), ""
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
		return l.failLocked(fmt.Errorf("audit log: %w (fix the state dir: actions that type into panes are refused until the audit log can be written)", err))
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
		return l.failLocked(fmt.Errorf("audit log: write %s: %w (free space or fix permissions: actions that type into panes are refused until the audit log can be written)", l.path, err))
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
	f, err := statedir.OpenAppend(l.path)
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
// parse (a torn write), for `system3 audit` and tests. An action's result
// entry is folded into its attempt entry (which then has Phase "result"),
// and base64 text is decoded into Text.
func Read(path string) ([]api.AuditEntry, error) {
	raw, err := ReadRaw(path)
	if err != nil {
		return nil, err
	}
	out := make([]api.AuditEntry, 0, len(raw))
	attempts := map[string]int{}
	for _, e := range raw {
		if e.Phase == PhaseResult && e.ID != "" {
			if i, ok := attempts[e.ID]; ok {
				a := &out[i]
				a.Phase, a.Sent, a.Checked, a.Error = PhaseResult, e.Sent, e.Checked, e.Error
				if e.Result != "" {
					a.Result = e.Result
				}
				delete(attempts, e.ID)
				continue
			}
		}
		if e.Phase == PhaseAttempt && e.ID != "" {
			attempts[e.ID] = len(out)
		}
		out = append(out, e)
	}
	return out, nil
}

// ReadRaw returns the entries in the file at path as written, one per
// line, with base64 text decoded into Text.
func ReadRaw(path string) ([]api.AuditEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []api.AuditEntry
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		var e api.AuditEntry
		if json.Unmarshal(data[:i], &e) == nil {
			if e.TextBase64 != "" {
				if b, err := base64.StdEncoding.DecodeString(e.TextBase64); err == nil {
					e.Text = string(b)
				}
			}
			out = append(out, e)
		}
		if i < len(data) {
			i++
		}
		data = data[i:]
	}
	return out, nil
}
