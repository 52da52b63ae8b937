package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// ListSessionsTool lists the watched panes with their state, filtered.
func ListSessionsTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	states := append(api.CoarseStates(), api.States()...)
	t := mcp.NewTool("list_sessions",
		mcp.WithDescription(`List the agent sessions system3 watches, one row each: name (tmux session), target (session:window.pane), pane id, agent, status (active, blocked, complete, failed), detailed state, kind, the question and options when it waits for an answer, resets_at when a usage limit holds it (state rate_limited), task progress, last line and times. Those needing someone come first. Filter by state (a status or a detailed state), agent, or a glob on the session name. Use the name, target or pane of a row as the session argument of the other tools.`),
		mcp.WithString("state", mcp.Description("Only sessions in this status or detailed state."), mcp.Enum(states...)),
		mcp.WithString("agent", mcp.Description(`Only this agent: "claude", "codex", "gemini", "aider"...`), mcp.MaxLength(64)),
		mcp.WithString("name", mcp.Description(`Glob on the tmux session name, like "orch-*".`), mcp.MaxLength(256)),
		mcp.WithBoolean("include_shells", mcp.Description("Also list panes where no coding agent runs (shells, other programs)."), mcp.DefaultBool(false)),
		argOrder("state", "agent", "name", "include_shells"),
		readOnly("List sessions"),
	)
	// Encoded once per change of what it lists, as status.
	last := newLastAnswer((*sessionsDoc).equal)
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a sessionsQuery) (*mcp.CallToolResult, error) {
		if a.Name != "" {
			if _, err := path.Match(a.Name, ""); err != nil {
				return badInput("name %q is not a valid glob; use *, ? and [a-z], like \"orch-*\"", a.Name)
			}
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		snap, err := e.Svc.Snapshot(cctx)
		if err != nil {
			return serviceError(err)
		}
		if e.Hosts == nil {
			return last.result(sessionsAnswer(a.add(nil, "", a.Name, snap.Sessions), len(snap.Sessions), nil))
		}
		snap, _ = thisMachine(snap, nil)
		hostGlob, nameGlob := "*", a.Name
		if a.Name != "" {
			if hostGlob, nameGlob, err = splitHostGlob(a.Name); err != nil {
				return badInput("name %q: %v; use HOST:GLOB like \"web1:orch-*\"", a.Name, err)
			}
		}
		return last.result(sessionsOnHosts(cctx, e, a, snap, hostGlob, nameGlob))
	})
}

// sessionsQuery is list_sessions' arguments.
type sessionsQuery struct {
	State         string `json:"state"`
	Agent         string `json:"agent"`
	Name          string `json:"name"`
	IncludeShells bool   `json:"include_shells"`
}

