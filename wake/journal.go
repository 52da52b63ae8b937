package wake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// JournalFile is the name of the journal in the state dir.
const JournalFile = "wakes.jsonl"

// Warning is a journal line that was skipped while reading. Reading goes on:
// a damaged line costs that record, never the journal.
type Warning struct {
	Path    string
	Line    int    // 1-based
	Offset  int64  // byte offset of the line in the file
	Problem string // one sentence
	Text    string // the start of the line, for the curious
}

func (w Warning) String() string {
	return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Problem)
}

// ReadJournal reads a journal without owning it, for `system3 status` while a
// daemon runs. It returns the wakes the owner would serve (oldest first) and
// the lines it skipped. A journal that does not exist yet holds no wakes. The
// owner may be appending meanwhile, so a torn last line is expected and only
// reported.
func ReadJournal(path string) ([]Event, []Warning, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read the wake journal: %w", err)
	}
	defer f.Close()
	ld, err := loadJournal(f, path, defaultKeepAcked)
	if err != nil {
		return nil, ld.warnings, fmt.Errorf("cannot read the wake journal %s: %w", path, err)
	}
	evs := make([]Event, len(ld.st.events))
	for i, ev := range ld.st.events {
		evs[i] = ev.clone()
	}
	return evs, ld.warnings, nil
}

type loaded struct {
	st       *state
	warnings []Warning
	size     int64 // bytes read
	records  int   // lines that held a record
	torn     bool  // the file does not end with a newline
}

// loadJournal replays a journal. Only a read error is an error; bad content
// becomes warnings.
func loadJournal(r io.Reader, path string, keepAcked int) (loaded, error) {
	ld := loaded{st: newState()}
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			off := ld.size
			ld.size += int64(len(b))
			last := b[len(b)-1] != '\n'
			ld.torn = last
			if w, ok := ld.apply(bytes.TrimSpace(b), last); !ok {
				w.Path, w.Line, w.Offset, w.Text = path, line, off, excerpt(b)
				ld.warnings = append(ld.warnings, w)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return ld, err
		}
	}
	ld.st.prune(keepAcked)
	return ld, nil
}

func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 80 {
		b = b[:80]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}

func (ld *loaded) apply(b []byte, last bool) (Warning, bool) {
	if len(b) == 0 {
		return Warning{}, true
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		if last {
			return Warning{Problem: "skipped an incomplete last record (system3 was probably stopped while writing it)"}, false
		}
		return Warning{Problem: fmt.Sprintf("skipped a damaged record (%v)", err)}, false
	}
	ld.records++
	st := ld.st
	switch r.Type {
	case recRaise:
		if r.Event == nil || r.Event.ID == "" || r.Event.Seq == 0 {
			return Warning{Problem: "skipped a raise record without an event id or seq"}, false
		}
		if !st.raise(r.Event) {
			if _, dup := st.byID[r.Event.ID]; !dup {
				return Warning{Problem: fmt.Sprintf("skipped wake %s: its seq %d is not after the previous wake's", r.Event.ID, r.Event.Seq)}, false
			}
		}
	case recAck:
		// Unknown ids are normal: the wake may have been pruned by a compaction.
		for _, id := range r.IDs {
			st.ack(id, r.By, r.At)
		}
	case recClear:
		st.clear(r.Key, r.ID)
	case recSeq:
		st.seq = max(st.seq, r.Seq)
	default:
		return Warning{Problem: fmt.Sprintf("skipped a record of unknown type %q (written by a newer system3?)", r.Type)}, false
	}
	return Warning{}, true
}

// file is what the journal needs from an open file; tests substitute failing ones.
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// fileOps are the filesystem calls the journal makes, replaceable in tests to
// simulate a full or failing disk.
type fileOps struct {
	// openAppend opens (creating) the journal for appending and reports its
	// size and whether it ends in the middle of a line.
	openAppend func(path string) (f file, size int64, torn bool, err error)
	createTemp func(dir, pattern string) (f file, name string, err error)
	rename     func(from, to string) error
	remove     func(name string) error
	syncDir    func(dir string) error
}

var osFileOps = fileOps{
	openAppend: osOpenAppend,
	createTemp: func(dir, pattern string) (file, string, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, "", err
		}
		return f, f.Name(), nil
	},
	rename:  os.Rename,
	remove:  os.Remove,
	syncDir: syncDir,
}

func osOpenAppend(path string) (file, int64, bool, error) {
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, err
	}
	size, torn := fi.Size(), false
	if size > 0 && fi.Mode().IsRegular() {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			f.Close()
			return nil, 0, false, err
		}
		torn = last[0] != '\n'
	}
	if created {
		// A new file's name is only durable once its directory is synced.
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, 0, false, err
		}
	}
	return f, size, torn, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type pendingRecord struct {
	rev  uint64
	data []byte
}

