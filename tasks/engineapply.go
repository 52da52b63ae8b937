package tasks

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"
)

// apply records the outcome of reading one file.
func (e *engine) apply(ls *listState, p string, info fileInfo, tasks []Task, problems []string, err error, isRetry bool) {
	fst := ls.files[p]
	if fst == nil {
		fst = &fileState{}
		ls.files[p] = fst
	}
	now := e.now()
	since := info.mod
	if since.IsZero() {
		since = now
	}
	if err != nil {
		if fst.failingSince.IsZero() {
			fst.failingSince = now
		}
		changed := !info.same(fst.failedAs)
		fst.failedAs = info
		// A writer may be half-way through. An error is reported once a
		// retry, retryDelay later, finds the file unchanged and still bad;
		// while the file keeps changing it is looked at again, for at
		// most maxRetries retry delays. (The initial load records the
		// error at once, and its retry clears it if the writer finishes.)
		// An empty file is the moment between a writer's truncate and its
		// write, which a loaded machine can stretch past one retry delay:
		// it is reported only once it has stayed empty for all of them.
		stable := isRetry && !changed && !errors.Is(err, errEmpty)
		expired := now.Sub(fst.failingSince) >= maxRetries*e.retryDelay
		if e.hooks != nil && !stable && !expired {
			e.hooks.retry(p)
			if !e.quiet {
				return
			}
		}
		fst.info = info
		e.setProblem(ls, p, &fst.problem, err.Error(), since)
		e.markDirty(ls)
		return
	}
	fst.failingSince, fst.failedAs = time.Time{}, fileInfo{}
	e.diff(ls, fst.tasks, tasks)
	fst.tasks = tasks
	fst.info = info
	e.setProblem(ls, p, &fst.problem, strings.Join(problems, "; "), since)
	e.markDirty(ls)
}

func (e *engine) markDirty(ls *listState) {
	ls.dirty = true
	e.touched[ls.path] = true
}

// setProblem sets or clears (msg == "") the problem in *slot, with events.
func (e *engine) setProblem(ls *listState, p string, slot **FileError, msg string, since time.Time) {
	old := *slot
	switch {
	case msg == "" && old == nil:
		return
	case msg == "":
		*slot = nil
		e.emit(ls, Event{Kind: EventFileRecovered, Path: p, Err: old.Err})
	case old != nil && old.Err == msg:
		return
	default:
		*slot = &FileError{Path: p, Err: msg, Since: since}
		e.emit(ls, Event{Kind: EventFileError, Path: p, Err: msg})
	}
	e.markDirty(ls)
}

// diff emits the task events that turn old into new (the tasks of one file).
func (e *engine) diff(ls *listState, old, new []Task) {
	byID := make(map[string]Task, len(old))
	for _, t := range old {
		byID[t.ID] = t
	}
	for _, n := range new {
		o, ok := byID[n.ID]
		if !ok {
			e.emitTask(ls, Event{Kind: EventTaskCreated}, n)
			continue
		}
		delete(byID, n.ID)
		if o.Status != n.Status {
			e.emitTask(ls, Event{Kind: EventTaskStatusChanged, From: o.Status, To: n.Status}, n)
		}
		if f := taskChanges(o, n); len(f) > 0 {
			e.emitTask(ls, Event{Kind: EventTaskUpdated, Fields: f}, n)
		}
	}
	for _, o := range old {
		if _, gone := byID[o.ID]; gone {
			e.emitTask(ls, Event{Kind: EventTaskDeleted}, o)
		}
	}
}

func (e *engine) dropFile(ls *listState, p string, fst *fileState) {
	if ls.legacy {
		e.removeList(ls)
		return
	}
	for _, t := range fst.tasks {
		e.emitTask(ls, Event{Kind: EventTaskDeleted}, t)
	}
	e.setProblem(ls, p, &fst.problem, "", time.Time{})
	delete(ls.files, p)
	e.markDirty(ls)
}

func (e *engine) removeList(ls *listState) {
	delete(e.lists, ls.path)
	e.touched[ls.path] = true
	e.emit(ls, Event{Kind: EventListRemoved})
	if e.hooks != nil && !ls.legacy {
		e.hooks.unwatch(ls.path)
	}
}

func (e *engine) emit(ls *listState, ev Event) {
	if e.quiet {
		return
	}
	ev.Time = e.now()
	ev.ListID, ev.ListPath, ev.Legacy = ls.id, ls.path, ls.legacy
	e.events = append(e.events, ev)
}

func (e *engine) emitTask(ls *listState, ev Event, t Task) {
	if e.quiet {
		return
	}
	ev.TaskID = t.ID
	ev.Path = t.Source
	ev.Task = t.Clone()
	e.emit(ls, ev)
}

// finish rebuilds the lists changed since the last call, emits ListCompleted
// for those that just became complete, and returns the events gathered.
func (e *engine) finish() []Event {
	for _, p := range sortedKeys(e.touched) {
		ls := e.lists[p]
		if ls == nil || !ls.dirty {
			continue
		}
		ls.dirty = false
		if !ls.legacy {
			// Deleting or renaming a file changes the directory's time only.
			if fi, err := os.Stat(ls.path); err == nil {
				ls.dirMod = fi.ModTime()
			}
		}
		ls.built = ls.build()
		done := ls.built.Progress.Done()
		if done && !ls.complete {
			e.emit(ls, Event{Kind: EventListCompleted, Total: ls.built.Progress.Total})
		}
		ls.complete = done
	}
	ev := e.events
	e.events = nil
	return ev
}

// takeTouched returns and forgets the paths of lists changed since the last call.
func (e *engine) takeTouched() []string {
	ps := sortedKeys(e.touched)
	clear(e.touched)
	return ps
}

func (ls *listState) build() List {
	l := List{
		ID:         ls.id,
		Path:       ls.path,
		Legacy:     ls.legacy,
		Session:    ls.session,
		Agent:      ls.agent,
		LastChange: ls.dirMod,
	}
	// Sort files, not tasks: moving pointers is much cheaper than moving
	// Task values. A task file holds one task, and a legacy file (the only
	// file of its list) holds its tasks in id order already.
	files := make([]*fileState, 0, len(ls.files))
	n := 0
	for _, f := range ls.files {
		if len(f.tasks) > 0 {
			files = append(files, f)
			n += len(f.tasks)
		}
		if f.problem != nil {
			l.Errors = append(l.Errors, *f.problem)
		}
		if f.info.mod.After(l.LastChange) {
			l.LastChange = f.info.mod
		}
	}
	slices.SortFunc(files, func(a, b *fileState) int {
		if c := compareIDs(a.tasks[0].ID, b.tasks[0].ID); c != 0 {
			return c
		}
		return strings.Compare(a.tasks[0].Source, b.tasks[0].Source)
	})
	l.Tasks = make([]Task, 0, n)
	for _, f := range files {
		l.Tasks = append(l.Tasks, f.tasks...)
	}
	if ls.dirErr != nil {
		l.Errors = append(l.Errors, *ls.dirErr)
	}
	slices.SortFunc(l.Errors, func(a, b FileError) int { return strings.Compare(a.Path, b.Path) })
	l.Progress = ComputeProgress(l.Tasks)
	return l
}

// snapshot returns the built lists, sorted. They share memory with the
// engine: callers must Clone before handing them out.
func (e *engine) snapshot() []List {
	out := make([]List, 0, len(e.lists))
	for _, ls := range e.lists {
		out = append(out, ls.built)
	}
	sortLists(out)
	return out
}
