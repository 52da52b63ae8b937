package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// Outcome is how a finished initiative ended, for the learning store.
type Outcome struct {
	Initiative string
	// Result is "success" or "failure".
	Result string
	// Summary says what finish did, with the diff stat.
	Summary string
}

// Finish shows an orchestrator's diff against its base branch and, as
// asked, merges it, opens a pull request, and removes the worktree and
// branch, recording the outcome in the learning store.
func (m *Manager) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	res, err := m.finish(ctx, req)
	e := api.AuditEntry{Origin: req.Origin, Action: "finish", Target: res.Session, Sent: err == nil, Result: strings.Join(res.Steps, "; ")}
	if err != nil {
		e.Error = err.Error()
	}
	m.audit(ctx, e)
	return res, err
}

func (m *Manager) finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	res := api.FinishResult{Steps: []string{}}
	progress := func(step, msg string) {
		m.cfg.Logger.Info("finish", "initiative", res.Name, "step", step, "msg", msg)
		if req.Progress != nil {
			req.Progress(step, msg)
		}
	}
	if err := m.locate(ctx, req, &res); err != nil {
		return res, err
	}
	if err := m.checkFinish(ctx, req, res.Session); err != nil {
		return res, err
	}
	main := git{bin: m.cfg.Git, dir: res.Repo, timeout: m.cfg.GitTimeout}

	// The diff.
	statLine, err := m.finishDiff(ctx, main, &res)
	if err != nil {
		return res, err
	}

	// Merge.
	if req.Merge != "" {
		progress("merge", fmt.Sprintf("merging %s into %s (%s)", res.Branch, res.Base, req.Merge))
		if err := m.merge(ctx, main, req.Merge, &res); err != nil {
			m.outcome(ctx, &res, "failure", fmt.Sprintf("finish %s: merging %s into %s failed: %v; diff: %s", res.Name, res.Branch, res.Base, err, statLine))
			return res, err
		}
	}
	// Pull request.
	if req.PR {
		progress("pr", fmt.Sprintf("pushing %s and opening a pull request against %s", res.Branch, res.Base))
		if err := m.pullRequest(ctx, main, req, &res, statLine); err != nil {
			m.outcome(ctx, &res, "failure", fmt.Sprintf("finish %s: pull request failed: %v; diff: %s", res.Name, err, statLine))
			return res, err
		}
	}
	// Remove.
	if req.Remove {
		progress("remove", fmt.Sprintf("removing worktree %s and branch %s", res.Worktree, res.Branch))
		if err := m.remove(ctx, main, req, &res); err != nil {
			return res, err
		}
	}
	m.finished(ctx, req, &res, statLine)
	return res, nil
}

// checkFinish refuses a request that asks for what cannot be done, and
// asks the policy about one that changes something: showing the diff
// changes nothing; the rest is judged like a stop.
func (m *Manager) checkFinish(ctx context.Context, req api.FinishRequest, session string) error {
	if req.Merge != "" && req.Merge != api.MergeFastForward && req.Merge != api.MergeCommit {
		return fmt.Errorf("%w: merge %q: use ff (fast-forward only) or merge (a merge commit)", api.ErrOrchestratorInvalid, req.Merge)
	}
	if req.Merge != "" && req.PR {
		return fmt.Errorf("%w: merge or open a pull request, not both", api.ErrOrchestratorInvalid)
	}
	if req.Merge != "" || req.PR || req.Remove {
		if err := m.cfg.Service.Allow(ctx, api.AllowRequest{Action: "finish", Session: session, Origin: req.Origin}); err != nil {
			return err
		}
	}
	return nil
}

