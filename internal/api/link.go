package api

import (
	"fmt"
	"regexp"
	"strings"
)

// LinkRequest links a session (or one pane) to a task list, so the session
// shows that list's progress whatever its agent's process says. A link made
// by session name survives the pane being recreated (the agent restarted in
// a new pane of that session); a link made by pane id holds for that pane
// only. An empty TaskList removes the link.
type LinkRequest struct {
	Target
	TaskList string `json:"task_list"`
	Origin   string `json:"origin"`
}

// taskListIDRE is what a task list id may look like: a directory name
// under the tasks dir.
var taskListIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidTaskListID reports why id cannot name a task list ("" when it can).
func ValidTaskListID(id string) string {
	if !taskListIDRE.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Sprintf("%q is not a task list id: use letters, digits, '.', '_' and '-' (like PRD-AUTH), at most 128 characters", id)
	}
	return ""
}
