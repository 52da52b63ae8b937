package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tmux"
)

// spawn is the state of one spawn, for undoing it.
type spawn struct {
	m       *Manager
	req     api.SpawnRequest
	res     api.SpawnResult
	git     git
	branch  bool // the branch was created
	tree    bool // the worktree was created
	session bool // the tmux session was created
	linked  bool
	// identified is the agent the monitor identified the pane as, once
	// it was ready.
	identified string
}

func (sp *spawn) progress(step, msg string) {
	sp.m.cfg.Logger.Info("spawn", "initiative", sp.req.Initiative, "step", step, "msg", msg)
	if sp.req.Progress != nil {
		sp.req.Progress(step, msg)
	}
}

// Spawn creates the worktree and branch, starts the agent in its tmux
// session, links the task list, waits until the agent is ready (answering
// the folder-trust dialog unless NoAutoTrust) and sends the first prompt.
// On failure it undoes what it did and returns an *Error that says which
// step failed and what was cleaned up.
func (m *Manager) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	sp := &spawn{m: m, req: req}
	res, step, err := sp.run(ctx)
	if err == nil {
		m.audit(ctx, api.AuditEntry{Origin: req.Origin, Action: "spawn", Target: res.Session, Pane: res.Pane, Text: res.Prompt, Sent: true, Checked: res.PromptVerified,
			Result: fmt.Sprintf("worktree %s, branch %s, task list %s", res.Worktree, res.Branch, res.TaskList)})
		return res, nil
	}
	e := &api.SpawnError{Initiative: req.Initiative, Step: step, Err: err}
	sp.undo(e)
	m.cfg.Logger.Warn("spawn failed", "initiative", req.Initiative, "err", e.Error())
	m.audit(ctx, api.AuditEntry{Origin: req.Origin, Action: "spawn", Target: api.OrchestratorSession(req.Initiative), Error: e.Error()})
	return api.SpawnResult{}, e
}

func (sp *spawn) run(ctx context.Context) (api.SpawnResult, string, error) {
	r := &sp.res
	env, err := sp.validate(ctx)
	if err != nil {
		return *r, api.StepValidate, err
	}
	if err := sp.checkRepo(ctx); err != nil {
		return *r, api.StepCheck, err
	}
	if err := sp.makeWorktree(ctx); err != nil {
		return *r, api.StepWorktree, err
	}
	if err := sp.setup(ctx); err != nil {
		return *r, api.StepSetup, err
	}
	if err := sp.startSession(ctx, env); err != nil {
		return *r, api.StepSession, err
	}
	if step, err := sp.linkAndWait(ctx); err != nil {
		return *r, step, err
	}
	if step, err := sp.firstPrompt(ctx); err != nil {
		return *r, step, err
	}
	r.Status = "spawned"
	sp.record(ctx)
	sp.progress("done", fmt.Sprintf("spawned %s in %s", r.Session, r.Worktree))
	return *r, "", nil
}

// validate refuses a request that cannot be spawned before anything
// exists, fills in the names, the task list, the agent and its command
// line, asks the policy, and returns the agent's environment.
func (sp *spawn) validate(ctx context.Context) (map[string]string, error) {
	m, req := sp.m, sp.req
	r := &sp.res
	if req.Host != "" && req.Host != "local" {
		return nil, fmt.Errorf("%w: this system3 starts orchestrators on its own machine; host %q is reached through the hosts of its configuration", api.ErrOrchestratorInvalid, req.Host)
	}
	if why := api.ValidInitiative(req.Initiative); why != "" {
		return nil, fmt.Errorf("%w: %s", api.ErrOrchestratorInvalid, why)
	}
	if strings.TrimSpace(req.Goal) == "" {
		return nil, fmt.Errorf("%w: the goal is empty; say what the orchestrator is to achieve", api.ErrOrchestratorInvalid)
	}
	// The goal and context are typed into the agent: refuse what is not
	// text now, before a worktree and a session exist.
	for _, part := range []struct{ name, text string }{{"goal", req.Goal}, {"context", req.Context}} {
		if err := tmux.CheckText(part.text); err != nil {
			return nil, fmt.Errorf("%w: the %s: %w", api.ErrOrchestratorInvalid, part.name, err)
		}
	}
	r.Initiative, r.Session, r.Branch = req.Initiative, api.OrchestratorSession(req.Initiative), req.Initiative
	r.TaskList = req.TaskList
	if r.TaskList == "" {
		r.TaskList = api.DefaultTaskList(req.Initiative)
	}
	if why := api.ValidTaskListID(r.TaskList); why != "" {
		return nil, fmt.Errorf("%w: %s", api.ErrOrchestratorInvalid, why)
	}
	argv, env, agent, err := m.agentCommand(req.Agent, req.Command, req.Origin)
	if err != nil {
		return nil, err
	}
	r.Agent = agent
	if argv, err = m.agentArgs(sp.asRecord(argv), argv); err != nil {
		return nil, err
	}
	r.Command = argv
	if err := m.cfg.Service.Allow(ctx, api.AllowRequest{Action: "spawn", Session: r.Session, Origin: req.Origin}); err != nil {
		return nil, err
	}
	return env, nil
}

