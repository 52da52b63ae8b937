package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tmux"
)

// record writes the spawned orchestrator's record, with the agent's
// session id when its hooks or transcript have named it by now (Run
// learns it later otherwise). A failing write is logged: the orchestrator
// runs, it just could not be restored.
func (sp *spawn) record(ctx context.Context) {
	m, r := sp.m, &sp.res
	if m.cfg.Records == nil {
		return
	}
	rec := Record{Name: r.Initiative, Session: r.Session, Agent: r.Agent, Command: r.Command, Worktree: r.Worktree,
		Branch: r.Branch, Base: r.Base, Repo: r.Repo, TaskList: r.TaskList, Created: time.Now().UTC(), State: RecordRunning,
		CommandLine: strings.TrimSpace(sp.req.Command) != ""}
	if rec.Base == "HEAD" {
		// Finish merges into a branch, not into whatever HEAD is then.
		if b, err := sp.git.run(ctx, "symbolic-ref", "--short", "-q", "HEAD"); err == nil && b != "" {
			rec.Base = b
		}
	}
	rec.Identified = sp.identified
	if s, ok := m.paneSession(ctx, r.Pane); ok {
		rec.AgentSessionID, rec.Transcript = s.AgentSessionID, s.Transcript
		if _, ok := known(s.Agent); ok {
			rec.Identified = s.Agent
		}
	}
	if err := m.cfg.Records.Put(rec); err != nil {
		m.cfg.Logger.Warn("record orchestrator", "initiative", r.Initiative, "err", err)
	}
}

// paneSession is the watched session of a pane.
func (m *Manager) paneSession(ctx context.Context, pane string) (api.Session, bool) {
	snap, err := m.cfg.Service.Snapshot(ctx)
	if err != nil {
		return api.Session{}, false
	}
	for _, s := range snap.Sessions {
		if s.Pane == pane {
			return s, true
		}
	}
	return api.Session{}, false
}

// markStopped marks a stopped orchestrator's record, so restore --all
// leaves it alone.
func (m *Manager) markStopped(session string) {
	if m.cfg.Records == nil {
		return
	}
	if _, err := m.cfg.Records.Modify(session, func(r *Record) bool {
		r.State = RecordStopped
		return true
	}); err != nil {
		m.cfg.Logger.Warn("record stop", "session", session, "err", err)
	}
}

// Records returns the orchestrator records (nil when none are kept).
func (m *Manager) Records() *Records { return m.cfg.Records }

// Adopt records a session started by hand, once linked to a task list, so
// it can be restored: its agent pane's directory, agent and session id.
// Only agents whose resume system3 knows (claude, codex, gemini: their
// Spec's Resume) are recorded.
func (m *Manager) Adopt(ctx context.Context, session, taskList string) (Record, error) {
	if m.cfg.Records == nil {
		return Record{}, errors.New("no orchestrator records are kept")
	}
	snap, err := m.cfg.Service.Snapshot(ctx)
	if err != nil {
		return Record{}, err
	}
	var s api.Session
	for _, c := range snap.Sessions {
		if c.Session == session && resumable(c.Agent) {
			s = c
			break
		}
	}
	if s.Pane == "" {
		return Record{}, fmt.Errorf("session %s runs no %s agent system3 can resume", session, agents.Resumable())
	}
	name := strings.TrimPrefix(session, api.OrchestratorPrefix)
	rec := Record{Name: name, Session: session, Agent: s.Agent, Command: []string{s.Agent}, Identified: s.Agent, Worktree: s.Path, TaskList: taskList,
		Created: time.Now().UTC(), AgentSessionID: s.AgentSessionID, Transcript: s.Transcript, State: RecordRunning, Adopted: true}
	if old, ok, _ := m.cfg.Records.Get(name); ok && !old.Adopted {
		// A spawned orchestrator keeps its own record; the link is news.
		old.TaskList, old.Identified = taskList, s.Agent
		rec = old
	}
	g := git{bin: m.cfg.Git, dir: s.Path, timeout: m.cfg.GitTimeout}
	if b, err := g.run(ctx, "branch", "--show-current"); err == nil && rec.Branch == "" {
		rec.Branch = b
	}
	return rec, m.cfg.Records.Put(rec)
}

// resumable reports whether system3 knows how to resume the agent.
func resumable(agent string) bool { return agents.Lookup(agent).Resume != nil }

// ResumeArgs is how the agent (by its name in monitor/agents: "claude")
// resumes the conversation id, or its latest conversation in the working
// directory when the id is unknown, as its Spec says; nil when it has no
// known resume. Which agent a record runs is agentOf's to say, never its
// program's file name: a wrapper of Claude Code resumes as Claude Code.
func ResumeArgs(agent, id string) []string {
	s, ok := known(agent)
	if !ok || s.Resume == nil {
		return nil
	}
	return s.Resume(id)
}

