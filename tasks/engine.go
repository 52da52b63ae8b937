package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// engine holds what is known about the files under a root and turns reads of
// single files or directories into model updates and events. Load uses it once;
// the Watcher drives it from fsnotify. It is not safe for concurrent use.
type engine struct {
	root  string // tasks root
	todos string // legacy todos directory, or ""
	limit int64
	now   func() time.Time

	lists map[string]*listState // by path: list directory or legacy file

	// rootErr is why the root cannot be read (nil when it can).
	rootErr error

	// quiet suppresses events: set while loading the initial state.
	quiet  bool
	events []Event
	// touched holds the paths of lists changed or removed since the last finish.
	touched map[string]bool

	// hooks connect the engine to a watcher; nil for one-shot loads.
	hooks hooks
	// retryDelay is how long a failed read is held back before it is reported,
	// in case the file was caught half-written.
	retryDelay time.Duration

	reads atomic.Int64 // files read, for tests
}

// hooks is what the engine needs from a watcher.
type hooks interface {
	// watch starts watching a directory about to be listed.
	watch(dir string)
	// unwatch stops watching a directory that is no longer a list.
	unwatch(dir string)
	// waitFor watches the nearest existing ancestor of a missing directory.
	waitFor(target string)
	// found drops the ancestor watch waitFor set up for target.
	found(target string)
	// retry schedules one more read of path after the retry delay.
	retry(path string)
}

type listState struct {
	id, path       string
	legacy         bool
	session, agent string
	dirMod         time.Time
	dirErr         *FileError // the list directory cannot be listed
	files          map[string]*fileState
	complete       bool
	dirty          bool
	built          List
}

type fileState struct {
	tasks   []Task // last good version
	info    fileInfo
	problem *FileError
	// failingSince is the start of the current run of failed reads; zero
	// after a good read. failedAs is the file as the last failed read saw
	// it.
	failingSince time.Time
	failedAs     fileInfo
}

// maxRetries bounds how long a file that keeps changing and keeps failing
// is retried before its error is reported: retryDelay times this.
const maxRetries = 20

func newEngine(root, todos string) *engine {
	return &engine{
		root:    root,
		todos:   todos,
		limit:   MaxFileSize,
		now:     time.Now,
		lists:   make(map[string]*listState),
		touched: make(map[string]bool),
	}
}

// wanted reports whether a directory entry is a task or todo file: *.json,
// not a dotfile (.lock, .highwatermark, editors' and atomic writers' temp files).
func wanted(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json") && len(name) > len(".json")
}

// isUnder reports whether p is strictly inside dir.
func isUnder(p, dir string) bool {
	if dir == "" || len(p) <= len(dir) || !strings.HasPrefix(p, dir) {
		return false
	}
	return p[len(dir)] == filepath.Separator || strings.HasSuffix(dir, string(filepath.Separator))
}

type pathKind int

const (
	kindNone   pathKind = iota
	kindRoot            // the root or one of its ancestors
	kindTodos           // the todos directory or one of its ancestors
	kindList            // a directory entry of the root
	kindTask            // a file inside a list directory
	kindLegacy          // a file in the todos directory
)

func (e *engine) classify(p string) pathKind {
	switch {
	case p == e.root || isUnder(e.root, p):
		return kindRoot
	case e.todos != "" && (p == e.todos || isUnder(e.todos, p)):
		return kindTodos
	case e.todos != "" && filepath.Dir(p) == e.todos:
		if wanted(filepath.Base(p)) {
			return kindLegacy
		}
	case filepath.Dir(p) == e.root:
		if !strings.HasPrefix(filepath.Base(p), ".") {
			return kindList
		}
	case filepath.Dir(filepath.Dir(p)) == e.root:
		if wanted(filepath.Base(p)) && !strings.HasPrefix(filepath.Base(filepath.Dir(p)), ".") {
			return kindTask
		}
	}
	return kindNone
}

