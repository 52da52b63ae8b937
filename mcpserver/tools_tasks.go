package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// ListTasksTool shows task lists with each task's status.
func ListTasksTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("list_tasks",
		mcp.WithDescription(`Show the Claude Code task lists system3 watches (~/.claude/tasks): per list its id, the session and agent writing it, progress like "3/5", the tasks in progress and the blocked ones, and every task with its status (pending, in_progress, completed), whether it is blocked and by which tasks. Name one list to also get each task's description. Subjects longer than 200 characters and descriptions longer than 2,000 are cut, ending "… (+N chars)", and the task says truncated: name the list and the task to get that one task whole.`),
		mcp.WithString("list", mcp.Description(`One task list id, like "PRD-AUTH-001"; omit for all lists.`), mcp.MaxLength(256)),
		mcp.WithString("task", mcp.Description(`One task id of list, like "3": returns that task whole (subject, description, metadata), nothing cut. Needs list.`), mcp.MaxLength(256)),
		argOrder("list", "task"),
		readOnly("List tasks"),
	)
	type args struct {
		List string `json:"list"`
		Task string `json:"task"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		if a.Task != "" {
			if a.List == "" {
				return mcp.NewToolResultError("task needs list: pass the id of the task list the task is in (list_tasks without arguments shows them)"), nil
			}
			td, err := e.Svc.Task(cctx, api.TaskRequest{List: a.List, Task: a.Task})
			if errors.Is(err, api.ErrUnknownTask) {
				return mcp.NewToolResultError(err.Error() + "; call list_tasks with list to see its task ids"), nil
			}
			if err != nil {
				return serviceError(err)
			}
			return result(map[string]any{"list": a.List, "task": td})
		}
		lists, err := e.Svc.TaskLists(cctx, a.List)
		if err != nil {
			return serviceError(err)
		}
		out := make([]taskListView, 0, len(lists))
		for _, l := range lists {
			out = append(out, listView(l, a.List != ""))
		}
		return result(map[string]any{"lists": out, "count": len(out)})
	})
}

type taskListView struct {
	ID         string     `json:"id"`
	Session    string     `json:"session,omitempty"`
	Agent      string     `json:"agent,omitempty"`
	Progress   string     `json:"progress"`
	Done       bool       `json:"done"`
	InProgress []string   `json:"in_progress"`
	Blocked    int        `json:"blocked"`
	LastChange *string    `json:"last_change"`
	Errors     []string   `json:"errors,omitempty"`
	Tasks      []taskView `json:"tasks"`
}

type taskView struct {
	ID          string   `json:"id"`
	Subject     string   `json:"subject"`
	Status      string   `json:"status"`
	Blocked     bool     `json:"blocked,omitempty"`
	BlockedBy   []string `json:"blocked_by,omitempty"`
	Owner       string   `json:"owner,omitempty"`
	ActiveForm  string   `json:"active_form,omitempty"`
	Description string   `json:"description,omitempty"`
	// Truncated: a text was cut; list_tasks with list and task has it whole.
	Truncated bool `json:"truncated,omitempty"`
}

func taskOf(t api.TaskDoc, description bool) taskView {
	v := taskView{ID: t.ID, Subject: t.Subject, Status: t.Status, Blocked: t.Blocked, BlockedBy: t.BlockedBy, Owner: t.Owner, Truncated: t.Truncated}
	if t.Status == "in_progress" {
		v.ActiveForm = t.ActiveForm
	}
	if description {
		v.Description = t.Description
	}
	if len(v.BlockedBy) == 0 {
		v.BlockedBy = nil
	}
	return v
}

func listView(l api.TaskListDoc, description bool) taskListView {
	v := taskListView{
		ID: l.ID, Session: l.Session, Agent: l.Agent, Done: l.Progress.Done, LastChange: l.LastChange,
		Progress:   fmt.Sprintf("%d/%d", l.Progress.Completed, l.Progress.Total),
		InProgress: []string{}, Blocked: len(l.Progress.Blocked), Tasks: make([]taskView, 0, len(l.Tasks)),
	}
	for _, a := range l.Progress.InProgress {
		v.InProgress = append(v.InProgress, a.Subject)
	}
	for _, er := range l.Errors {
		v.Errors = append(v.Errors, er.Path+": "+er.Error)
	}
	for _, t := range l.Tasks {
		v.Tasks = append(v.Tasks, taskOf(t, description))
	}
	return v
}
