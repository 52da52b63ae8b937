package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixtureTime is the modification time copyTree gives the first file.
var fixtureTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// copyTree copies testdata/<src> to a temporary directory and gives every
// file a fixed modification time (one minute apart, in path order), so
// outputs that show times are reproducible. It returns the copy's path.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	src = filepath.Join("testdata", src)
	var files, dirs []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			dirs = append(dirs, target)
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, target)
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		mt := fixtureTime.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(f, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if err := os.Chtimes(d, fixtureTime, fixtureTime); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func findList(t *testing.T, lists []List, id string) List {
	t.Helper()
	l, ok := Find(lists, id)
	if !ok {
		var ids []string
		for _, l := range lists {
			ids = append(ids, l.ID)
		}
		t.Fatalf("no list %q in %q", id, ids)
	}
	return l
}

func taskIDs(l List) []string {
	var ids []string
	for _, t := range l.Tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

func errorsByName(l List) map[string]string {
	m := make(map[string]string)
	for _, e := range l.Errors {
		m[filepath.Base(e.Path)] = e.Err
	}
	return m
}

func TestLoadTree(t *testing.T) {
	dir := copyTree(t, "tree")
	lists, err := Load(filepath.Join(dir, "tasks"), filepath.Join(dir, "todos"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range lists {
		ids = append(ids, l.ID)
	}
	want := []string{"0f3c-agent-0f3c", "1a2b-agent-1a2b", "1a2b-agent-9f9f", "PRD-AUTH-001", "broken", "empty-list", "refactor-db"}
	if !slices.Equal(ids, want) {
		t.Fatalf("lists = %q, want %q (dotfiles, stray files and non-json ignored)", ids, want)
	}

	prd := findList(t, lists, "PRD-AUTH-001")
	if got := taskIDs(prd); !slices.Equal(got, []string{"1", "2", "3", "4", "10"}) {
		t.Errorf("PRD tasks = %q, want numeric order", got)
	}
	if p := prd.Progress; p.Completed != 1 || p.Total != 5 || len(p.InProgress) != 1 || p.InProgress[0].ActiveForm != "Writing tests" {
		t.Errorf("PRD progress = %+v", p)
	}
	if p := prd.Progress; len(p.Blocked) != 1 || p.Blocked[0].ID != "4" || !slices.Equal(p.Blocked[0].WaitingOn, []string{"3"}) {
		t.Errorf("PRD blocked = %+v, want task 4 waiting on 3 only (1 is completed)", p.Blocked)
	}
	if len(prd.Errors) != 0 {
		t.Errorf("PRD errors = %+v", prd.Errors)
	}
	if prd.LastChange.Before(fixtureTime) {
		t.Errorf("PRD last change = %v", prd.LastChange)
	}
	if prd.Tasks[0].Source != filepath.Join(dir, "tasks", "PRD-AUTH-001", "1.json") || prd.Tasks[0].ModTime.IsZero() {
		t.Errorf("task source/modtime = %q %v", prd.Tasks[0].Source, prd.Tasks[0].ModTime)
	}

	if db := findList(t, lists, "refactor-db"); !db.Progress.Done() {
		t.Errorf("refactor-db should be done: %+v", db.Progress)
	}
	if el := findList(t, lists, "empty-list"); len(el.Tasks) != 0 || el.Progress.Done() {
		t.Errorf("empty-list = %+v", el)
	}

	legacy := findList(t, lists, "0f3c-agent-0f3c")
	if !legacy.Legacy || legacy.Session != "0f3c" || legacy.Agent != "0f3c" || len(legacy.Tasks) != 3 {
		t.Errorf("legacy list = %+v", legacy)
	}

	broken := findList(t, lists, "broken")
	if got := taskIDs(broken); !slices.Equal(got, []string{"1", "3", "6"}) {
		t.Errorf("broken tasks = %q, want the readable ones", got)
	}
	errs := errorsByName(broken)
	wantErrs := map[string]string{
		"2.json": "not valid JSON",
		"3.json": `unknown status "blocked"`,
		"4.json": "the file is empty",
		"5.json": "not valid UTF-8",
		"6.json": `field "blocks" is a string`,
		"7.json": "this is a directory, not a task file",
	}
	for name, want := range wantErrs {
		if !strings.Contains(errs[name], want) {
			t.Errorf("error for %s = %q, want it to contain %q", name, errs[name], want)
		}
	}
	if len(errs) != len(wantErrs) {
		t.Errorf("errors = %q", errs)
	}
	for _, e := range broken.Errors {
		if e.Since.IsZero() {
			t.Errorf("error %s has no Since", e.Path)
		}
	}
}

func TestLoadMissingRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "nope", "tasks")
	lists, err := Load(root, filepath.Join(dir, "todos-missing-too"))
	if !errors.Is(err, ErrNoRoot) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNoRoot", err)
	}
	if lists == nil || len(lists) != 0 {
		t.Errorf("lists = %#v, want empty", lists)
	}
	if !strings.Contains(err.Error(), "no task lists under "+root) {
		t.Errorf("message = %q", err)
	}

	// Legacy lists still come back when only the root is missing.
	todos := filepath.Join(dir, "todos")
	writeFile(t, filepath.Join(todos, "s-agent-a.json"), `[{"content":"x","status":"pending","activeForm":"x-ing"}]`)
	lists, err = Load(root, todos)
	if !errors.Is(err, ErrNoRoot) || len(lists) != 1 {
		t.Fatalf("lists, err = %d, %v", len(lists), err)
	}

	// A root that is a file is a different, real error.
	file := filepath.Join(dir, "file")
	writeFile(t, file, "x")
	if _, err := Load(file, ""); err == nil || errors.Is(err, ErrNoRoot) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("root is a file: err = %v", err)
	}
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func taskJSON(id string, status Status, subject string, blockedBy ...string) string {
	bb := "[]"
	if len(blockedBy) > 0 {
		bb = `["` + strings.Join(blockedBy, `","`) + `"]`
	}
	return fmt.Sprintf(`{"id":%q,"subject":%q,"description":"","activeForm":%q,"status":%q,"blocks":[],"blockedBy":%s}`,
		id, subject, subject+"-ing", status, bb)
}

// TestLoadBadFiles puts one bad file of each kind next to a good one: each
// becomes a FileError and the good task is untouched.
func TestLoadBadFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string) // creates the bad entry at p
		want  string
	}{
		{"too large", func(t *testing.T, p string) {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(50 << 20); err != nil { // sparse: cheap
				t.Fatal(err)
			}
		}, fmt.Sprintf("task file too large (%d bytes, limit %d)", 50<<20, MaxFileSize)},
		{"symlink loop", func(t *testing.T, p string) {
			if err := os.Symlink(filepath.Base(p), p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link loops back on itself"},
		{"two-link loop", func(t *testing.T, p string) {
			other := filepath.Join(filepath.Dir(p), "9.json")
			if err := os.Symlink(filepath.Base(other), p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Base(p), other); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link loops back on itself"},
		{"dangling symlink", func(t *testing.T, p string) {
			if err := os.Symlink("missing-target", p); err != nil {
				t.Fatal(err)
			}
		}, "points to a missing file"},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "this is a directory, not a task file"},
		{"named pipe", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skipf("cannot make a named pipe here: %v", err)
			}
		}, "this is a named pipe, not a task file"},
		{"permissions", func(t *testing.T, p string) {
			writeFile(t, p, taskJSON("8", StatusPending, "secret"))
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
		}, "permission denied reading the file"},
		{"not UTF-8", func(t *testing.T, p string) { writeFile(t, p, "{\"id\":\"8\",\"subject\":\"\xff\xfe\"}") }, "not valid UTF-8"},
		{"empty", func(t *testing.T, p string) { writeFile(t, p, "") }, "the file is empty"},
		{"truncated", func(t *testing.T, p string) { writeFile(t, p, `{"id":"8","subj`) }, "not valid JSON"},
		{"wrong types", func(t *testing.T, p string) {
			writeFile(t, p, `{"id":8,"subject":"typed","status":"pending","blocks":"x","blockedBy":[7]}`)
		}, `field "blocks" is a string, want an array of task ids; it was ignored`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "list")
			writeFile(t, filepath.Join(dir, "1.json"), taskJSON("1", StatusInProgress, "good"))
			bad := filepath.Join(dir, "8.json")
			tt.setup(t, bad)
			var (
				l   List
				err error
			)
			load := func() { l, err = LoadList(dir) }
			if tt.name == "permissions" && os.Geteuid() == 0 {
				// Root reads a chmod 000 file; drop that power for the read.
				if !withoutDACOverride(load) {
					t.Skip("running as root, which reads a chmod 000 file anyway, and cannot drop CAP_DAC_OVERRIDE here; TestDescribeOpenError covers the message")
				}
			} else {
				load()
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tasks) == 0 || l.Tasks[0].ID != "1" || l.Tasks[0].Subject != "good" {
				t.Errorf("good task lost: %+v", l.Tasks)
			}
			found := false
			for _, e := range l.Errors {
				if e.Path == bad && strings.Contains(e.Err, tt.want) {
					found = true
				}
				if strings.Count(e.Err, "; ") == 0 {
					t.Errorf("error %q should say what to do after a semicolon", e.Err)
				}
			}
			if !found {
				t.Errorf("errors = %+v, want one for %s containing %q", l.Errors, bad, tt.want)
			}
		})
	}
}