// journal appends records and makes them durable. It is used by one goroutine
// at a time (the store's flush lock), so it has no lock of its own.
//
// On any write, sync or open error the file is closed and every record not
// known durable stays pending; the next attempt reopens the file and writes
// them all again, whole. A record may thus appear twice (written, then its
// fsync failed) — replay is idempotent — and a partly written line is left in
// place (never truncate what is on disk) and fenced off with a newline, so the
// reader skips it as one damaged line.
type journal struct {
	path  string
	ops   fileOps
	clock func() time.Time

	f       file
	torn    bool
	pending []pendingRecord
	durable uint64 // highest rev known to be on disk

	size, compactedSize int64
	records             int

	err        *JournalError
	errAt      time.Time
	compactErr error
}

func (j *journal) add(rev uint64, data []byte) {
	j.pending = append(j.pending, pendingRecord{rev, data})
}

// flush writes and syncs every pending record.
func (j *journal) flush() {
	if len(j.pending) == 0 {
		return
	}
	if err := j.write(); err != nil {
		if j.f != nil {
			j.f.Close()
			j.f = nil
		}
		j.err = &JournalError{Path: j.path, Err: err, Pending: len(j.pending)}
		j.errAt = j.clock()
		return
	}
	j.durable = j.pending[len(j.pending)-1].rev
	j.records += len(j.pending)
	j.pending = j.pending[:0]
	j.err = nil
}

func (j *journal) write() error {
	if j.f == nil {
		if err := j.open(); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if j.torn {
		buf.WriteByte('\n')
	}
	for _, p := range j.pending {
		buf.Write(p.data)
	}
	n, err := j.f.Write(buf.Bytes())
	j.size += int64(n)
	if n > 0 {
		j.torn = buf.Bytes()[n-1] != '\n'
	}
	if err != nil {
		return err
	}
	return j.f.Sync()
}

func (j *journal) open() error {
	f, size, torn, err := j.ops.openAppend(j.path)
	if err != nil {
		return err
	}
	j.f, j.size, j.torn = f, size, torn
	return nil
}

func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// needsCompaction waits for the file to pass the threshold and to have doubled
// since the last compaction, so a journal whose live content is itself large is
// not rewritten on every write.
func (j *journal) needsCompaction(maxBytes int64, maxRecords int) bool {
	if len(j.pending) > 0 || j.size <= 2*j.compactedSize {
		return false
	}
	return j.size > maxBytes || j.records > maxRecords
}

// rewrite replaces the journal with records, atomically: temp file in the same
// dir, fsync, rename over, fsync the dir. On error the old journal is intact.
func (j *journal) rewrite(records [][]byte, rev uint64) error {
	dir := filepath.Dir(j.path)
	tf, name, err := j.ops.createTemp(dir, JournalFile+".tmp-*")
	if err != nil {
		return err
	}
	var size int64
	err = func() error {
		for _, r := range records {
			n, err := tf.Write(r)
			size += int64(n)
			if err != nil {
				return err
			}
		}
		return tf.Sync()
	}()
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = j.ops.rename(name, j.path)
	}
	if err != nil {
		j.ops.remove(name)
		return err
	}
	// From here the new journal is in place: whatever fails next, the old
	// handle points to an unlinked file and must not be written again.
	j.close()
	j.size, j.compactedSize, j.records, j.torn = size, size, len(records), false
	j.durable = rev
	if err := j.ops.syncDir(dir); err != nil {
		return fmt.Errorf("sync %s after compaction: %w", dir, err)
	}
	return nil
}

// removeStaleTemps deletes temp files left by a compaction that was killed;
// the journal they were meant to replace is still complete.
func removeStaleTemps(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, JournalFile+".tmp-*"))
	for _, n := range names {
		os.Remove(n)
	}
}

// ErrNotDurable matches (errors.Is) the error returned when a change was
// applied and delivered but could not be written to the journal yet.
var ErrNotDurable = errors.New("wake not yet written to the journal")

// JournalError reports that the journal cannot be written. The store keeps
// working in memory and writes the pending records, in order, as soon as a
// write succeeds.
type JournalError struct {
	Path    string
	Err     error
	Pending int // records kept in memory when the error happened
}

func (e *JournalError) Error() string {
	cause := e.Err
	var pe *fs.PathError
	if errors.As(cause, &pe) && pe.Path == e.Path {
		cause = pe.Err // the path is already in the sentence
	}
	return fmt.Sprintf("cannot write the wake journal %s: %v; wakes are kept in memory (%d not yet written) until it works again", e.Path, cause, e.Pending)
}

func (e *JournalError) Unwrap() error { return e.Err }

func (e *JournalError) Is(target error) bool { return target == ErrNotDurable }
