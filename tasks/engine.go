package tasks

import (
	"path/filepath"
	"strings"
	"sync/atomic"
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
