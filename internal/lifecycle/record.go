package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// RecordsFile is the file in the state dir that records every orchestrator,
// so one can be brought back after tmux or the machine went down.
const RecordsFile = "orchestrators.json"

// Record states.
const (
	// RecordRunning: the orchestrator was spawned, adopted or restored and
	// not stopped since; restore brings it back when its session is gone.
	RecordRunning = "running"
	// RecordStopped: stopped on purpose; restore brings it back only when
	// named.
	RecordStopped = "stopped"
)

// Record is what system3 keeps about one orchestrator to restore it.
type Record struct {
	// Name is the initiative; Session its tmux session.
	Name    string `json:"name"`
	Session string `json:"session"`
	// Agent is the configured agent's name ("claude"), or the program of
	// the operator's command line (CommandLine); Command the argv it ran.
	CommandLine bool     `json:"command_line,omitempty"`
	Agent       string   `json:"agent"`
	Command     []string `json:"command"`
	// Identified is the agent the monitor identified its pane as
	// ("claude"), whatever program Command starts (a wrapper, an nvm
	// shim, npx); empty in records written before it was kept. Manager's
	// agentOf weighs it with Agent and Command.
	Identified string    `json:"identified,omitempty"`
	Worktree   string    `json:"worktree"`
	Branch     string    `json:"branch,omitempty"`
	Base       string    `json:"base,omitempty"`
	Repo       string    `json:"repo,omitempty"`
	TaskList   string    `json:"task_list,omitempty"`
	Created    time.Time `json:"created"`
	// AgentSessionID is the agent's own conversation id (Claude Code's
	// session_id), which its resume takes; Transcript the file it writes.
	AgentSessionID string `json:"agent_session_id,omitempty"`
	Transcript     string `json:"transcript,omitempty"`
	State          string `json:"state"`
	// Adopted: the session was started by hand and linked (system3 link),
	// not spawned.
	Adopted bool `json:"adopted,omitempty"`
	// Restored is when it was last restored.
	Restored time.Time `json:"restored,omitzero"`
}

type recordsDoc struct {
	Version       int      `json:"version"`
	Orchestrators []Record `json:"orchestrators"`
}

// Records is the orchestrators file. Every change is a read-modify-write
// under an exclusive file lock, so processes sharing a state dir (a spawn
// from the CLI, the dashboard learning session ids) never lose each
// other's changes.
type Records struct {
	path string
	mu   sync.Mutex
	// Moved is called when a damaged file was moved aside.
	Moved func(bad string, err error)
}

// OpenRecords returns the records kept at path (the state dir's
// orchestrators.json).
func OpenRecords(path string) *Records { return &Records{path: path} }

// Path is the file the records are kept in.
func (r *Records) Path() string { return r.path }

// List returns every record, by name.
func (r *Records) List() ([]Record, error) {
	var out []Record
	err := r.Update(func(recs []Record) ([]Record, bool) {
		out = slices.Clone(recs)
		return recs, false
	})
	return out, err
}

// Get returns the record of an initiative or session name.
func (r *Records) Get(name string) (Record, bool, error) {
	recs, err := r.List()
	for _, rec := range recs {
		if rec.Name == name || rec.Session == name {
			return rec, true, err
		}
	}
	return Record{}, false, err
}

// Update runs fn on the records under the file lock and writes what it
// returns when it says so. A damaged file is moved aside (its path is in
// the error, which wraps ErrRecordsDamaged) and fn starts from no records;
// the error is returned after fn's change is written.
func (r *Records) Update(fn func([]Record) ([]Record, bool)) error {
	if r == nil || r.path == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	lf, err := os.OpenFile(r.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("lock %s: %w", r.path, err)
	}
	defer unlockFile(lf)
	recs, damaged := r.load()
	next, write := fn(recs)
	if write {
		if err := r.save(next); err != nil {
			return err
		}
	}
	return damaged
}