// checkRepo finds the repository and checks the names and the tmux server.
func (sp *spawn) checkRepo(ctx context.Context) error {
	m, req := sp.m, sp.req
	r := &sp.res
	sp.progress(api.StepCheck, "checking the repository")
	top, err := m.repoRoot(ctx, req.Repo)
	if err != nil {
		return err
	}
	r.Repo = top
	sp.git = git{bin: m.cfg.Git, dir: top, timeout: m.cfg.GitTimeout}
	r.Worktree = filepath.Join(top, TreesDir, req.Initiative)
	r.Base = req.Base
	if r.Base == "" {
		r.Base = "HEAD"
	}
	return sp.check(ctx)
}

// makeWorktree creates the worktree on its new branch.
func (sp *spawn) makeWorktree(ctx context.Context) error {
	r := &sp.res
	sp.progress(api.StepWorktree, fmt.Sprintf("creating worktree %s on new branch %s from %s", r.Worktree, r.Branch, r.Base))
	var err error
	if r.TreesExcluded, err = sp.git.excludeTrees(ctx, filepath.Join(TreesDir, sp.req.Initiative)); err != nil {
		return fmt.Errorf("add %s/ to .git/info/exclude: %w", TreesDir, err)
	}
	if _, err := sp.git.run(ctx, "worktree", "add", "-b", r.Branch, r.Worktree, r.Base); err != nil {
		// git may have made the branch before failing on the directory.
		if ok, _ := sp.git.ok(context.WithoutCancel(ctx), "show-ref", "--verify", "--quiet", "refs/heads/"+r.Branch); ok {
			sp.branch = true
		}
		return err
	}
	sp.branch, sp.tree = true, true
	return nil
}

// startSession starts the agent in its tmux session, with env and what
// tells the agent its task list, initiative and hook token.
func (sp *spawn) startSession(ctx context.Context, env map[string]string) error {
	m, req := sp.m, sp.req
	r := &sp.res
	sp.progress(api.StepSession, fmt.Sprintf("starting %s in tmux session %s", strings.Join(r.Command, " "), r.Session))
	env["CLAUDE_CODE_TASK_LIST_ID"] = r.TaskList
	env["SYSTEM3_INITIATIVE"] = req.Initiative
	if m.cfg.HookToken != nil {
		// Without a token, the agent's hooks still prove themselves by
		// their process ancestry.
		if tok, err := m.cfg.HookToken(r.Session); err != nil {
			m.cfg.Logger.Warn("hook token", "session", r.Session, "err", err)
		} else {
			env[hooks.TokenEnv] = tok
		}
	}
	// The pane is kept if the agent exits before it is ready, so the
	// error can say how it ended and what it printed.
	pane, err := m.cfg.Tmux.NewSession(ctx, tmux.NewSessionOptions{Name: r.Session, WindowName: req.Initiative, Dir: r.Worktree, Env: env,
		Command: r.Command, Width: m.cfg.Width, Height: m.cfg.Height, KeepDeadPane: true})
	if err != nil {
		if ok, _ := m.cfg.Tmux.HasSession(context.WithoutCancel(ctx), r.Session); ok {
			sp.session = true
		}
		return err
	}
	sp.session, r.Pane = true, pane
	return nil
}

// linkAndWait links the task list once the monitor watches the pane, and
// waits until the agent is ready for input, within ReadyTimeout for both.
// It returns the step that failed.
func (sp *spawn) linkAndWait(ctx context.Context) (string, error) {
	m, req := sp.m, sp.req
	r := &sp.res
	// Ready: the pane must be watched before it can be linked.
	rctx, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	sp.progress(api.StepLink, fmt.Sprintf("linking %s to task list %s", r.Session, r.TaskList))
	if _, err := sp.waitSession(rctx, func(api.Session) bool { return true }); err != nil {
		return api.StepLink, err
	}
	// By session name, so the link holds if the agent is restarted in a
	// new pane of the session.
	if _, err := m.cfg.Service.Link(ctx, api.LinkRequest{Target: api.Target{Session: r.Session}, TaskList: r.TaskList, Origin: req.Origin}); err != nil {
		return api.StepLink, err
	}
	sp.linked = true

	sp.progress(api.StepReady, fmt.Sprintf("waiting up to %s for %s to be ready for input", m.cfg.ReadyTimeout, r.Agent))
	if step, err := sp.waitReady(rctx); err != nil {
		return step, err
	}
	// Ready: from now on the agent's exit closes its pane as usual.
	if err := m.cfg.Tmux.SetRemainOnExit(ctx, r.Pane, false); err != nil {
		return api.StepReady, fmt.Errorf("restore remain-on-exit for %s: %w", r.Pane, err)
	}
	return "", nil
}

