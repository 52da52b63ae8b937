package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

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
