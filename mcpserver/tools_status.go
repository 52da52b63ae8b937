package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// StatusTool reports system3 itself and every orchestrator at a glance.
func StatusTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("status",
		mcp.WithDescription(`Overview of system3 and every coding agent it supervises. Returns system3's version and uptime, the tmux server and any problem, counts of agents per status and per detailed state, the number of unacknowledged wakes, and one entry per orchestrator (an agent pane): name, target, pane, agent, status (active, blocked, complete, failed), detailed state (working, idle, awaiting_input, error, error_loop, rate_limited, exited, unknown; rate_limited is a usage limit, with resets_at, when it resets), task progress like "3/5", its question when blocked, tokens used and estimated cost (when known), and when it entered its state (since). Agents that need someone come first. Call this first; then get_session for details (the screen, its last line, the options) or wait_for_wake to be told when something needs you.`),
		readOnly("system3 status"),
	)
	// A call whose document is the same as the last one's (no state,
	// wake or count changed within the uptime's second; a capture that
	// changed nothing else is not a change here) answers with the same
	// bytes instead of encoding them again.
	last := newLastAnswer((*statusDoc).equal)
	return t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		doc, err := statusOf(cctx, e)
		if err != nil {
			return serviceError(err)
		}
		return last.result(doc)
	}
}

// statusOf is the status document: this machine's registry and wakes,
// and every other host's when hosts are configured.
func statusOf(ctx context.Context, e *Env) (statusDoc, error) {
	snap, err := e.Svc.Snapshot(ctx)
	if err != nil {
		return statusDoc{}, err
	}
	unacked, err := e.Svc.Wakes(ctx, api.WakeFilter{})
	if err != nil {
		return statusDoc{}, err
	}
	if e.Hosts != nil {
		snap, unacked = thisMachine(snap, unacked)
	}
	now := e.Clock()
	up := now.Sub(e.Started).Round(time.Second)
	doc := statusDoc{
		Version: e.Version, Started: e.Started, Uptime: up.String(), UptimeSeconds: int64(up / time.Second),
		TmuxServer: snap.Server, TmuxRunning: snap.Running, Problem: snap.Problem, ReadOnly: e.ReadOnly,
		NeedsPerson: api.NeedingPerson(unacked), ByStatus: map[string]int{}, ByState: map[string]int{},
		Orchestrators: []orchestrator{}, Untrusted: untrustedNote,
	}
	for _, s := range api.CoarseStates() {
		doc.ByStatus[s] = 0
	}
	for _, s := range api.States() {
		doc.ByState[s] = 0
	}
	blocked := doc.addSessions("", snap.Sessions, unacked, nil)
	if e.Hosts != nil {
		blocked = doc.addHosts(ctx, e.Hosts, len(snap.Sessions), unacked, now, blocked)
	}
	doc.Next = nextStep(doc.Orchestrators, blocked, len(unacked))
	return doc, nil
}

// addSessions counts sessions of host ("" for this machine) and adds an
// orchestrator for each agent pane, with the wakes needing someone on it;
// it returns blocked with the targets of the blocked ones added.
func (d *statusDoc) addSessions(host string, sessions []api.Session, wakes []api.Wake, blocked []string) []string {
	byPane := map[string]int{}
	for _, w := range wakes {
		if w.NeedsPerson() {
			byPane[w.Pane]++
		}
	}
	for _, s := range sessions {
		if !isAgent(s) {
			d.OtherPanes++
			continue
		}
		r := rowOf(s)
		o := orchestrator{
			Name: r.Name, Target: r.Target, Pane: r.Pane, Agent: r.Agent, Status: r.Status, State: r.State,
			Kind: r.Kind, Question: r.Question, ResetsAt: r.ResetsAt, Tasks: r.Tasks, Tokens: r.Tokens, CostUSD: r.CostUSD, NeedsPerson: byPane[s.Pane], Hint: r.Hint,
			Since: r.Since,
		}
		if host != "" {
			o.Host, o.Name, o.Target = host, api.JoinHost(host, r.Name), api.JoinHost(host, r.Target)
		}
		d.TotalTokens += o.Tokens
		d.TotalCostUSD += o.CostUSD
		d.ByStatus[o.Status]++
		d.ByState[o.State]++
		d.Orchestrators = append(d.Orchestrators, o)
		if o.Status == string(api.CoarseBlocked) {
			blocked = append(blocked, o.Target)
		}
	}
	return blocked
}