// firstPrompt sends the first prompt, with what the learning store has for
// the goal, and returns the step that failed.
func (sp *spawn) firstPrompt(ctx context.Context) (string, error) {
	m, req := sp.m, sp.req
	r := &sp.res
	sp.progress(api.StepPrompt, "sending the first prompt")
	sp.wisdom(ctx)
	// Only agents that write task lists (Claude Code) are asked to plan
	// in one.
	planIn := ""
	if m.agentOf(sp.asRecord(r.Command)).TaskLists {
		planIn = r.TaskList
	}
	r.Prompt = Prompt(req.Goal, req.Context, planIn, r.Wisdom)
	ar, err := m.cfg.Service.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: r.Pane}, Text: r.Prompt, Origin: req.Origin})
	if errors.Is(err, tmux.ErrPaneDead) {
		// The agent looked ready and exited before its prompt came (a
		// command that fails at once, on a machine slow enough for a
		// capture to fall in between): say so as for an exit seen while
		// waiting, with its status and last output.
		return api.StepReady, sp.exitedBeforeReady(ctx, "the pane's process exited")
	}
	if err != nil {
		return api.StepPrompt, err
	}
	if !ar.Delivered {
		return api.StepPrompt, fmt.Errorf("tmux did not take the prompt: %s", ar.Detail)
	}
	r.PromptVerified = ar.Verified
	if !ar.Verified {
		r.Detail = "the first prompt was typed but system3 did not see the agent take it; check the session: " + ar.Detail
	}
	sp.wisdomInjected(ctx)
	return "", nil
}

// wisdomInjected tells the learning store which of its items the first
// prompt carried.
func (sp *spawn) wisdomInjected(ctx context.Context) {
	m, r := sp.m, &sp.res
	if m.cfg.Injected != nil && len(r.Wisdom) > 0 {
		ids := make([]int64, len(r.Wisdom))
		for i, w := range r.Wisdom {
			ids[i] = w.ID
		}
		if err := m.cfg.Injected(ctx, sp.req.Initiative, ids); err != nil {
			m.cfg.Logger.Warn("record injected wisdom", "initiative", sp.req.Initiative, "err", err)
		}
	}
}

// agentCommand returns the argv, environment and name of the agent a
// request names: a configured agent by name, or, from the CLI only, the
// operator's own command line.
func (m *Manager) agentCommand(name, command, origin string) ([]string, map[string]string, string, error) {
	name, command = strings.TrimSpace(name), strings.TrimSpace(command)
	env := map[string]string{}
	if command != "" {
		if api.Claimed(origin) != OperatorCLI {
			return nil, nil, "", fmt.Errorf("%w: a command line is taken from the operator's `system3 spawn` only; name one of the agents in system3's configuration: %s",
				api.ErrUnknownAgent, strings.Join(m.AgentNames(), ", "))
		}
		fields := strings.Fields(command)
		if _, err := m.cfg.LookPath(fields[0]); err != nil {
			return nil, nil, "", fmt.Errorf("%w %q: it is neither a configured agent (%s) nor a command whose program is on PATH",
				api.ErrUnknownAgent, command, strings.Join(m.AgentNames(), ", "))
		}
		return []string{command}, env, filepath.Base(fields[0]), nil
	}
	if name == "" {
		name = agents.Default
	}
	a, ok := m.cfg.Agents[name]
	if !ok {
		return nil, nil, "", fmt.Errorf("%w %q: name one of the agents in system3's configuration: %s (the operator adds others under agents: in config.yaml)",
			api.ErrUnknownAgent, name, strings.Join(m.AgentNames(), ", "))
	}
	argv := append([]string(nil), a.Command...)
	for k, v := range a.Env {
		env[k] = v
	}
	return argv, env, name, nil
}