// load reads the file; a damaged one is moved aside.
func (r *Records) load() ([]Record, error) {
	b, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	var doc recordsDoc
	err = json.Unmarshal(b, &doc)
	if err == nil {
		err = validateRecords(doc)
	}
	if err == nil {
		return doc.Orchestrators, nil
	}
	bad := fmt.Sprintf("%s.bad-%s", r.path, time.Now().UTC().Format("20060102T150405.000000000"))
	if rerr := os.Rename(r.path, bad); rerr != nil {
		return nil, fmt.Errorf("%w: %s: %v, and it could not be moved aside (%v); fix or remove it", api.ErrRecordsDamaged, r.path, err, rerr)
	}
	if r.Moved != nil {
		r.Moved(bad, err)
	}
	return nil, fmt.Errorf("%w: %s: %v; it was moved to %s and the records start empty (restore it from there by hand)", api.ErrRecordsDamaged, r.path, err, bad)
}

func validateRecords(doc recordsDoc) error {
	if doc.Version != 1 {
		return fmt.Errorf("version %d, want 1", doc.Version)
	}
	seen := map[string]bool{}
	for i, rec := range doc.Orchestrators {
		switch {
		case rec.Name == "" || rec.Session == "":
			return fmt.Errorf("record %d has no name or session", i)
		case seen[rec.Name]:
			return fmt.Errorf("record %q appears twice", rec.Name)
		case rec.Worktree == "" || !filepath.IsAbs(rec.Worktree):
			return fmt.Errorf("record %q: worktree %q is not an absolute path", rec.Name, rec.Worktree)
		case rec.State != RecordRunning && rec.State != RecordStopped:
			return fmt.Errorf("record %q: unknown state %q", rec.Name, rec.State)
		case strings.HasPrefix(rec.Branch, "-") || strings.HasPrefix(rec.Base, "-") || strings.HasPrefix(rec.AgentSessionID, "-"):
			// Each is passed to git or to the agent as an argument.
			return fmt.Errorf("record %q: branch, base or session id starts with '-'", rec.Name)
		case strings.ContainsAny(rec.AgentSessionID, " \t\n"):
			return fmt.Errorf("record %q: agent session id %q has spaces", rec.Name, rec.AgentSessionID)
		}
		seen[rec.Name] = true
	}
	return nil
}

// save writes the records atomically: a temporary file in the same
// directory, synced, renamed over the old one, and the directory synced.
func (r *Records) save(recs []Record) error {
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.Name, b.Name) })
	if recs == nil {
		recs = []Record{}
	}
	b, err := json.MarshalIndent(recordsDoc{Version: 1, Orchestrators: recs}, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(r.path, append(b, '\n'))
}

func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, a no-op
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Put adds or replaces the record of rec.Name.
func (r *Records) Put(rec Record) error {
	return r.Update(func(recs []Record) ([]Record, bool) {
		recs = slices.DeleteFunc(recs, func(x Record) bool { return x.Name == rec.Name })
		return append(recs, rec), true
	})
}

// Remove drops the record of name (initiative or session); it reports
// whether there was one.
func (r *Records) Remove(name string) (bool, error) {
	found := false
	err := r.Update(func(recs []Record) ([]Record, bool) {
		n := len(recs)
		recs = slices.DeleteFunc(recs, func(x Record) bool { return x.Name == name || x.Session == name })
		found = len(recs) != n
		return recs, found
	})
	return found, err
}

// Modify changes the record of name (initiative or session) with fn, when
// there is one; fn reports whether it changed anything.
func (r *Records) Modify(name string, fn func(*Record) bool) (bool, error) {
	found := false
	err := r.Update(func(recs []Record) ([]Record, bool) {
		changed := false
		for i := range recs {
			if recs[i].Name == name || recs[i].Session == name {
				found = true
				changed = fn(&recs[i])
			}
		}
		return recs, changed
	})
	return found, err
}
