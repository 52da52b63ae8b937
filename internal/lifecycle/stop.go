package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tmux"
)

// interruptGrace lets the agent stop its current step (and save its
// transcript) before the session is killed.
const interruptGrace = 500 * time.Millisecond

// Stop interrupts the orchestrator's agent, kills its tmux session and,
// when asked, removes its worktree. The worktree is kept by default, and
// the branch always.
func (m *Manager) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	res, err := m.stop(ctx, req)
	e := api.AuditEntry{Origin: req.Origin, Action: "stop", Target: res.Session, Sent: err == nil, Result: res.Detail}
	if err != nil {
		e.Error = err.Error()
	}
	m.audit(ctx, e)
	return res, err
}

func (m *Manager) stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	name := strings.TrimSpace(req.Name)
	if name == "" {
		return api.StopResult{}, fmt.Errorf("%w: name the orchestrator to stop, like auth or orch-auth", api.ErrOrchestratorInvalid)
	}
	var res api.StopResult
	var err error
	if res.Session, err = m.stopSession(ctx, name); err != nil {
		return res, err
	}
	// The policy judges the session that will be killed, whichever name
	// found it.
	if err := m.cfg.Service.Allow(ctx, api.AllowRequest{Action: "stop", Session: res.Session, Origin: req.Origin}); err != nil {
		return res, fmt.Errorf("stop %s: %w", res.Session, err)
	}
	initiative := strings.TrimPrefix(res.Session, api.OrchestratorPrefix)

	sess := m.paneOfSession(ctx, res.Session)
	res.Interrupted = m.interruptAgent(ctx, sess, res.Session, req.Origin)
	if err := m.cfg.Tmux.KillSession(ctx, res.Session); err != nil && !errors.Is(err, tmux.ErrNotFound) {
		return res, fmt.Errorf("kill tmux session %s: %w", res.Session, err)
	}
	if _, err := m.cfg.Service.Link(ctx, api.LinkRequest{Target: api.Target{Session: res.Session}, Origin: req.Origin}); err != nil {
		m.cfg.Logger.Warn("stop: unlink", "session", res.Session, "err", err)
	}
	res.Status = "stopped"
	m.cfg.Logger.Info("stopped", "session", res.Session, "origin", req.Origin)
	m.markStopped(res.Session)

	return m.stopWorktree(ctx, req, sess.Path, initiative, res)
}

// stopSession is the tmux session a stop name finds, trying each of its
// candidates in turn.
func (m *Manager) stopSession(ctx context.Context, name string) (string, error) {
	for _, cand := range candidates(name) {
		ok, err := m.cfg.Tmux.HasSession(ctx, cand)
		if err != nil {
			return "", err
		}
		if ok {
			return cand, nil
		}
	}
	return "", fmt.Errorf("%w: no tmux session %s; run `system3 status` to list sessions", api.ErrOrchestratorNotFound, strings.Join(candidates(name), " or "))
}

// paneOfSession is where the agent of a session runs, and whether it is
// an agent at all: its agent pane, else any pane of it, else none.
func (m *Manager) paneOfSession(ctx context.Context, session string) api.Session {
	var sess api.Session
	if snap, err := m.cfg.Service.Snapshot(ctx); err == nil {
		for _, s := range snap.Sessions {
			if s.Session == session && (sess.Pane == "" || s.IsAgent()) {
				sess = s
			}
		}
	}
	return sess
}

// interruptAgent interrupts the agent of sess, if it is one, and gives it
// interruptGrace to stop its current step. It reports whether it did.
func (m *Manager) interruptAgent(ctx context.Context, sess api.Session, session, origin string) bool {
	if sess.Pane == "" || !sess.IsAgent() {
		return false
	}
	if _, err := m.cfg.Service.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: sess.Pane}, Origin: origin}); err != nil {
		m.cfg.Logger.Warn("stop: interrupt", "session", session, "err", err)
		return false
	}
	select {
	case <-ctx.Done():
	case <-time.After(interruptGrace):
	}
	return true
}

// stopWorktree finds the stopped orchestrator's worktree (where the agent
// ran, else <repo>/trees/<initiative>) and its branch, and removes the
// worktree when asked and it has no uncommitted changes.
func (m *Manager) stopWorktree(ctx context.Context, req api.StopRequest, path, initiative string, res api.StopResult) (api.StopResult, error) {
	wt, repo, err := m.worktreeOf(ctx, path, req.Repo, initiative)
	if err != nil {
		res.Detail = "worktree not found: " + err.Error()
		if req.RemoveWorktree {
			return res, fmt.Errorf("the session is stopped, but its worktree was not found (%v); remove it with git worktree remove", err)
		}
		return res, nil
	}
	res.Worktree = wt
	g := git{bin: m.cfg.Git, dir: wt, timeout: m.cfg.GitTimeout}
	if b, err := g.run(ctx, "branch", "--show-current"); err == nil {
		res.Branch = b
	}
	if !req.RemoveWorktree {
		res.Detail = fmt.Sprintf("worktree %s kept (stop with --remove-worktree to remove it)", wt)
		return res, nil
	}
	if st, err := g.run(ctx, "status", "--porcelain"); err != nil {
		return res, err
	} else if st != "" {
		res.Detail = fmt.Sprintf("worktree %s kept: it has uncommitted changes", wt)
		return res, fmt.Errorf("the session is stopped, but worktree %s has uncommitted changes, so it was kept; commit them, or remove it with git worktree remove --force %s", wt, wt)
	}
	if _, err := (git{bin: m.cfg.Git, dir: repo, timeout: m.cfg.GitTimeout}).run(ctx, "worktree", "remove", wt); err != nil {
		return res, fmt.Errorf("the session is stopped, but removing its worktree failed: %w", err)
	}
	res.Removed = true
	res.Detail = fmt.Sprintf("worktree %s removed; branch %s kept", wt, res.Branch)
	return res, nil
}

// candidates are the session names a stop name may mean.
func candidates(name string) []string {
	if strings.HasPrefix(name, api.OrchestratorPrefix) || api.ValidInitiative(name) != "" {
		return []string{name}
	}
	return []string{api.OrchestratorSession(name), name}
}

// worktreeOf finds a spawned orchestrator's worktree (a linked worktree
// under trees/, never a main checkout) and its main repository.
func (m *Manager) worktreeOf(ctx context.Context, path, repo, initiative string) (wt, main string, err error) {
	var tries []string
	if path != "" {
		tries = append(tries, path)
	}
	if repo != "" {
		if top, err := m.repoRoot(ctx, repo); err == nil {
			tries = append(tries, filepath.Join(top, TreesDir, initiative))
		}
	}
	if len(tries) == 0 {
		return "", "", errors.New("the session shows no directory; pass --repo")
	}
	var last error
	for _, dir := range tries {
		g := git{bin: m.cfg.Git, dir: dir, timeout: m.cfg.GitTimeout}
		top, err := g.run(ctx, "rev-parse", "--show-toplevel")
		if err != nil {
			last = err
			continue
		}
		common, err := g.run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
		if err != nil {
			last = err
			continue
		}
		if filepath.Base(filepath.Dir(top)) != TreesDir {
			last = fmt.Errorf("%s is not a worktree under %s/", top, TreesDir)
			continue
		}
		return top, filepath.Dir(common), nil
	}
	return "", "", last
}