// agentArgs appends to argv the extra arguments (AgentArgs) of the agent
// rec runs, as agentOf tells it: Claude Code's hooks for a wrapper of
// Claude Code too. The operator's command line gets none.
func (m *Manager) agentArgs(rec Record, argv []string) ([]string, error) {
	if m.cfg.AgentArgs == nil || rec.CommandLine {
		return argv, nil
	}
	extra, err := m.cfg.AgentArgs(m.agentOf(rec).Name)
	if err != nil {
		return nil, fmt.Errorf("arguments for %s: %w", rec.Agent, err)
	}
	return append(argv, extra...), nil
}

// asRecord is what the spawn knows of its orchestrator so far, running
// argv, for agentOf.
func (sp *spawn) asRecord(argv []string) Record {
	return Record{Agent: sp.res.Agent, Command: argv, CommandLine: strings.TrimSpace(sp.req.Command) != "", Identified: sp.identified}
}

// check refuses what would make the spawn fail half-way or lose work.
func (sp *spawn) check(ctx context.Context) error {
	r := &sp.res
	if _, err := sp.git.run(ctx, "rev-parse", "--verify", "--quiet", r.Base+"^{commit}"); err != nil {
		return fmt.Errorf("%w: base %q is not a commit in %s; pass --base with a branch, tag or commit", api.ErrOrchestratorInvalid, r.Base, r.Repo)
	}
	if err := checkRefFormat(ctx, sp.git, r.Branch); err != nil {
		return err
	}
	if ok, err := sp.git.ok(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+r.Branch); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: branch %s exists in %s; pick another initiative name, or delete the branch", api.ErrOrchestratorExists, r.Branch, r.Repo)
	}
	if _, err := os.Lstat(r.Worktree); err == nil {
		return fmt.Errorf("%w: %s exists; pick another initiative name, or remove it (git worktree remove)", api.ErrOrchestratorExists, r.Worktree)
	}
	if ok, err := sp.m.cfg.Tmux.HasSession(ctx, r.Session); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: tmux session %s exists; pick another initiative name, or stop it (system3 stop %s)", api.ErrOrchestratorExists, r.Session, sp.req.Initiative)
	}
	// Uncommitted changes matter only when the worktree starts from the
	// commit they sit on: the orchestrator would not see them.
	if sp.req.Base == "" {
		st, err := sp.git.run(ctx, "status", "--porcelain", "--untracked-files=no")
		if err != nil {
			return err
		}
		if st != "" {
			n := len(strings.Split(st, "\n"))
			return fmt.Errorf("%w: %s has %d changed tracked file(s) the new worktree would not have; commit or stash them, or pass --base to start from another commit", api.ErrOrchestratorDirty, r.Repo, n)
		}
	}
	return nil
}

func checkRefFormat(ctx context.Context, g git, branch string) error {
	if ok, err := g.ok(ctx, "check-ref-format", "--branch", branch); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: %q is not a valid branch name", api.ErrOrchestratorInvalid, branch)
	}
	return nil
}

// undo removes what the spawn created, newest first.
func (sp *spawn) undo(e *api.SpawnError) {
	ctx, cancel := cleanupCtx()
	defer cancel()
	r, m := &sp.res, sp.m
	if sp.linked {
		if _, err := m.cfg.Service.Link(ctx, api.LinkRequest{Target: api.Target{Session: r.Session}, Origin: sp.req.Origin}); err == nil {
			e.CleanedUp = append(e.CleanedUp, "removed the task list link")
		}
	}
	if sp.session {
		if err := m.cfg.Tmux.KillSession(ctx, r.Session); err != nil && !errors.Is(err, tmux.ErrNotFound) && !errors.Is(err, tmux.ErrNoServer) {
			e.Left = append(e.Left, fmt.Sprintf("tmux session %s (%v; tmux kill-session -t %s)", r.Session, err, r.Session))
		} else {
			e.CleanedUp = append(e.CleanedUp, "killed tmux session "+r.Session)
		}
	}
	if sp.tree {
		if _, err := sp.git.run(ctx, "worktree", "remove", "--force", r.Worktree); err != nil {
			e.Left = append(e.Left, fmt.Sprintf("worktree %s (%v; git worktree remove --force %s)", r.Worktree, err, r.Worktree))
		} else {
			e.CleanedUp = append(e.CleanedUp, "removed worktree "+r.Worktree)
		}
	}
	if sp.branch {
		if _, err := sp.git.run(ctx, "branch", "-D", r.Branch); err != nil {
			e.Left = append(e.Left, fmt.Sprintf("branch %s (%v; git branch -D %s)", r.Branch, err, r.Branch))
		} else {
			e.CleanedUp = append(e.CleanedUp, "deleted branch "+r.Branch)
		}
	}
}
