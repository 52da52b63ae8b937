package mcpserver

import (
	"slices"
	"strconv"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// isAgent reports whether a pane runs (or ran) a coding agent, as opposed
// to a shell or an unrecognised program.
func isAgent(s api.Session) bool {
	return s.IsAgent()
}

// progressText is "3/5", or "" without a task list.
func progressText(t *api.TaskProgress) string {
	if t == nil {
		return ""
	}
	return strconv.Itoa(t.Completed) + "/" + strconv.Itoa(t.Total)
}

// sessionRow is one session in lists: enough to decide what to look at.
type sessionRow struct {
	// Host is the host the session is on, when hosts are configured
	// (local for this machine); a remote session's name and target are
	// then HOST:SESSION and HOST:TARGET.
	Host     string `json:"host,omitempty"`
	Name     string `json:"name"`   // tmux session name
	Target   string `json:"target"` // session:window.pane
	Pane     string `json:"pane"`
	Agent    string `json:"agent"`
	Status   string `json:"status"` // active, blocked, complete, failed
	State    string `json:"state"`  // detailed
	Kind     string `json:"kind,omitempty"`
	Question string `json:"question,omitempty"`
	// About is what the prompt is about: the command, the file, the URL,
	// the tool and its input.
	About   string   `json:"about,omitempty"`
	Options []string `json:"options,omitempty"`
	// Prompt is the prompt's identity: pass it to answer_prompt, which
	// then types only while this very prompt is on screen.
	Prompt string `json:"prompt,omitempty"`
	// ResetsAt is when the usage limit holding a rate_limited agent
	// resets, as its screen says (to the minute).
	ResetsAt time.Time `json:"resets_at,omitzero"`
	Tasks    string    `json:"tasks,omitempty"` // "3/5"
	TaskList string    `json:"task_list,omitempty"`
	LastLine string    `json:"last_line,omitempty"`
	// Hint says what to do about the state, when something can be done
	// (a screen no rule explains: capture it).
	Hint string `json:"hint,omitempty"`
	// Tokens and CostUSD are what the agent's session used so far (from
	// its transcript), when known; the cost needs usage.prices.
	Tokens  int64     `json:"tokens,omitempty"`
	CostUSD float64   `json:"cost_usd,omitempty"`
	Since   time.Time `json:"since"`
	Updated time.Time `json:"updated"`
}

// equal reports whether r and o encode to the same JSON: every field is
// the same (times to the same instant in the same location).
func (r *sessionRow) equal(o *sessionRow) bool {
	return r.Host == o.Host && r.Name == o.Name && r.Target == o.Target && r.Pane == o.Pane && r.Agent == o.Agent &&
		r.Status == o.Status && r.State == o.State && r.Kind == o.Kind && r.Question == o.Question && r.About == o.About &&
		slices.Equal(r.Options, o.Options) && r.Prompt == o.Prompt && r.ResetsAt == o.ResetsAt && r.Tasks == o.Tasks &&
		r.TaskList == o.TaskList && r.LastLine == o.LastLine && r.Hint == o.Hint && r.Tokens == o.Tokens && r.CostUSD == o.CostUSD &&
		r.Since == o.Since && r.Updated == o.Updated
}

func rowOf(s api.Session) sessionRow {
	var tokens int64
	var cost float64
	if u := s.Usage; u != nil {
		tokens, cost = u.Total(), u.CostUSD
	}
	return sessionRow{
		Tokens: tokens, CostUSD: cost,
		Name: s.Session, Target: s.Target, Pane: s.Pane, Agent: s.Agent,
		Status: string(s.Coarse()), State: string(s.State), Kind: s.Kind,
		Question: s.Question, About: s.Detail, Options: s.Options, Prompt: s.Prompt, ResetsAt: s.ResetsAt,
		Tasks: progressText(s.Tasks), TaskList: s.TaskList,
		LastLine: s.LastLine, Since: s.Since, Updated: s.Updated, Hint: s.Hint(),
	}
}
