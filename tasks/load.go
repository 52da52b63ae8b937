package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNoRoot is matched (with errors.Is) by the error Load returns when the
// tasks root does not exist. That is not a failure: Claude Code creates the
// directory when an agent first uses its task tools, so callers should report
// "no task lists" and carry on.
var ErrNoRoot = errors.New("task root does not exist")

type rootError struct {
	root string
	err  error // nil: the root does not exist
}

func (e *rootError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("no task lists under %s: the directory does not exist yet (Claude Code creates it when an agent first uses its task tools)", e.root)
	}
	return fmt.Sprintf("cannot read the task directory %s: %v", e.root, e.err)
}

func (e *rootError) Is(target error) bool {
	return e.err == nil && (target == ErrNoRoot || target == fs.ErrNotExist)
}

func (e *rootError) Unwrap() error { return e.err }

// ClaudeDir returns Claude Code's configuration directory: $CLAUDE_CONFIG_DIR
// if set, else ~/.claude.
func ClaudeDir() (string, error) {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the task directory: %w; pass it explicitly", err)
	}
	return filepath.Join(home, ".claude"), nil
}

// DefaultRoot returns where Claude Code keeps task lists: <ClaudeDir>/tasks.
func DefaultRoot() (string, error) {
	d, err := ClaudeDir()
	return filepath.Join(d, "tasks"), err
}

// DefaultTodosDir returns where older Claude Code versions keep TodoWrite
// lists: <ClaudeDir>/todos.
func DefaultTodosDir() (string, error) {
	d, err := ClaudeDir()
	return filepath.Join(d, "todos"), err
}

func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// Load reads every task list under root (one directory per list) and, if
// todosDir is not empty, every legacy todo file in todosDir, sorted by id.
//
// Problems with single files never fail the load: they are in List.Errors.
// If root does not exist, Load returns the legacy lists it found and an error
// matching [ErrNoRoot], whose message says so in a sentence fit for the user.
// A missing todosDir is normal and not reported.
func Load(root, todosDir string) ([]List, error) {
	if root == "" {
		return nil, errors.New("tasks: Load needs the task root directory")
	}
	e := newEngine(cleanPath(root), cleanPath(todosDir))
	e.quiet = true
	e.syncAll(false)
	e.finish()
	lists := e.snapshot()
	if e.rootErr != nil {
		return lists, e.rootErr
	}
	return lists, nil
}

// LoadList reads one list: a task list directory, or a legacy todo file.
func LoadList(path string) (List, error) {
	path = cleanPath(path)
	fi, err := os.Stat(path)
	if err != nil {
		if isMissing(err) {
			return List{}, fmt.Errorf("no task list at %s: %w", path, fs.ErrNotExist)
		}
		return List{}, fmt.Errorf("read task list %s: %w", path, describeOpenError(err))
	}
	e := newEngine(filepath.Dir(path), "")
	e.quiet = true
	if fi.IsDir() {
		e.syncList(path, true)
	} else {
		e.todos = filepath.Dir(path)
		e.syncLegacy(path, false, false)
	}
	e.finish()
	ls := e.lists[path]
	if ls == nil {
		return List{}, fmt.Errorf("no task list at %s: it vanished while being read", path)
	}
	return ls.built, nil
}