// process brings the model up to date with whatever happened at p.
func (e *engine) process(p string, isRetry bool) {
	switch e.classify(p) {
	// An event on the root itself (created, deleted, moved) may hide any
	// change below it: read everything again. Ancestors only matter while
	// the root is missing.
	case kindRoot:
		e.syncRoot(p == e.root)
	case kindTodos:
		e.syncTodos(p == e.todos)
	case kindList:
		e.syncList(p, true)
	case kindTask:
		dir := filepath.Dir(p)
		if ls := e.lists[dir]; ls != nil {
			e.syncTaskFile(ls, p, isRetry, false)
		} else {
			e.syncList(dir, true)
		}
	case kindLegacy:
		e.syncLegacy(p, isRetry, false)
	}
}

// syncAll re-reads everything. With onlyChanged, files whose modification time
// and size did not change are not read again (for rescans after lost events).
func (e *engine) syncAll(onlyChanged bool) {
	e.syncRootWith(true, onlyChanged)
	e.syncTodosWith(true, onlyChanged)
}

func (e *engine) syncRoot(full bool) { e.syncRootWith(full, false) }

func (e *engine) syncRootWith(full, onlyChanged bool) {
	entries, err, retried := e.readWatchedDir(e.root, false)
	switch {
	case err == nil:
		e.rootErr = nil
		e.syncEntries(entries, full || retried, onlyChanged)
	case isMissing(err):
		e.rootErr = &rootError{root: e.root}
		if fi, err := os.Stat(e.root); err == nil && !fi.IsDir() {
			e.rootErr = &rootError{root: e.root, err: errors.New("it is a file, not a directory; pass the directory that holds the task lists")}
		}
	default:
		// Unreadable: keep what we know, say why.
		e.rootErr = &rootError{root: e.root, err: describeOpenError(err)}
	}
}

// readWatchedDir reads dir and keeps it watched (while it is missing, through
// its nearest existing ancestor). When dir is missing, the lists read from it
// (the legacy ones for the todos dir, the others for the root) are dropped;
// if dir appears between the look and the watch, it is read again, and
// retried says so, because then every file in it is new. An unreadable dir
// returns its error and keeps what is known.
func (e *engine) readWatchedDir(dir string, legacy bool) (entries []fs.DirEntry, err error, retried bool) {
	for attempt := range 3 {
		if e.hooks != nil {
			e.hooks.watch(dir)
		}
		entries, err = os.ReadDir(dir)
		if err == nil {
			if e.hooks != nil {
				e.hooks.found(dir)
			}
			return entries, nil, attempt > 0
		}
		if !isMissing(err) {
			return nil, err, false
		}
		for _, p := range e.sortedListPaths() {
			if ls := e.lists[p]; ls.legacy == legacy {
				e.removeList(ls)
			}
		}
		if e.hooks == nil {
			break
		}
		e.hooks.waitFor(dir)
		if !isDir(dir) {
			break
		}
	}
	return nil, err, false
}

func (e *engine) syncEntries(entries []fs.DirEntry, full, onlyChanged bool) {
	seen := make(map[string]bool, len(entries))
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		p := filepath.Join(e.root, ent.Name())
		if p == e.todos {
			continue
		}
		isDir := ent.IsDir()
		if ent.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(p)
			isDir = err == nil && fi.IsDir()
		}
		if !isDir {
			continue
		}
		seen[p] = true
		if full || e.lists[p] == nil {
			e.syncListWith(p, true, onlyChanged)
		}
	}
	for _, p := range e.sortedListPaths() {
		if ls := e.lists[p]; !ls.legacy && !seen[p] {
			e.removeList(ls)
		}
	}
}

