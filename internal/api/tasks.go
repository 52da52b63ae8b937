package api

import "encoding/json"

// A task list as the service, the socket and the MCP server return it:
// the tasks package's JSON document (snake_case keys, [] not null, RFC
// 3339 times), independent of its Go model.
type (
	TaskListDoc struct {
		ID         string          `json:"id"`
		Path       string          `json:"path"`
		Legacy     bool            `json:"legacy"`
		Session    string          `json:"session"`
		Agent      string          `json:"agent"`
		LastChange *string         `json:"last_change"`
		Progress   TaskProgressDoc `json:"progress"`
		Tasks      []TaskDoc       `json:"tasks"`
		Errors     []TaskErrorDoc  `json:"errors"`
	}
	TaskProgressDoc struct {
		Completed  int              `json:"completed"`
		Total      int              `json:"total"`
		Done       bool             `json:"done"`
		InProgress []TaskActiveDoc  `json:"in_progress"`
		Blocked    []TaskBlockedDoc `json:"blocked"`
	}
	TaskActiveDoc struct {
		ID         string `json:"id"`
		Subject    string `json:"subject"`
		ActiveForm string `json:"active_form"`
	}
	TaskBlockedDoc struct {
		ID        string   `json:"id"`
		Subject   string   `json:"subject"`
		WaitingOn []string `json:"waiting_on"`
	}
	TaskDoc struct {
		ID          string                     `json:"id"`
		Subject     string                     `json:"subject"`
		Description string                     `json:"description"`
		ActiveForm  string                     `json:"active_form"`
		Status      string                     `json:"status"`
		Blocked     bool                       `json:"blocked"`
		Owner       string                     `json:"owner"`
		Blocks      []string                   `json:"blocks"`
		BlockedBy   []string                   `json:"blocked_by"`
		Metadata    map[string]any             `json:"metadata"`
		Extra       map[string]json.RawMessage `json:"extra"`
		Source      string                     `json:"source"`
		Modified    *string                    `json:"modified"`
		// Truncated: a text was cut for a view of many tasks (marked
		// "… (+N chars)"); ask for this one task to get it whole.
		Truncated bool `json:"truncated,omitempty"`
	}
	TaskErrorDoc struct {
		Path  string  `json:"path"`
		Error string  `json:"error"`
		Since *string `json:"since"`
	}
)