// Restore recreates the named orchestrators (or, with All, every one not
// stopped on purpose) whose tmux session is gone: a new session in the
// worktree running the agent with its resume, the task list linked again.
// One whose session exists is skipped; restores never overlap, across
// processes too, so nothing is restored twice.
func (m *Manager) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	res := api.RestoreResult{Orchestrators: []api.RestoreOutcome{}}
	if m.cfg.Records == nil {
		return res, api.ErrNoRecords
	}
	if len(req.Names) == 0 && !req.All {
		return res, fmt.Errorf("%w: name the orchestrators to restore, or ask for all", api.ErrOrchestratorInvalid)
	}
	unlock, err := m.restoreLock()
	if err != nil {
		return res, err
	}
	defer unlock()
	recs, err := m.cfg.Records.List()
	if err != nil {
		if !errors.Is(err, api.ErrRecordsDamaged) {
			return res, err
		}
		res.Problem = err.Error()
	}
	// In the order asked; a name without a record fails in its place.
	type item struct {
		rec  Record
		fail string
	}
	var todo []item
	if len(req.Names) > 0 {
		for _, n := range req.Names {
			i := slices.IndexFunc(recs, func(r Record) bool { return r.Name == n || r.Session == n })
			if i < 0 {
				todo = append(todo, item{rec: Record{Name: n}, fail: "no record of it; system3 records orchestrators it spawned or that were linked (system3 link)"})
				continue
			}
			todo = append(todo, item{rec: recs[i]})
		}
	} else {
		for _, r := range recs {
			if r.State == RecordRunning {
				todo = append(todo, item{rec: r})
			}
		}
	}
	for _, it := range todo {
		rec := it.rec
		if it.fail != "" {
			res.Orchestrators = append(res.Orchestrators, api.RestoreOutcome{Name: rec.Name, Status: api.RestoreFailed, Reason: it.fail})
			continue
		}
		if req.Progress != nil {
			req.Progress(rec.Name, fmt.Sprintf("restoring %s in %s", rec.Session, rec.Worktree))
		}
		o := m.restoreOne(ctx, rec, req.Origin)
		e := api.AuditEntry{Origin: req.Origin, Action: "restore", Target: rec.Session, Pane: o.Pane, Sent: o.Status == api.RestoreRestored,
			Result: o.Status + ": " + o.Reason}
		if o.Status == api.RestoreFailed {
			e.Error = o.Reason
		}
		m.audit(ctx, e)
		res.Orchestrators = append(res.Orchestrators, o)
	}
	return res, nil
}