func (e *engine) sortedListPaths() []string {
	ps := make([]string, 0, len(e.lists))
	for p := range e.lists {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func (e *engine) syncList(dir string, full bool) { e.syncListWith(dir, full, false) }

// syncListWith reads a list directory: new and vanished files, and, with full,
// every file again (a directory event may stand for changes we did not see).
func (e *engine) syncListWith(dir string, full, onlyChanged bool) {
	ls := e.lists[dir]
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		if ls != nil {
			e.removeList(ls)
		}
		return
	}
	if ls == nil {
		ls = &listState{id: filepath.Base(dir), path: dir, files: make(map[string]*fileState)}
		e.lists[dir] = ls
		e.emit(ls, Event{Kind: EventListAdded})
	}
	ls.dirMod = fi.ModTime()
	e.markDirty(ls)
	// Watch before listing, so that a file created in between is not missed.
	if e.hooks != nil {
		e.hooks.watch(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		msg := fmt.Sprintf("cannot list the task directory (%v); check its permissions", unwrapPath(err))
		if errors.Is(err, fs.ErrPermission) {
			msg = "permission denied listing the task directory; give your user access (chmod u+rx) or remove it"
		}
		e.setProblem(ls, dir, &ls.dirErr, msg, fi.ModTime())
		return
	}
	e.setProblem(ls, dir, &ls.dirErr, "", time.Time{})
	seen := make(map[string]bool, len(entries))
	for _, ent := range entries {
		if !wanted(ent.Name()) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		seen[p] = true
		if full || ls.files[p] == nil {
			e.syncTaskFile(ls, p, false, onlyChanged)
		}
	}
	for _, p := range sortedKeys(ls.files) {
		if !seen[p] {
			e.dropFile(ls, p, ls.files[p])
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (e *engine) syncTaskFile(ls *listState, p string, isRetry, onlyChanged bool) {
	fst := ls.files[p]
	info, err := statFile(p, e.limit)
	if errors.Is(err, errMissing) {
		if fst != nil {
			e.dropFile(ls, p, fst)
		}
		return
	}
	if onlyChanged && err == nil && fst != nil && fst.problem == nil && fst.info.same(info) {
		return
	}
	var tasks []Task
	var problems []string
	if err == nil {
		e.reads.Add(1)
		var data []byte
		data, err = readFile(p, info, e.limit)
		if errors.Is(err, errMissing) {
			if fst != nil {
				e.dropFile(ls, p, fst)
			}
			return
		}
		if err == nil {
			var t Task
			t, problems, err = ParseTask(data, strings.TrimSuffix(filepath.Base(p), ".json"))
			t.Source, t.ModTime = p, info.mod
			tasks = []Task{t}
		}
	}
	e.apply(ls, p, info, tasks, problems, err, isRetry)
}

func (e *engine) syncTodos(full bool) { e.syncTodosWith(full, false) }

func (e *engine) syncTodosWith(full, onlyChanged bool) {
	if e.todos == "" {
		return
	}
	// A missing or unreadable todos dir is normal: most users have none.
	entries, err, retried := e.readWatchedDir(e.todos, true)
	if err != nil {
		return
	}
	seen := make(map[string]bool, len(entries))
	for _, ent := range entries {
		if !wanted(ent.Name()) {
			continue
		}
		p := filepath.Join(e.todos, ent.Name())
		seen[p] = true
		if full || retried || e.lists[p] == nil {
			e.syncLegacy(p, false, onlyChanged)
		}
	}
	for _, p := range e.sortedListPaths() {
		if ls := e.lists[p]; ls.legacy && !seen[p] {
			e.removeList(ls)
		}
	}
}

// syncLegacy reads one legacy todo file, which is a list of its own.
func (e *engine) syncLegacy(p string, isRetry, onlyChanged bool) {
	ls := e.lists[p]
	info, err := statFile(p, e.limit)
	if errors.Is(err, errMissing) {
		if ls != nil {
			e.removeList(ls)
		}
		return
	}
	if ls == nil {
		stem := strings.TrimSuffix(filepath.Base(p), ".json")
		ls = &listState{id: stem, path: p, legacy: true, files: make(map[string]*fileState)}
		if s, a, ok := strings.Cut(stem, "-agent-"); ok {
			ls.session, ls.agent = s, a
		}
		e.lists[p] = ls
		e.emit(ls, Event{Kind: EventListAdded})
		e.markDirty(ls)
	}
	fst := ls.files[p]
	if onlyChanged && err == nil && fst != nil && fst.problem == nil && fst.info.same(info) {
		return
	}
	var tasks []Task
	var problems []string
	if err == nil {
		e.reads.Add(1)
		var data []byte
		data, err = readFile(p, info, e.limit)
		if errors.Is(err, errMissing) {
			e.removeList(ls)
			return
		}
		if err == nil {
			tasks, problems, err = ParseTodos(data)
			for i := range tasks {
				tasks[i].Source, tasks[i].ModTime = p, info.mod
			}
		}
	}
	e.apply(ls, p, info, tasks, problems, err, isRetry)
}

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
