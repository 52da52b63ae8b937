package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// spawnTimeout bounds a spawn from the dashboard: git, the agent's ready
// wait and the first prompt.
const spawnTimeout = 2 * time.Minute

// stopTimeout bounds a stop from the dashboard: the interrupt, the kill
// and git (status, worktree remove).
const stopTimeout = 30 * time.Second

type (
	// spawnProgressMsg is one step of a spawn under way.
	spawnProgressMsg struct {
		text string
		ch   <-chan string
	}
	// spawnDoneMsg ends a spawn.
	spawnDoneMsg struct {
		initiative string
		res        api.SpawnResult
		err        error
	}
	// stopDoneMsg ends a stop.
	stopDoneMsg struct {
		session string
		res     api.StopResult
		err     error
	}
	// linkDoneMsg ends a link.
	linkDoneMsg struct {
		target string
		list   string
		sess   api.Session
		err    error
	}
)

// The spawn form's fields, in order.
const (
	spawnInitiative = iota
	spawnGoal
	spawnRepo
	spawnBase
	spawnAgent
	spawnTaskList
	spawnContext
)

// spawnFields are the form's fields; agents are the configured agents'
// names, the only ones the form accepts (a command line is the CLI's).
func spawnFields(agents []string) []fieldSpec {
	list := strings.Join(agents, ", ")
	agentCheck := func(v string) string {
		v = strings.TrimSpace(v)
		if v == "" || slices.Contains(agents, v) {
			return ""
		}
		return "agent " + clean(v) + " is not configured; name one of: " + list
	}
	return []fieldSpec{
		spawnInitiative: {label: "initiative", placeholder: "auth-login (branch, trees/NAME, session orch-NAME)", required: true, limit: 48},
		spawnGoal:       {label: "goal", placeholder: "what the orchestrator is to achieve", required: true, limit: 4000},
		spawnRepo:       {label: "repo", placeholder: "the dashboard's working directory", limit: 4096},
		spawnBase:       {label: "base", placeholder: "HEAD", limit: 256},
		spawnAgent:      {label: "agent", placeholder: "claude (configured: " + list + ")", limit: 256, check: agentCheck},
		spawnTaskList:   {label: "task list", placeholder: "PRD-<INITIATIVE>", limit: 128},
		spawnContext:    {label: "context", placeholder: "more for the first prompt (optional)", limit: 4000},
	}
}

// openSpawn opens the spawn form.
func (m *Model) openSpawn() tea.Cmd {
	if !m.feats.Orchestrators {
		m.setStatus(levelWarn, "this dashboard cannot spawn orchestrators; use `system3 spawn` in a terminal")
		return nil
	}
	if m.spawning != "" {
		m.setStatus(levelWarn, "spawning "+clean(m.spawning)+" already; wait for it to finish")
		return nil
	}
	m.input = inputForm
	return m.form.Open(formSpawn, "spawn an orchestrator", api.Session{}, spawnFields(m.agents))
}

// openLink opens the link form for the selected session.
func (m *Model) openLink() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	m.input = inputForm
	return m.form.Open(formLink, "link "+clean(s.Target)+" to a task list (empty: remove the link)", s, []fieldSpec{
		{label: "task list", placeholder: "PRD-AUTH", value: s.TaskList, limit: 128},
	})
}

// openStop opens the stop confirmation for the selected session, when it
// is a spawned orchestrator. Stop kills a whole tmux session, and a bare
// name means orch-NAME first, so only orch-* sessions are stopped from
// here: the selected row then names exactly the session that goes.
func (m *Model) openStop() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	if s.Host != "" {
		m.setStatus(levelWarn, onHost(s, "stop"))
		return nil
	}
	if !m.feats.Orchestrators {
		m.setStatus(levelWarn, "this dashboard cannot stop orchestrators; use `system3 stop NAME` in a terminal")
		return nil
	}
	initiative, ok := strings.CutPrefix(s.Session, api.OrchestratorPrefix)
	if !ok || initiative == "" {
		m.setStatus(levelWarn, "only spawned orchestrators (sessions named "+api.OrchestratorPrefix+"*) can be stopped from here; "+
			clean(s.Session)+" is not one: x interrupts its agent")
		return nil
	}
	if m.stopping != "" {
		m.setStatus(levelWarn, "stopping "+clean(m.stopping)+" already; wait for it to finish")
		return nil
	}
	m.showHelp = false
	m.input = inputForm
	title := fmt.Sprintf("stop orchestrator %s: interrupt its agent and kill session %s", clean(initiative), clean(s.Session))
	return m.form.Open(formStop, title, s, []fieldSpec{
		{label: "remove worktree? (y/N)", placeholder: "n: keep trees/" + clean(initiative) + " (the branch is always kept)", limit: 3, check: yesNo},
	})
}

// yesNo accepts an empty answer (no), y, yes, n or no.
func yesNo(v string) string {
	if _, ok := parseYesNo(v); !ok {
		return "answer y or n (empty: n)"
	}
	return ""
}

func parseYesNo(v string) (yes, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "y", "yes":
		return true, true
	case "", "n", "no":
		return false, true
	}
	return false, false
}

