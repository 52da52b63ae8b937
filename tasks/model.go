package tasks

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// Status is a task's state as written by the agent. Values other than the three
// constants are kept as they are (and reported as a file problem).
type Status string

// The statuses Claude Code writes.
const (
	StatusPending    Status = "pending"
	StatusInProgress Status = "in_progress"
	StatusCompleted  Status = "completed"
)

// Known reports whether s is one of the statuses Claude Code writes.
func (s Status) Known() bool {
	return s == StatusPending || s == StatusInProgress || s == StatusCompleted
}

// Task is one task of a list: the fields of a task file, or one item of a
// legacy todo file.
type Task struct {
	ID          string
	Subject     string
	Description string
	ActiveForm  string // present-tense form shown while the task is in progress
	Status      Status
	Owner       string
	Blocks      []string // ids of tasks that wait for this one
	BlockedBy   []string // ids of tasks this one waits for
	Metadata    map[string]any
	// Extra holds the fields this package does not know, as written, so a newer
	// agent version loses nothing on its way to the user.
	Extra map[string]json.RawMessage

	Source  string    // the file the task was read from
	ModTime time.Time // that file's modification time when it was read
}

// FileError is a problem with one file (or list directory), shown to the user
// next to the list it belongs to.
type FileError struct {
	Path  string
	Err   string    // one sentence: what is wrong and what to do
	Since time.Time // when the problem appeared: the file's modification time if known
}

// Error makes a FileError usable as an error value.
func (e FileError) Error() string { return e.Path + ": " + e.Err }

// TaskRef names a task in a [Progress] summary; its texts are shortened
// to [MaxSubject] characters.
type TaskRef struct {
	ID         string
	Subject    string
	ActiveForm string
	WaitingOn  []string // for blocked tasks: the blockers that are not completed
}

// Progress summarises a list.
type Progress struct {
	Completed  int
	Total      int
	InProgress []TaskRef
	// Blocked holds the tasks that are not completed and wait for a task of the
	// list that is not completed. A blocker that is not in the list (deleted, or
	// never written) does not block.
	Blocked []TaskRef
}

// Done reports whether the list has tasks and all of them are completed.
func (p Progress) Done() bool { return p.Total > 0 && p.Completed == p.Total }

// List is one task list: a directory under the tasks root, or one legacy todo
// file.
type List struct {
	ID     string
	Path   string // the list's directory; for a legacy list, its JSON file
	Legacy bool   // read from a legacy ~/.claude/todos file
	// Session and Agent come from a legacy file's name, <session>-agent-<agent>.json.
	Session string
	Agent   string

	Tasks    []Task      // sorted by id, numerically where ids are numbers
	Errors   []FileError // sorted by path
	Progress Progress
	// LastChange is the latest modification time of the list directory or of
	// any of its task files.
	LastChange time.Time
}

// Clone returns a deep copy of l.
func (l List) Clone() List {
	c := l
	c.Tasks = make([]Task, len(l.Tasks))
	for i, t := range l.Tasks {
		c.Tasks[i] = t.Clone()
	}
	c.Errors = slices.Clone(l.Errors)
	c.Progress = l.Progress.clone()
	return c
}

// Clone returns a deep copy of t.
func (t Task) Clone() Task {
	c := t
	c.Blocks = slices.Clone(t.Blocks)
	c.BlockedBy = slices.Clone(t.BlockedBy)
	if t.Metadata != nil {
		c.Metadata = cloneAny(t.Metadata).(map[string]any)
	}
	if t.Extra != nil {
		c.Extra = make(map[string]json.RawMessage, len(t.Extra))
		for k, v := range t.Extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	return c
}

func (p Progress) clone() Progress {
	c := p
	c.InProgress = cloneRefs(p.InProgress)
	c.Blocked = cloneRefs(p.Blocked)
	return c
}

func cloneRefs(refs []TaskRef) []TaskRef {
	if refs == nil {
		return nil
	}
	c := make([]TaskRef, len(refs))
	for i, r := range refs {
		c[i] = r
		c[i].WaitingOn = slices.Clone(r.WaitingOn)
	}
	return c
}

// cloneAny copies the values encoding/json produces.
func cloneAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneAny(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneAny(e)
		}
		return s
	default:
		return v
	}
}

// ComputeProgress summarises tasks, which should be sorted (see [List.Tasks]).
func ComputeProgress(tasks []Task) Progress {
	p := Progress{Total: len(tasks)}
	// A blocker counts as done only if every task carrying its id is completed,
	// so duplicate ids err on the side of "still blocked".
	done := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		c := t.Status == StatusCompleted
		if prev, ok := done[t.ID]; ok {
			c = c && prev
		}
		done[t.ID] = c
	}
	for _, t := range tasks {
		if t.Status == StatusCompleted {
			p.Completed++
			continue
		}
		if t.Status == StatusInProgress {
			p.InProgress = append(p.InProgress, TaskRef{ID: t.ID, Subject: firstLine(t.Subject), ActiveForm: firstLine(t.ActiveForm)})
		}
		var waiting []string
		for _, b := range t.BlockedBy {
			if d, ok := done[b]; ok && !d && !slices.Contains(waiting, b) {
				waiting = append(waiting, b)
			}
		}
		if len(waiting) > 0 {
			p.Blocked = append(p.Blocked, TaskRef{ID: t.ID, Subject: firstLine(t.Subject), ActiveForm: firstLine(t.ActiveForm), WaitingOn: waiting})
		}
	}
	return p
}

// compareIDs orders task ids: numbers numerically and before other ids, which
// sort lexically.
func compareIDs(a, b string) int {
	an, bn := isDigits(a), isDigits(b)
	switch {
	case an && bn:
		a2, b2 := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if c := cmp.Compare(len(a2), len(b2)); c != 0 {
			return c
		}
		if c := strings.Compare(a2, b2); c != 0 {
			return c
		}
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func sortTasks(ts []Task) {
	slices.SortFunc(ts, func(a, b Task) int {
		if c := compareIDs(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
}

func sortLists(ls []List) {
	slices.SortFunc(ls, func(a, b List) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		if a.Legacy != b.Legacy {
			if a.Legacy {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// Find returns the list with the given id from lists, preferring a task list
// directory over a legacy todo file of the same name.
func Find(lists []List, id string) (List, bool) {
	var found *List
	for i := range lists {
		l := &lists[i]
		if l.ID == id && (found == nil || found.Legacy && !l.Legacy) {
			found = l
		}
	}
	if found == nil {
		return List{}, false
	}
	return *found, true
}

// taskChanges names the fields (in the JSON output's spelling) other than the
// status that differ between a and b.
func taskChanges(a, b Task) []string {
	var f []string
	if a.Subject != b.Subject {
		f = append(f, "subject")
	}
	if a.Description != b.Description {
		f = append(f, "description")
	}
	if a.ActiveForm != b.ActiveForm {
		f = append(f, "active_form")
	}
	if a.Owner != b.Owner {
		f = append(f, "owner")
	}
	if !slices.Equal(a.Blocks, b.Blocks) {
		f = append(f, "blocks")
	}
	if !slices.Equal(a.BlockedBy, b.BlockedBy) {
		f = append(f, "blocked_by")
	}
	if !equalAny(a.Metadata, b.Metadata) {
		f = append(f, "metadata")
	}
	if !maps.EqualFunc(a.Extra, b.Extra, func(x, y json.RawMessage) bool { return string(x) == string(y) }) {
		f = append(f, "extra")
	}
	return f
}

// equalAny compares decoded JSON values (maps, slices, json.Number, string,
// bool, nil) without reflection.
func equalAny(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalAny(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalAny(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