// restoreLock takes the state dir's restore lock, held by one restore at a
// time in any process.
func (m *Manager) restoreLock() (func(), error) {
	f, err := os.OpenFile(m.cfg.Records.Path()+".restore.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { unlockFile(f); f.Close() }, nil
}

func (m *Manager) restoreOne(ctx context.Context, rec Record, origin string) api.RestoreOutcome {
	o := api.RestoreOutcome{Name: rec.Name, Session: rec.Session, TaskList: rec.TaskList, AgentSessionID: rec.AgentSessionID}
	fail := func(format string, args ...any) api.RestoreOutcome {
		o.Status, o.Reason = api.RestoreFailed, fmt.Sprintf(format, args...)
		m.cfg.Logger.Warn("restore failed", "initiative", rec.Name, "why", o.Reason)
		return o
	}
	if ok, err := m.cfg.Tmux.HasSession(ctx, rec.Session); err != nil && !errors.Is(err, tmux.ErrNoServer) {
		return fail("cannot ask tmux whether %s runs: %v", rec.Session, err)
	} else if ok {
		o.Status, o.Reason = api.RestoreSkipped, "already running (tmux session "+rec.Session+" exists)"
		return o
	}
	if fi, err := os.Stat(rec.Worktree); err != nil || !fi.IsDir() {
		return fail("its worktree %s is gone; spawn it again, or remove the record with system3 finish %s --forget", rec.Worktree, rec.Name)
	}
	if err := m.cfg.Service.Allow(ctx, api.AllowRequest{Action: "restore", Session: rec.Session, Origin: origin}); err != nil {
		return fail("%v", err)
	}
	argv, env, resumeNote, err := m.restoreCommand(rec, origin)
	if err != nil {
		return fail("%v", err)
	}
	o.Command = argv
	env["SYSTEM3_INITIATIVE"] = rec.Name
	if rec.TaskList != "" {
		env["CLAUDE_CODE_TASK_LIST_ID"] = rec.TaskList
	}
	if m.cfg.HookToken != nil {
		if tok, err := m.cfg.HookToken(rec.Session); err == nil {
			env[hooks.TokenEnv] = tok
		}
	}
	pane, err := m.cfg.Tmux.NewSession(ctx, tmux.NewSessionOptions{Name: rec.Session, WindowName: rec.Name, Dir: rec.Worktree, Env: env,
		Command: argv, Width: m.cfg.Width, Height: m.cfg.Height, KeepDeadPane: true})
	if err != nil {
		if ok, _ := m.cfg.Tmux.HasSession(context.WithoutCancel(ctx), rec.Session); ok {
			o.Status, o.Reason = api.RestoreSkipped, "already running (another client started "+rec.Session+" just now)"
			return o
		}
		return fail("start tmux session %s: %v", rec.Session, err)
	}
	o.Pane = pane
	// The same waits as spawn: the pane watched, linked, the agent ready.
	sp := &spawn{m: m, req: api.SpawnRequest{Initiative: rec.Name, Origin: origin},
		res: api.SpawnResult{Session: rec.Session, Pane: pane, Agent: rec.Agent, Worktree: rec.Worktree}}
	undo := func() {
		cctx, cancel := cleanupCtx()
		defer cancel()
		_ = m.cfg.Tmux.KillSession(cctx, rec.Session)
	}
	rctx, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	if _, err := sp.waitSession(rctx, func(api.Session) bool { return true }); err != nil {
		undo()
		return fail("%v", err)
	}
	if rec.TaskList != "" {
		if _, err := m.cfg.Service.Link(ctx, api.LinkRequest{Target: api.Target{Session: rec.Session}, TaskList: rec.TaskList, Origin: origin}); err != nil {
			undo()
			return fail("link task list %s: %v", rec.TaskList, err)
		}
	}
	if step, err := sp.waitReady(rctx); err != nil {
		_, out := sp.lastOutput(ctx)
		undo()
		return fail("%s: %v (%s)", step, err, out)
	}
	if err := m.cfg.Tmux.SetRemainOnExit(ctx, pane, false); err != nil {
		m.cfg.Logger.Warn("restore remain-on-exit", "pane", pane, "err", err)
	}
	o.Status, o.Reason = api.RestoreRestored, resumeNote
	if _, err := m.cfg.Records.Modify(rec.Name, func(r *Record) bool {
		r.State, r.Restored = RecordRunning, time.Now().UTC()
		if sp.identified != "" {
			r.Identified = sp.identified
		}
		return true
	}); err != nil {
		m.cfg.Logger.Warn("record restore", "initiative", rec.Name, "err", err)
	}
	m.cfg.Logger.Info("restored", "initiative", rec.Name, "session", rec.Session, "command", strings.Join(argv, " "))
	return o
}

// restoreCommand is the argv and environment that resume a record's
// agent, and a note on how it resumes.
func (m *Manager) restoreCommand(rec Record, origin string) ([]string, map[string]string, string, error) {
	if rec.CommandLine {
		// The operator's own command line: run again as it was, by the
		// operator only, without a resume.
		if c := api.Claimed(origin); c != OperatorCLI && c != "tui" && c != "auto" {
			return nil, nil, "", fmt.Errorf("it ran the command line %q, which only the operator (system3 restore, the dashboard) runs again", strings.Join(rec.Command, " "))
		}
		return slices.Clone(rec.Command), map[string]string{}, "restarted its command line; system3 knows no resume for it", nil
	}
	argv, env, _, err := m.agentCommand(rec.Agent, "", origin)
	if err != nil {
		return nil, nil, "", err
	}
	// The agent it is, by its record (agentOf); its configured command's
	// program says nothing when it is a wrapper.
	if argv, err = m.agentArgs(rec, argv); err != nil {
		return nil, nil, "", err
	}
	a := m.agentOf(rec)
	args := ResumeArgs(a.Name, rec.AgentSessionID)
	switch _, ok := known(a.Name); {
	case args == nil && ok && a.Resume != nil && rec.AgentSessionID == "":
		return argv, env, idNeverLearnt(a, rec), nil
	case args == nil && ok:
		return argv, env, a.Name + " has no resume system3 knows; started afresh", nil
	case args == nil:
		return argv, env, fmt.Sprintf("system3 does not know agent %s (%s) as %s, so it knows no resume for it; started afresh",
			rec.Agent, filepath.Base(argv[0]), agents.Resumable()), nil
	}
	note := "resumed conversation " + rec.AgentSessionID
	if rec.AgentSessionID == "" {
		note = "resumed its latest conversation in the worktree (" + strings.Join(args, " ") + "): its id was never learnt"
	}
	return append(argv, args...), env, note, nil
}

// idNeverLearnt is what a restore says of an agent that resumes a
// conversation by its id only (Cline: cline --id ID), restored without
// the id, which was never learnt: a new conversation was started, and
// how a person goes on with the earlier one.
func idNeverLearnt(a agent.Spec, rec Record) string {
	prog := a.Name
	if len(a.Launch.Command) > 0 {
		prog = filepath.Base(a.Launch.Command[0])
	}
	resume := strings.Join(append([]string{prog}, a.Resume("ID")...), " ")
	find := "in " + a.Name + "'s own history"
	if len(a.History) > 0 {
		find = "with `" + strings.Join(a.History, " ") + "`"
	}
	return fmt.Sprintf("started a new %s conversation: %s resumes one by its id only (%s), and system3 never learnt this orchestrator's id "+
		"(it learns it while it watches the agent, once the agent has saved its conversation), so the earlier conversation was not resumed; "+
		"it is not lost: find its id %s among the conversations begun in %s, then quit the new one in tmux session %s and run `%s` there",
		a.Name, a.Name, resume, find, rec.Worktree, rec.Session, resume)
}

// Run keeps the records current while the monitors run: it learns each
// orchestrator's agent session id from the monitor's updates (Claude
// Code's hooks name it; a resumed or cleared conversation has a new one),
// and, with AutoRestore, restores every orchestrator when the tmux server
// comes back after it was seen gone.
func (m *Manager) Run(ctx context.Context) error {
	if m.cfg.Records == nil {
		<-ctx.Done()
		return nil
	}
	updates, err := m.cfg.Service.Watch(ctx)
	if err != nil {
		return err
	}
	tick := time.NewTicker(m.cfg.RestoreCheckEvery)
	defer tick.Stop()
	wasDown := false
	// seen is the last id each pane reported, so the records file is read
	// only when an id changes, not on every update.
	seen := map[string]string{}
	learn := func(s api.Session) {
		if s.AgentSessionID == "" || seen[s.Pane] == s.AgentSessionID {
			return
		}
		seen[s.Pane] = s.AgentSessionID
		m.learn(s)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				return nil
			}
			if u.Kind == api.Resync || u.Missed > 0 {
				if snap, err := m.cfg.Service.Snapshot(ctx); err == nil {
					clear(seen)
					for _, s := range snap.Sessions {
						learn(s)
					}
				}
			}
			if !u.Kind.OfSession() {
				continue
			}
			if u.Kind == api.SessionRemoved {
				delete(seen, u.Session.Pane)
				continue
			}
			learn(u.Session)
		case <-tick.C:
			if !m.cfg.AutoRestore {
				continue
			}
			snap, err := m.cfg.Service.Snapshot(ctx)
			if err != nil {
				continue
			}
			if !snap.Running {
				wasDown = true
				continue
			}
			if wasDown {
				wasDown = false
				m.cfg.Logger.Info("the tmux server is back; restoring orchestrators")
				res, err := m.Restore(ctx, api.RestoreRequest{All: true, Origin: "auto"})
				if err != nil {
					m.cfg.Logger.Warn("auto-restore", "err", err)
				}
				for _, o := range res.Orchestrators {
					m.cfg.Logger.Info("auto-restore", "initiative", o.Name, "status", o.Status, "why", o.Reason)
				}
			}
		}
	}
}

// learn puts a session's agent session id, and the agent the monitor
// identified, into its orchestrator's record.
func (m *Manager) learn(s api.Session) {
	if s.AgentSessionID == "" || s.Session == "" || strings.ContainsAny(s.AgentSessionID, " \t\n") || strings.HasPrefix(s.AgentSessionID, "-") {
		return
	}
	if _, err := m.cfg.Records.Modify(s.Session, func(r *Record) bool {
		if r.Session != s.Session || r.State != RecordRunning || filepath.Clean(s.Path) != filepath.Clean(r.Worktree) {
			return false
		}
		changed := false
		if r.AgentSessionID != s.AgentSessionID {
			r.AgentSessionID, r.Transcript = s.AgentSessionID, s.Transcript
			changed = true
		}
		// A record written before it kept what the monitor identified
		// learns it too.
		if _, ok := known(s.Agent); ok && r.Identified != s.Agent {
			r.Identified, changed = s.Agent, true
		}
		return changed
	}); err != nil {
		m.cfg.Logger.Warn("record session id", "session", s.Session, "err", err)
	}
}