// add appends to rows those of sessions on host the query selects, their
// session names matching nameGlob. host is "" without hosts configured; a
// remote host prefixes names and targets with itself.
func (q sessionsQuery) add(rows []sessionRow, host, nameGlob string, sessions []api.Session) []sessionRow {
	if rows == nil {
		rows = []sessionRow{}
	}
	for _, s := range sessions {
		if !q.IncludeShells && !isAgent(s) && q.Agent == "" {
			continue
		}
		r := rowOf(s)
		if q.State != "" && r.State != q.State && r.Status != q.State {
			continue
		}
		if q.Agent != "" && !strings.EqualFold(q.Agent, s.Agent) {
			continue
		}
		if nameGlob != "" && !globMatch(nameGlob, s.Session) {
			continue
		}
		if host != "" {
			r.Host = host
			if host != api.LocalHost {
				r.Name, r.Target = api.JoinHost(host, r.Name), api.JoinHost(host, r.Target)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// sessionsDoc is list_sessions' answer. Its fields are in the order of
// their names, as the answer always had them.
type sessionsDoc struct {
	Count int `json:"count"`
	// Hosts are every host's row when hosts are configured.
	Hosts     []hostRow    `json:"hosts,omitempty"`
	Sessions  []sessionRow `json:"sessions"`
	Untrusted string       `json:"untrusted"`
	Watched   int          `json:"watched"`
}

// sessionsAnswer is list_sessions' answer: the rows, and every host's
// row when hosts are configured.
func sessionsAnswer(rows []sessionRow, watched int, hosts []hostRow) sessionsDoc {
	return sessionsDoc{Count: len(rows), Hosts: hosts, Sessions: rows, Untrusted: untrustedNote, Watched: watched}
}

// equal reports whether d and o encode to the same JSON.
func (d *sessionsDoc) equal(o *sessionsDoc) bool {
	return d.Count == o.Count && slices.Equal(d.Hosts, o.Hosts) && d.Untrusted == o.Untrusted && d.Watched == o.Watched &&
		slices.EqualFunc(d.Sessions, o.Sessions, func(a, b sessionRow) bool { return a.equal(&b) })
}

// sessionsOnHosts is list_sessions' answer with hosts configured: the
// rows of this machine (snap) and of every connected host hostGlob
// selects, those needing someone first whatever their host.
func sessionsOnHosts(ctx context.Context, e *Env, q sessionsQuery, snap api.Snapshot, hostGlob, nameGlob string) sessionsDoc {
	var rows []sessionRow
	if globMatch(hostGlob, api.LocalHost) {
		rows = q.add(rows, api.LocalHost, nameGlob, snap.Sessions)
	}
	watched := len(snap.Sessions)
	local := hostRow{Name: api.LocalHost, State: "connected", LastSeen: e.Clock().UTC(), Sessions: len(snap.Sessions)}
	if evs, err := e.Svc.Wakes(ctx, api.WakeFilter{}); err == nil {
		_, evs = thisMachine(api.Snapshot{}, evs)
		local.NeedsPerson = api.NeedingPerson(evs)
	}
	hosts := []hostRow{local}
	for _, r := range e.Hosts.Report(ctx) {
		hosts = append(hosts, hostRowOf(r))
		watched += len(r.Snapshot.Sessions)
		if r.Connected && globMatch(hostGlob, r.Name) {
			rows = q.add(rows, r.Name, nameGlob, r.Snapshot.Sessions)
		}
	}
	if rows == nil {
		rows = []sessionRow{}
	}
	slices.SortStableFunc(rows, func(a, b sessionRow) int {
		return boolRank(a.Status == string(api.CoarseBlocked)) - boolRank(b.Status == string(api.CoarseBlocked))
	})
	return sessionsAnswer(rows, watched, hosts)
}

// GetSessionTool shows everything about one session, with its screen.
func GetSessionTool(e *Env) (mcp.Tool, server.ToolHandlerFunc) {
	t := mcp.NewTool("get_session",
		mcp.WithDescription(`Everything system3 knows about one agent session: its state and kind with the evidence (the rule and the screen lines it matched), the question and numbered options when it waits for an answer, its task list with each task's status, its recent wakes, and the last lines of its screen (40 by default, up to 500; a first line says how many earlier lines were cut). Name the session by tmux session name, target (session:window.pane) or pane id; a session with several agent panes needs the target or pane.`),
		mcp.WithString("session", mcp.Description(`Session name ("orch-auth"), target ("orch-auth:0.1") or pane id ("%3").`), mcp.MaxLength(256)),
		mcp.WithString("pane", mcp.Description(`Pane id like "%3", instead of session.`), mcp.MaxLength(32)),
		mcp.WithInteger("lines", mcp.Description("How many of the screen's last lines to return."), mcp.Min(1), mcp.Max(MaxScreenLines), mcp.DefaultNumber(DefaultScreenLines)),
		argOrder("session", "pane", "lines"),
		readOnly("Get session"),
	)
	type args struct {
		Session string `json:"session"`
		Pane    string `json:"pane"`
		Lines   int    `json:"lines"`
	}
	return t, handlerFunc(t, func(ctx context.Context, req mcp.CallToolRequest, a args) (*mcp.CallToolResult, error) {
		if a.Session == "" && a.Pane == "" {
			return badInput(`name the session: {"session": "orch-auth"} (a name, target or pane from list_sessions), or {"pane": "%%3"}`)
		}
		if a.Lines == 0 {
			a.Lines = DefaultScreenLines
		}
		cctx, cancel := withTimeout(ctx, callTimeout)
		defer cancel()
		snap, err := e.Svc.Snapshot(cctx)
		if err != nil {
			return serviceError(err)
		}
		sess, err := api.ResolveTarget(api.Target{Session: a.Session, Pane: a.Pane}, snap.Sessions, snap.Server)
		if err != nil {
			return serviceError(err)
		}
		d, err := sessionDetails(cctx, e.Svc, sess, a.Lines)
		if err != nil {
			return serviceError(err)
		}
		return result(d)
	})
}

// sessionDetail is get_session's answer (and a session resource's).
type sessionDetail struct {
	sessionRow
	Window     string       `json:"window"`
	Command    string       `json:"command"`
	Path       string       `json:"path"`
	Detail     string       `json:"detail,omitempty"`
	Evidence   api.Evidence `json:"evidence"`
	ErrorCount int          `json:"error_count,omitempty"`
	// TaskItems are the tasks of the session's task list.
	TaskItems   []taskView `json:"task_items,omitempty"`
	RecentWakes []api.Wake `json:"recent_wakes"`
	Screen      string     `json:"screen"`
	// ScreenLinesCut counts the earlier lines left out of Screen.
	ScreenLinesCut int `json:"screen_lines_cut"`
	// Untrusted says which fields are text an agent printed.
	Untrusted string `json:"untrusted"`
	Next      string `json:"next,omitempty"`
}

// recentWakes is how many of a session's wakes get_session shows.
const recentWakes = 5

func sessionDetails(ctx context.Context, svc Service, s api.Session, lines int) (sessionDetail, error) {
	d := sessionDetail{
		sessionRow: rowOf(s), Window: s.Window, Command: s.Command, Path: s.Path, Detail: s.Detail,
		Evidence: s.Evidence, ErrorCount: s.ErrorCount, RecentWakes: []api.Wake{}, Untrusted: untrustedNote,
	}
	if d.Evidence.Lines == nil {
		d.Evidence.Lines = []string{}
	}
	if s.TaskList != "" {
		lists, err := svc.TaskLists(ctx, s.TaskList)
		if err != nil && !errors.Is(err, api.ErrUnknownList) {
			return d, err
		}
		for _, l := range lists {
			for _, t := range l.Tasks {
				d.TaskItems = append(d.TaskItems, taskOf(t, false))
			}
		}
	}
	evs, err := svc.Wakes(ctx, api.WakeFilter{IncludeAcked: true, IncludeResolved: true, Session: globEscape(s.Session)})
	if err != nil {
		return d, err
	}
	for _, ev := range evs {
		if ev.Pane == s.Pane {
			d.RecentWakes = append(d.RecentWakes, ev)
		}
	}
	if n := len(d.RecentWakes); n > recentWakes {
		d.RecentWakes = d.RecentWakes[n-recentWakes:]
	}
	// Ask for as much scrollback as lines, so a short screen still fills
	// the request; blank lines at the bottom are dropped before cutting.
	p, err := svc.Preview(ctx, api.PreviewRequest{Target: api.Target{Pane: s.Pane}, History: lines})
	if err != nil {
		return d, err
	}
	all := p.Lines
	for len(all) > 0 && strings.TrimSpace(all[len(all)-1]) == "" {
		all = all[:len(all)-1]
	}
	cut := p.Truncated
	if len(all) > lines {
		cut += len(all) - lines
		all = all[len(all)-lines:]
	}
	d.ScreenLinesCut = cut
	if cut > 0 {
		more := fmt.Sprintf("pass lines up to %d to see more", MaxScreenLines)
		if lines >= MaxScreenLines {
			more = fmt.Sprintf("%d is the most get_session returns", MaxScreenLines)
		}
		all = append([]string{fmt.Sprintf("[… %d earlier lines not shown; %s]", cut, more)}, all...)
	}
	d.Screen = strings.Join(all, "\n")
	switch s.Coarse() {
	case api.CoarseBlocked:
		if s.State == "awaiting_input" {
			d.Next = fmt.Sprintf("answer with answer_prompt (session %q, an option number, yes or no), or send text with inject_guidance", s.Target)
		} else {
			d.Next = fmt.Sprintf("read the error above; send guidance with inject_guidance (session %q) or stop it with interrupt", s.Target)
		}
	case api.CoarseFailed, api.CoarseComplete:
		d.Next = "the agent has exited; its last lines are above"
	}
	return d, nil
}

// globEscape makes a session name match itself as a path.Match pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