func TestDescribeOpenError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&fs.PathError{Op: "open", Path: "/x/1.json", Err: syscall.EACCES}, "permission denied reading the file; give your user read access"},
		{&fs.PathError{Op: "open", Path: "/x/1.json", Err: syscall.EPERM}, "permission denied"},
		{&fs.PathError{Op: "stat", Path: "/x/1.json", Err: syscall.ELOOP}, "loops back on itself"},
		{&fs.PathError{Op: "read", Path: "/x/1.json", Err: syscall.EIO}, "cannot read the file (input/output error); check the disk"},
	} {
		if got := describeOpenError(tt.err).Error(); !strings.Contains(got, tt.want) {
			t.Errorf("describeOpenError(%v) = %q, want it to contain %q", tt.err, got, tt.want)
		}
	}
}

func TestLoadListLegacyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "abc-agent-def.json")
	writeFile(t, p, string(readFixture(t, "legacy/basic.json")))
	l, err := LoadList(p)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Legacy || l.ID != "abc-agent-def" || l.Session != "abc" || l.Agent != "def" || l.Progress.Total != 3 || l.Progress.Completed != 1 {
		t.Errorf("legacy list = %+v", l)
	}
	if _, err := LoadList(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing list: err = %v", err)
	}
}

func TestComputeProgress(t *testing.T) {
	tk := func(id string, s Status, blockedBy ...string) Task {
		return Task{ID: id, Subject: "s" + id, ActiveForm: "a" + id, Status: s, BlockedBy: blockedBy}
	}
	tests := []struct {
		name       string
		tasks      []Task
		completed  int
		inProgress []string
		blocked    map[string][]string
		done       bool
	}{
		{name: "empty"},
		{name: "all done", tasks: []Task{tk("1", StatusCompleted), tk("2", StatusCompleted, "1")}, completed: 2, done: true},
		{name: "blocked by open task",
			tasks:      []Task{tk("1", StatusInProgress), tk("2", StatusPending, "1"), tk("3", StatusPending, "2", "1")},
			inProgress: []string{"1"},
			blocked:    map[string][]string{"2": {"1"}, "3": {"2", "1"}}},
		{name: "blocker completed",
			tasks:     []Task{tk("1", StatusCompleted), tk("2", StatusPending, "1")},
			completed: 1},
		{name: "unknown blocker does not block",
			tasks: []Task{tk("2", StatusPending, "99")}},
		{name: "completed task is never blocked",
			tasks:     []Task{tk("1", StatusPending), tk("2", StatusCompleted, "1")},
			completed: 1},
		{name: "in progress and blocked",
			tasks:      []Task{tk("1", StatusPending), tk("2", StatusInProgress, "1", "1")},
			inProgress: []string{"2"},
			blocked:    map[string][]string{"2": {"1"}}},
		{name: "unknown status counts as open",
			tasks:   []Task{tk("1", "blocked"), tk("2", StatusPending, "1")},
			blocked: map[string][]string{"2": {"1"}}},
		{name: "duplicate id: open if any copy is open",
			tasks:     []Task{tk("1", StatusCompleted), tk("1", StatusPending), tk("2", StatusPending, "1")},
			completed: 1,
			blocked:   map[string][]string{"2": {"1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ComputeProgress(tt.tasks)
			if p.Total != len(tt.tasks) || p.Completed != tt.completed || p.Done() != tt.done {
				t.Errorf("progress = %d/%d done=%v, want %d/%d done=%v", p.Completed, p.Total, p.Done(), tt.completed, len(tt.tasks), tt.done)
			}
			var ip []string
			for _, r := range p.InProgress {
				ip = append(ip, r.ID)
				if r.ActiveForm != "a"+r.ID {
					t.Errorf("in-progress ref %+v lacks its activeForm", r)
				}
			}
			if !slices.Equal(ip, tt.inProgress) {
				t.Errorf("in progress = %q, want %q", ip, tt.inProgress)
			}
			got := make(map[string][]string)
			for _, r := range p.Blocked {
				got[r.ID] = r.WaitingOn
			}
			if len(got) != len(tt.blocked) {
				t.Fatalf("blocked = %q, want %q", got, tt.blocked)
			}
			for id, w := range tt.blocked {
				if !slices.Equal(got[id], w) {
					t.Errorf("blocked[%s] = %q, want %q", id, got[id], w)
				}
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	l := List{
		Tasks:    []Task{{ID: "1", Blocks: []string{"2"}, Metadata: map[string]any{"a": []any{"x"}, "m": map[string]any{"k": "v"}}, Extra: map[string]json.RawMessage{"e": json.RawMessage(`1`)}}},
		Progress: Progress{Blocked: []TaskRef{{ID: "1", WaitingOn: []string{"0"}}}},
		Errors:   []FileError{{Path: "p"}},
	}
	c := l.Clone()
	c.Tasks[0].Blocks[0] = "changed"
	c.Tasks[0].Metadata["a"].([]any)[0] = "changed"
	c.Tasks[0].Metadata["m"].(map[string]any)["k"] = "changed"
	c.Tasks[0].Extra["e"][0] = '2'
	c.Progress.Blocked[0].WaitingOn[0] = "changed"
	c.Errors[0].Path = "changed"
	if l.Tasks[0].Blocks[0] != "2" || l.Tasks[0].Metadata["a"].([]any)[0] != "x" ||
		l.Tasks[0].Metadata["m"].(map[string]any)["k"] != "v" || string(l.Tasks[0].Extra["e"]) != "1" ||
		l.Progress.Blocked[0].WaitingOn[0] != "0" || l.Errors[0].Path != "p" {
		t.Errorf("Clone shares memory with the original: %+v", l)
	}
}

func TestLoadUnreadableListDir(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "good", "1.json"), taskJSON("1", StatusPending, "fine"))
	writeFile(t, filepath.Join(root, "locked", "1.json"), taskJSON("1", StatusPending, "hidden"))
	if err := os.Chmod(filepath.Join(root, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	var (
		lists []List
		err   error
	)
	load := func() { lists, err = Load(root, "") }
	if os.Geteuid() == 0 {
		if !withoutDACOverride(load) {
			t.Skip("running as root, which lists a chmod 000 directory anyway, and cannot drop CAP_DAC_OVERRIDE here")
		}
	} else {
		load()
	}
	if err != nil {
		t.Fatal(err)
	}
	if l := findList(t, lists, "good"); len(l.Tasks) != 1 {
		t.Errorf("good list = %+v", l)
	}
	l := findList(t, lists, "locked")
	if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Err, "permission denied listing the task directory") {
		t.Errorf("locked list errors = %+v", l.Errors)
	}
	var b strings.Builder
	WriteText(&b, []List{l}, fixtureTime)
	if !strings.Contains(b.String(), "! locked/: permission denied") {
		t.Errorf("text output:\n%s", b.String())
	}
}