// finishDiff fills in the branch's diff against its base, its commits and
// the worktree's uncommitted changes, and returns the diff stat's summary
// line ("no changes" when there is none) for the outcome.
func (m *Manager) finishDiff(ctx context.Context, main git, res *api.FinishResult) (string, error) {
	wt := git{bin: m.cfg.Git, dir: res.Worktree, timeout: m.cfg.GitTimeout}
	haveTree := dirExists(res.Worktree)
	rng := res.Base + "..." + res.Branch
	var err error
	if res.Stat, err = main.run(ctx, "diff", "--stat", rng); err != nil {
		return "", err
	}
	if res.Diff, err = main.runRaw(ctx, "diff", rng); err != nil {
		return "", err
	}
	if n, err := main.run(ctx, "rev-list", "--count", res.Base+".."+res.Branch); err == nil {
		fmt.Sscan(n, &res.Commits)
	}
	if haveTree {
		if res.Uncommitted, err = wt.run(ctx, "status", "--porcelain", "--untracked-files=no"); err != nil {
			return "", err
		}
	}
	res.Steps = append(res.Steps, fmt.Sprintf("diff %s: %d commit(s), %s", rng, res.Commits, lastLine(res.Stat)))
	statLine := lastLine(res.Stat)
	if statLine == "" {
		statLine = "no changes"
	}
	return statLine, nil
}

// finished records the outcome of a finish that went through: a merge or
// a pull request is a success, a removal without either a failure.
func (m *Manager) finished(ctx context.Context, req api.FinishRequest, res *api.FinishResult, statLine string) {
	switch {
	case res.Merged != "":
		m.outcome(ctx, res, "success", fmt.Sprintf("finish %s: merged %s into %s (%s); diff: %s", res.Name, res.Branch, res.Base, res.Merged, statLine))
	case res.PRURL != "":
		m.outcome(ctx, res, "success", fmt.Sprintf("finish %s: pull request %s opened for %s into %s; diff: %s", res.Name, res.PRURL, res.Branch, res.Base, statLine))
	case req.Remove && res.Removed:
		m.outcome(ctx, res, "failure", fmt.Sprintf("finish %s: removed without merging (--force); diff: %s", res.Name, statLine))
	}
}

// locate fills in where the orchestrator is: from its record, else from
// the repository and the name.
func (m *Manager) locate(ctx context.Context, req api.FinishRequest, res *api.FinishResult) error {
	name := strings.TrimSpace(req.Name)
	if name == "" {
		return fmt.Errorf("%w: name the orchestrator to finish, like auth", api.ErrOrchestratorInvalid)
	}
	if m.cfg.Records != nil {
		if rec, ok, _ := m.cfg.Records.Get(name); ok && rec.Repo != "" && rec.Branch != "" {
			res.Name, res.Session, res.Worktree, res.Branch, res.Base, res.Repo = rec.Name, rec.Session, rec.Worktree, rec.Branch, rec.Base, rec.Repo
		}
	}
	if res.Name == "" {
		initiative := strings.TrimPrefix(name, api.OrchestratorPrefix)
		if why := api.ValidInitiative(initiative); why != "" {
			return fmt.Errorf("%w: %s", api.ErrOrchestratorInvalid, why)
		}
		top, err := m.repoRoot(ctx, req.Repo)
		if err != nil {
			return err
		}
		// A worktree's repoRoot is the worktree: find the main checkout.
		g := git{bin: m.cfg.Git, dir: top, timeout: m.cfg.GitTimeout}
		if common, err := g.run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir"); err == nil {
			top = filepath.Dir(common)
		}
		res.Name, res.Session, res.Repo, res.Branch = initiative, api.OrchestratorSession(initiative), top, initiative
		res.Worktree = filepath.Join(top, TreesDir, initiative)
	}
	if req.Base != "" {
		res.Base = req.Base
	}
	main := git{bin: m.cfg.Git, dir: res.Repo, timeout: m.cfg.GitTimeout}
	if res.Base == "" || res.Base == "HEAD" {
		b, err := main.run(ctx, "symbolic-ref", "--short", "-q", "HEAD")
		if err != nil || b == "" {
			return fmt.Errorf("%w: the main checkout %s is on no branch; pass --base with the branch to finish into", api.ErrOrchestratorInvalid, res.Repo)
		}
		res.Base = b
	}
	if ok, err := main.ok(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+res.Branch); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: branch %s does not exist in %s; pass --repo with the repository it was spawned in", api.ErrOrchestratorNotFound, res.Branch, res.Repo)
	}
	if ok, err := main.ok(ctx, "rev-parse", "--verify", "--quiet", res.Base+"^{commit}"); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%w: base %s is not a commit in %s; pass --base", api.ErrOrchestratorInvalid, res.Base, res.Repo)
	}
	return nil
}