// addHosts adds every host's row, this one (with local sessions and its
// unacked wakes) first, and the orchestrators of the connected ones, then
// puts those needing someone first, whatever their host. Every host is
// asked at once, each within its own deadline: a host that is down is
// reported disconnected, never waited for.
func (d *statusDoc) addHosts(ctx context.Context, hosts Hosts, local int, unacked []api.Wake, now time.Time, blocked []string) []string {
	d.Hosts = []hostRow{{Name: api.LocalHost, State: "connected", LastSeen: now.UTC(), Sessions: local, NeedsPerson: api.NeedingPerson(unacked)}}
	for _, r := range hosts.Report(ctx) {
		d.Hosts = append(d.Hosts, hostRowOf(r))
		if !r.Connected {
			continue
		}
		d.NeedsPerson += api.NeedingPerson(r.Unacked)
		blocked = d.addSessions(r.Name, r.Snapshot.Sessions, r.Unacked, blocked)
	}
	for i := range d.Orchestrators {
		if d.Orchestrators[i].Host == "" {
			d.Orchestrators[i].Host = api.LocalHost
		}
	}
	slices.SortStableFunc(d.Orchestrators, func(a, b orchestrator) int {
		return boolRank(a.Status == string(api.CoarseBlocked)) - boolRank(b.Status == string(api.CoarseBlocked))
	})
	return blocked
}

// nextStep is status's next: what to do about the first blocked agent,
// or the unacknowledged wakes, or nothing.
func nextStep(orchs []orchestrator, blocked []string, unacked int) string {
	switch {
	case len(blocked) > 0 && isRemoteTarget(orchs, blocked[0]):
		return fmt.Sprintf("%d blocked: %s is on another host; wait_for_wake returns its wake, and system3 answer --session %s OPTION answers it there", len(blocked), blocked[0], blocked[0])
	case len(blocked) > 0:
		return fmt.Sprintf("%d blocked: call get_session with session %q to see why", len(blocked), blocked[0])
	case unacked > 0:
		return "call list_wakes to read the unacknowledged wakes"
	default:
		return "nothing needs you now; call wait_for_wake to be told when something does"
	}
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

// isRemoteTarget reports whether target is an orchestrator's of a host
// other than this one.
func isRemoteTarget(os []orchestrator, target string) bool {
	for _, o := range os {
		if o.Target == target {
			return o.Host != "" && o.Host != api.LocalHost
		}
	}
	return false
}

type statusDoc struct {
	Version       string         `json:"version"`
	Started       time.Time      `json:"started"`
	Uptime        string         `json:"uptime"`
	UptimeSeconds int64          `json:"uptime_seconds"`
	TmuxServer    string         `json:"tmux_server"`
	TmuxRunning   bool           `json:"tmux_running"`
	Problem       string         `json:"problem,omitempty"`
	ReadOnly      bool           `json:"read_only"`
	NeedsPerson   int            `json:"needs_person"`
	ByStatus      map[string]int `json:"by_status"`
	ByState       map[string]int `json:"by_state"`
	OtherPanes    int            `json:"other_panes"`
	// TotalTokens and TotalCostUSD add up the orchestrators' usage.
	TotalTokens   int64          `json:"total_tokens"`
	TotalCostUSD  float64        `json:"total_cost_usd"`
	Orchestrators []orchestrator `json:"orchestrators"`
	// Hosts are every host, this one (local) first, when hosts are
	// configured: connected, or disconnected with why and when last seen.
	Hosts []hostRow `json:"hosts,omitempty"`
	Next  string    `json:"next"`
	// Untrusted says which fields are text an agent printed.
	Untrusted string `json:"untrusted"`
}

// equal reports whether d and o encode to the same JSON: every field is
// the same (times to the same instant in the same location).
func (d *statusDoc) equal(o *statusDoc) bool {
	return d.Version == o.Version && d.Started == o.Started && d.Uptime == o.Uptime && d.UptimeSeconds == o.UptimeSeconds &&
		d.TmuxServer == o.TmuxServer && d.TmuxRunning == o.TmuxRunning && d.Problem == o.Problem && d.ReadOnly == o.ReadOnly &&
		d.NeedsPerson == o.NeedsPerson && maps.Equal(d.ByStatus, o.ByStatus) && maps.Equal(d.ByState, o.ByState) &&
		d.OtherPanes == o.OtherPanes && d.TotalTokens == o.TotalTokens && d.TotalCostUSD == o.TotalCostUSD && slices.Equal(d.Orchestrators, o.Orchestrators) && slices.Equal(d.Hosts, o.Hosts) && d.Next == o.Next && d.Untrusted == o.Untrusted
}

type orchestrator struct {
	// Host is set when hosts are configured: local, or the host a
	// HOST:SESSION name is on.
	Host        string    `json:"host,omitempty"`
	Name        string    `json:"name"`
	Target      string    `json:"target"`
	Pane        string    `json:"pane"`
	Agent       string    `json:"agent"`
	Status      string    `json:"status"`
	State       string    `json:"state"`
	Kind        string    `json:"kind,omitempty"`
	Question    string    `json:"question,omitempty"`
	ResetsAt    time.Time `json:"resets_at,omitzero"`
	Tasks       string    `json:"tasks,omitempty"`
	Tokens      int64     `json:"tokens,omitempty"`
	CostUSD     float64   `json:"cost_usd,omitempty"`
	NeedsPerson int       `json:"needs_person"`
	Hint        string    `json:"hint,omitempty"`
	// Since is when the current state began. The last capture's time
	// (list_sessions' updated) is left out: it moves at every capture of
	// a printing agent, and would make every call a new answer.
	Since time.Time `json:"since"`
}