// onFormSubmit runs what a form asked for.
func (m *Model) onFormSubmit(msg formSubmitMsg) tea.Cmd {
	m.closeInput()
	switch msg.kind {
	case formSpawn:
		v := msg.values
		req := api.SpawnRequest{Initiative: v[spawnInitiative], Goal: v[spawnGoal], Repo: v[spawnRepo], Base: v[spawnBase],
			Agent: strings.TrimSpace(v[spawnAgent]), TaskList: v[spawnTaskList], Context: v[spawnContext], Origin: origin}
		m.spawning = req.Initiative
		m.setStatus(levelInfo, "spawning "+clean(req.Initiative)+"…")
		ch := make(chan string, 16)
		return tea.Batch(runSpawn(m.ctx, m.svc, req, ch), nextSpawnStep(ch))
	case formLink:
		// By session name when the session has one pane, so the link
		// holds if the agent is restarted in a new pane.
		t := api.Target{Pane: msg.sess.Pane}
		n := 0
		for _, s := range m.sessions {
			if s.Session == msg.sess.Session {
				n++
			}
		}
		name := msg.sess.Target
		if n == 1 {
			t, name = api.Target{Session: msg.sess.Session}, msg.sess.Session
		}
		m.setStatus(levelInfo, "linking "+clean(name)+"…")
		return link(m.ctx, m.svc, t, name, msg.values[0])
	case formStop:
		remove, _ := parseYesNo(msg.values[0]) // the form checked it
		req := api.StopRequest{Name: msg.sess.Session, RemoveWorktree: remove, Origin: origin}
		m.stopping = req.Name
		m.setStatus(levelInfo, "stopping "+clean(req.Name)+"…")
		return runStop(m.ctx, m.svc, req)
	case formFinish:
		return m.submitFinish(msg)
	}
	return nil
}

func (m *Model) onStopDone(msg stopDoneMsg) {
	m.stopping = ""
	r := msg.res
	if msg.err != nil {
		if r.Status != "" { // stopped, but the worktree could not go
			m.setStatus(levelError, "✖ stopped "+clean(r.Session)+", but: "+clean(msg.err.Error()))
			return
		}
		m.setStatus(levelError, "✖ could not stop "+clean(msg.session)+": "+clean(msg.err.Error()))
		return
	}
	text := "stopped " + clean(r.Session)
	if r.Interrupted {
		text += " (its agent was interrupted first)"
	}
	branch := ""
	if r.Branch != "" {
		branch = "; branch " + clean(r.Branch) + " kept"
	}
	switch {
	case r.Removed:
		m.setStatus(levelOK, text+" · worktree "+clean(r.Worktree)+" removed"+branch)
	case r.Worktree != "":
		m.setStatus(levelOK, text+" · worktree "+clean(r.Worktree)+" kept"+branch)
	case r.Detail != "":
		m.setStatus(levelWarn, text+" · "+clean(r.Detail))
	default:
		m.setStatus(levelOK, text)
	}
}

func (m *Model) onSpawnDone(msg spawnDoneMsg) {
	m.spawning = ""
	if msg.err != nil {
		m.setStatus(levelError, "✖ "+clean(msg.err.Error()))
		return
	}
	r := msg.res
	text := fmt.Sprintf("spawned %s in %s (task list %s)", clean(r.Session), clean(r.Worktree), clean(r.TaskList))
	if r.AutoTrusted {
		text += " · trusted the new worktree"
	}
	if r.Detail != "" {
		m.setStatus(levelWarn, text+" · "+clean(r.Detail))
		return
	}
	m.setStatus(levelOK, text)
}

func (m *Model) onLinkDone(msg linkDoneMsg) {
	switch {
	case msg.err != nil:
		m.setStatus(levelError, "✖ could not link "+clean(msg.target)+": "+clean(msg.err.Error()))
	case msg.list == "":
		m.setStatus(levelOK, "removed the task list link of "+clean(msg.target))
	case msg.sess.Tasks != nil:
		m.setStatus(levelOK, fmt.Sprintf("linked %s to %s (%d/%d done)", clean(msg.target), clean(msg.list), msg.sess.Tasks.Completed, msg.sess.Tasks.Total))
	default:
		m.setStatus(levelOK, "linked "+clean(msg.target)+" to "+clean(msg.list))
	}
}

// runSpawn spawns, reporting each step on ch, which it closes when done.
func runSpawn(ctx context.Context, lc facade.Orchestrators, req api.SpawnRequest, ch chan<- string) tea.Cmd {
	return func() tea.Msg {
		defer close(ch)
		ctx, cancel := context.WithTimeout(ctx, spawnTimeout)
		defer cancel()
		req.Progress = func(_, msg string) {
			select {
			case ch <- msg:
			default: // a slow screen skips a step; the result still comes
			}
		}
		res, err := lc.Spawn(ctx, req)
		return spawnDoneMsg{initiative: req.Initiative, res: res, err: err}
	}
}

// runStop stops an orchestrator.
func runStop(ctx context.Context, lc facade.Orchestrators, req api.StopRequest) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, stopTimeout)
		defer cancel()
		res, err := lc.Stop(ctx, req)
		return stopDoneMsg{session: req.Name, res: res, err: err}
	}
}

// nextSpawnStep reads one step of a spawn; it is issued again after each.
func nextSpawnStep(ch <-chan string) tea.Cmd {
	return func() tea.Msg {
		text, ok := <-ch
		if !ok {
			return nil
		}
		return spawnProgressMsg{text: text, ch: ch}
	}
}

// link links a session to a task list (or removes its link) through the
// service, whose Link keeps the orchestrator records in step.
func link(ctx context.Context, svc api.Service, t api.Target, name, list string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		got, err := svc.Link(ctx, api.LinkRequest{Target: t, TaskList: list, Origin: origin})
		return linkDoneMsg{target: name, list: list, sess: got, err: err}
	}
}

// onHost says that an orchestrator of another host is stopped or finished
// from a terminal here, through that host (this dashboard's lifecycle acts
// on this machine).
func onHost(s api.Session, verb string) string {
	return clean(s.Session) + " is on host " + clean(s.Host) + ": run `system3 " + verb + " " + clean(s.Session) + "` in a terminal"
}
