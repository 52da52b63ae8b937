package fakeagent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Task statuses, as Claude Code writes them.
const (
	statusPending    = "pending"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
)

// taskFile is one task in Claude Code's format (2.1.x): the fields in the
// order the CLI writes them.
type taskFile struct {
	ID          string   `json:"id"`
	Subject     string   `json:"subject"`
	Description string   `json:"description"`
	ActiveForm  string   `json:"activeForm"`
	Status      string   `json:"status"`
	Blocks      []string `json:"blocks"`
	BlockedBy   []string `json:"blockedBy"`
}

// taskList writes a task list the way Claude Code does with
// CLAUDE_CODE_TASK_LIST_ID set: <root>/<id>/<n>.json and an empty .lock.
// Every write goes to a temporary file renamed into place, so a reader
// never sees half a task.
type taskList struct {
	dir   string
	tasks []taskFile
}

// validListID rejects ids that would escape the tasks root.
func validListID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") {
		return fmt.Errorf("task list id %q is not a plain directory name", id)
	}
	return nil
}

func openTaskList(root, id string) (*taskList, error) {
	if err := validListID(id); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create task list: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create task list: %w", err)
	}
	lock.Close()
	return &taskList{dir: dir}, nil
}

// create adds a pending task and returns its id.
func (l *taskList) create(subject, description, activeForm string) (string, error) {
	t := taskFile{ID: strconv.Itoa(len(l.tasks) + 1), Subject: subject, Description: description,
		ActiveForm: activeForm, Status: statusPending, Blocks: []string{}, BlockedBy: []string{}}
	l.tasks = append(l.tasks, t)
	return t.ID, l.write(t)
}

// set changes a task's status.
func (l *taskList) set(id, status string) error {
	for i := range l.tasks {
		if l.tasks[i].ID == id {
			l.tasks[i].Status = status
			return l.write(l.tasks[i])
		}
	}
	return fmt.Errorf("no task %s", id)
}

func (l *taskList) write(t taskFile) error {
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	// Dot files are not task files: readers skip the temporary one.
	tmp, err := os.CreateTemp(l.dir, "."+t.ID+".json.tmp*")
	if err != nil {
		return fmt.Errorf("write task %s: %w", t.ID, err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(l.dir, t.ID+".json"))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write task %s: %w", t.ID, err)
	}
	return nil
}

// setTask changes a task's status in the file and on screen.
func (a *agent) setTask(id, status string) {
	if a.list == nil {
		return
	}
	if err := a.list.set(id, status); err != nil && a.listErr == nil {
		a.listErr = err
	}
	a.syncTasks()
	if status == statusInProgress && a.m.mode == modeWorking {
		a.m.spin.verb = a.activeForm()
	}
}

// createTasks writes a plan as pending tasks.
func (a *agent) createTasks(plan []plannedTask) {
	if a.list == nil {
		return
	}
	for _, t := range plan {
		if _, err := a.list.create(t.subject, t.description, t.activeForm); err != nil && a.listErr == nil {
			a.listErr = err
		}
	}
	a.syncTasks()
}

func (a *agent) syncTasks() {
	a.m.tasks = a.m.tasks[:0]
	for _, t := range a.list.tasks {
		a.m.tasks = append(a.m.tasks, taskView{subject: t.Subject, status: t.Status})
	}
}

// taskStatus is a task's status, "" without a list.
func (a *agent) taskStatus(id string) string {
	if a.list == nil {
		return ""
	}
	for _, t := range a.list.tasks {
		if t.ID == id {
			return t.Status
		}
	}
	return ""
}