// merge merges the branch into the base in the main checkout, which must
// have the base checked out and no changes. A merge that conflicts is
// aborted, leaving the checkout as it was.
func (m *Manager) merge(ctx context.Context, main git, mode string, res *api.FinishResult) error {
	if res.Uncommitted != "" {
		return fmt.Errorf("worktree %s has uncommitted changes a merge would leave out; commit them in the worktree (or ask the agent to), then finish again", res.Worktree)
	}
	cur, _ := main.run(ctx, "symbolic-ref", "--short", "-q", "HEAD")
	if cur != res.Base {
		return fmt.Errorf("the main checkout %s has %q checked out, not the base %s; check out %s there, then finish again", res.Repo, cur, res.Base, res.Base)
	}
	if st, err := main.run(ctx, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if st != "" {
		return fmt.Errorf("the main checkout %s has uncommitted changes; commit or stash them, then finish again", res.Repo)
	}
	args := []string{"merge", "--ff-only", res.Branch}
	if mode == api.MergeCommit {
		args = []string{"merge", "--no-ff", "--no-edit", "-m", fmt.Sprintf("Merge branch '%s' (system3 finish %s)", res.Branch, res.Name), res.Branch}
	}
	if _, err := main.run(ctx, args...); err != nil {
		conflicts, _ := main.run(ctx, "diff", "--name-only", "--diff-filter=U")
		if _, aerr := main.run(context.WithoutCancel(ctx), "merge", "--abort"); aerr != nil && conflicts != "" {
			return fmt.Errorf("%w: merging %s into %s conflicts in %s, and git merge --abort failed (%v): run git merge --abort in %s", api.ErrMergeConflict, res.Branch, res.Base, strings.ReplaceAll(conflicts, "\n", ", "), aerr, res.Repo)
		}
		if conflicts != "" {
			return fmt.Errorf("%w: merging %s into %s conflicts in %s; the merge was aborted and %s is unchanged: rebase %s on %s in the worktree (or ask the agent to), then finish again",
				api.ErrMergeConflict, res.Branch, res.Base, strings.ReplaceAll(conflicts, "\n", ", "), res.Repo, res.Branch, res.Base)
		}
		if mode == api.MergeFastForward {
			return fmt.Errorf("%w: %s cannot be fast-forwarded to %s (the branches have diverged; %v); finish with --merge merge for a merge commit, or rebase the branch", api.ErrMergeConflict, res.Base, res.Branch, err)
		}
		return fmt.Errorf("merge %s into %s: %w", res.Branch, res.Base, err)
	}
	res.Merged = mode
	res.MergeCommit, _ = main.run(ctx, "rev-parse", "HEAD")
	res.Steps = append(res.Steps, fmt.Sprintf("merged %s into %s (%s), now at %.12s", res.Branch, res.Base, mode, res.MergeCommit))
	return nil
}

// pullRequest pushes the branch to origin and opens a pull request with
// gh, which must be installed and logged in.
func (m *Manager) pullRequest(ctx context.Context, main git, req api.FinishRequest, res *api.FinishResult, stat string) error {
	gh, err := exec.LookPath(m.cfg.Gh)
	if err != nil {
		return fmt.Errorf("the GitHub CLI (%s) is not installed; install it (https://cli.github.com) or push %s and open the pull request by hand", m.cfg.Gh, res.Branch)
	}
	if _, err := m.runGh(ctx, gh, res.Repo, "auth", "status"); err != nil {
		return fmt.Errorf("gh is not logged in (%v); run gh auth login, then finish again", err)
	}
	if res.Uncommitted != "" {
		return fmt.Errorf("worktree %s has uncommitted changes the pull request would leave out; commit them first", res.Worktree)
	}
	if _, err := main.run(ctx, "push", "--set-upstream", "origin", res.Branch+":"+res.Branch); err != nil {
		return fmt.Errorf("push %s to origin: %w", res.Branch, err)
	}
	res.Pushed = true
	res.Steps = append(res.Steps, "pushed "+res.Branch+" to origin")
	title, body := req.Title, req.Body
	if title == "" {
		title = res.Name
	}
	if body == "" {
		body = fmt.Sprintf("Work of the %s orchestrator (system3).\n\n```\n%s\n```\n", res.Name, res.Stat)
	}
	out, err := m.runGh(ctx, gh, res.Repo, "pr", "create", "--base", res.Base, "--head", res.Branch, "--title", title, "--body", body)
	if err != nil {
		return fmt.Errorf("gh pr create: %w; the branch is pushed, open the pull request by hand", err)
	}
	res.PRURL = lastLine(out)
	res.Steps = append(res.Steps, "opened pull request "+res.PRURL)
	return nil
}

func (m *Manager) runGh(ctx context.Context, gh, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*m.cfg.GitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gh, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GH_PROMPT_DISABLED=1", "GIT_TERMINAL_PROMPT=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := lastLine(strings.TrimSpace(errb.String()))
		if msg == "" {
			msg = err.Error()
		}
		return "", errors.New(msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// remove stops the session, removes the worktree and deletes the branch:
// only once the branch is merged into the base or pushed as it is, unless
// forced.
func (m *Manager) remove(ctx context.Context, main git, req api.FinishRequest, res *api.FinishResult) error {
	merged, err := main.ok(ctx, "merge-base", "--is-ancestor", res.Branch, res.Base)
	if err != nil {
		return err
	}
	pushed := false
	if !merged {
		local, _ := main.run(ctx, "rev-parse", "refs/heads/"+res.Branch)
		remote, rerr := main.run(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+res.Branch)
		pushed = rerr == nil && remote == local
	}
	if !merged && !pushed && !req.Force {
		return fmt.Errorf("branch %s is neither merged into %s nor pushed, so nothing was removed; merge it (--merge ff|merge), open a pull request (--pr), or pass --force to delete it anyway", res.Branch, res.Base)
	}
	if res.Uncommitted != "" && !req.Force {
		return fmt.Errorf("worktree %s has uncommitted changes, so nothing was removed; commit them, or pass --force to lose them", res.Worktree)
	}
	if ok, _ := m.cfg.Tmux.HasSession(ctx, res.Session); ok {
		if _, err := m.Stop(ctx, api.StopRequest{Name: res.Session, Origin: req.Origin}); err != nil {
			return fmt.Errorf("stop %s before removing its worktree: %w", res.Session, err)
		}
		res.Stopped = true
		res.Steps = append(res.Steps, "stopped "+res.Session)
	}
	if dirExists(res.Worktree) {
		args := []string{"worktree", "remove", res.Worktree}
		if req.Force {
			args = []string{"worktree", "remove", "--force", res.Worktree}
		}
		if _, err := main.run(ctx, args...); err != nil {
			return fmt.Errorf("remove worktree: %w", err)
		}
		res.Removed = true
		res.Steps = append(res.Steps, "removed worktree "+res.Worktree)
	}
	del := "-d"
	if req.Force || pushed {
		// Pushed: safe although not merged locally.
		del = "-D"
	}
	if _, err := main.run(ctx, "branch", del, res.Branch); err != nil {
		return fmt.Errorf("delete branch %s: %w", res.Branch, err)
	}
	res.BranchDeleted = true
	res.Steps = append(res.Steps, "deleted branch "+res.Branch)
	if m.cfg.Records != nil {
		if _, err := m.cfg.Records.Remove(res.Name); err != nil {
			m.cfg.Logger.Warn("finish: forget record", "initiative", res.Name, "err", err)
		}
	}
	return nil
}

// outcome records how the initiative ended; a failing store is logged.
func (m *Manager) outcome(ctx context.Context, res *api.FinishResult, result, summary string) {
	if m.cfg.Outcome == nil {
		return
	}
	if err := m.cfg.Outcome(context.WithoutCancel(ctx), Outcome{Initiative: res.Name, Result: result, Summary: summary}); err != nil {
		m.cfg.Logger.Warn("finish: record outcome", "initiative", res.Name, "err", err)
		return
	}
	res.Outcome = result
	res.Steps = append(res.Steps, "recorded outcome "+result+" in the learning store")
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}
