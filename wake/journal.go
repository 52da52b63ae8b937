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
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
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
	// Quarantine is the file the whole line was copied to before it was
	// dropped from the journal; empty when it was not (a reader that does
	// not own the journal leaves it as it is).
	Quarantine string

	raw []byte // the whole line
}

func (w Warning) String() string {
	if w.Line == 0 {
		return fmt.Sprintf("%s: %s", w.Path, w.Problem)
	}
	s := fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Problem)
	if w.Quarantine != "" {
		s += "; the line was moved to " + w.Quarantine
	}
	return s
}

// ReadJournal reads a journal without owning it, for `system3 status` while a
// daemon runs. It returns the wakes the owner would serve (oldest first) and
// the lines it skipped. A journal that does not exist yet holds no wakes. The
// owner may be appending meanwhile, so a torn last line is expected and only
// reported.
func ReadJournal(path string) ([]api.Wake, []Warning, error) {
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
	evs := make([]api.Wake, len(ld.st.events))
	for i, ev := range ld.st.events {
		evs[i] = ev.Clone()
	}
	return evs, ld.warnings, nil
}

type loaded struct {
	st       *state
	warnings []Warning
	size     int64 // bytes read
	records  int   // lines that held a record
	torn     bool  // the file does not end with a newline
	// skippedRaises bounds how many raise records the lines skipped so far
	// can have held: the gap they may leave in the seqs.
	skippedRaises uint64
}

// minRecordBytes is less than the size of any raise record the store writes.
const minRecordBytes = 64

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
				w.raw = bytes.Clone(bytes.TrimRight(b, "\r\n"))
				ld.warnings = append(ld.warnings, w)
				// A skipped line may have held raise records; the smallest
				// one the store writes is well over minRecordBytes.
				ld.skippedRaises += uint64(len(b))/minRecordBytes + 1
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
	first := ld.records == 0
	ld.records++
	switch r.Type {
	case recRaise, recAck, recClear, recSeq, recRename:
	default:
		return Warning{Problem: fmt.Sprintf("skipped a record of unknown type %.40q (written by a newer system3?)", r.Type)}, false
	}
	if p := checkRecord(&r); p != "" {
		return Warning{Problem: "skipped " + p}, false
	}
	st := ld.st
	switch r.Type {
	case recRaise:
		if _, dup := st.byID[r.Event.ID]; dup {
			return Warning{}, true // written twice by a retry
		}
		if r.Event.Seq <= st.lastRaised {
			return Warning{Problem: fmt.Sprintf("skipped wake %s: its seq %d is not after the previous wake's", r.Event.ID, r.Event.Seq)}, false
		}
		// The store hands out seqs one by one and journals each raise, so a
		// raise comes at most one after the counter (a compaction's seq
		// record, or the last raise), plus the raises the lines skipped so
		// far may have held. A bigger jump would make every later wake look
		// out of order.
		if limit := st.seq + 1 + ld.skippedRaises; r.Event.Seq > limit {
			return Warning{Problem: fmt.Sprintf("skipped wake %s: its seq %d jumps past the journal's seq %d", r.Event.ID, r.Event.Seq, st.seq)}, false
		}
		st.raise(r.Event)
	case recAck:
		// Unknown ids are normal: the wake may have been pruned by a compaction.
		for _, id := range r.IDs {
			st.ack(id, r.By, r.At)
		}
	case recClear:
		st.clear(r.Key, r.ID, r.By, r.At)
	case recSeq:
		// Only a compaction writes one, as the first record of the file.
		if !first {
			return Warning{Problem: fmt.Sprintf("skipped a seq record (%d) that is not the first record: only a compaction writes one, at the start", r.Seq)}, false
		}
		st.seq = max(st.seq, r.Seq)
	case recRename:
		st.rename(r.IDs, r.Session)
	}
	return Warning{}, true
}

// QuarantineFile is where the owner of a journal moves the lines it rejects,
// one JSON object per line, so nothing read is ever lost.
const QuarantineFile = "wakes.quarantine.jsonl"

// quarantineEntry is one line of the quarantine file. Line holds the rejected
// text when it is valid UTF-8, LineBase64 otherwise.
type quarantineEntry struct {
	Time       time.Time `json:"time"`
	Journal    string    `json:"journal"`
	LineNo     int       `json:"line_no"`
	Offset     int64     `json:"offset"`
	Problem    string    `json:"problem"`
	Line       *string   `json:"line,omitempty"`
	LineBase64 []byte    `json:"line_base64,omitempty"`
}

// quarantine appends the rejected lines to the quarantine file in dir and
// syncs it. Only once it returns nil may the lines leave the journal.
func quarantine(dir string, ws []Warning, now time.Time) error {
	var buf bytes.Buffer
	for _, w := range ws {
		e := quarantineEntry{Time: now, Journal: w.Path, LineNo: w.Line, Offset: w.Offset, Problem: w.Problem}
		if utf8.Valid(w.raw) {
			s := string(w.raw)
			e.Line = &s
		} else {
			e.LineBase64 = w.raw
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf.Write(append(b, '\n'))
	}
	path := filepath.Join(dir, QuarantineFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(dir)
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

// Inspect reports what [Open] would find in the state dir dir, without
// taking its lock or writing anything, for commands that run while no
// system3 owns it: the wakes (oldest first) and skipped lines; writeErr, the
// [*JournalError] an owner's [Store.Health] would report (the journal cannot
// be written); and err, the error that makes Open, and so every command that
// monitors, refuse to start.
func Inspect(dir string) (evs []api.Wake, warnings []Warning, writeErr, err error) {
	path := filepath.Join(dir, JournalFile)
	if _, serr := os.Stat(path); errors.Is(serr, syscall.ENOTDIR) {
		// Open treats this as no journal, and reports it as unwritable.
		return nil, nil, &JournalError{Path: path, Err: serr}, nil
	}
	evs, warnings, err = ReadJournal(path)
	if err != nil {
		return evs, warnings, nil, err
	}
	if werr := checkWritable(dir, path); werr != nil {
		writeErr = &JournalError{Path: path, Err: werr}
	}
	return evs, warnings, writeErr, nil
}

// checkWritable tells whether the journal at path, in dir, could be opened
// for appending (or created), without creating anything.
func checkWritable(dir, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The journal would be created: in dir, or in the dirs made for it.
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
			}
			if err := canCreateIn(d); err != nil {
				return &fs.PathError{Op: "open", Path: path, Err: err}
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d {
			return err
		}
	}
}
