package api

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// The orchestrators' vocabulary: what a spawn, stop, restore or finish
// (internal/lifecycle) takes and returns, and its errors.

// OrchestratorPrefix starts the tmux session name of every orchestrator.
const OrchestratorPrefix = "orch-"

// OrchestratorSession is the tmux session of an initiative.
func OrchestratorSession(initiative string) string { return OrchestratorPrefix + initiative }

// DefaultTaskList is an initiative's task list when its spawn names none.
func DefaultTaskList(initiative string) string { return "PRD-" + strings.ToUpper(initiative) }

// initiativeRE is what an initiative name may be: safe as a git branch, a
// directory and a tmux session name (tmux turns '.' and ':' into '_').
var initiativeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)

// ValidInitiative reports why name cannot name an initiative ("" when it
// can).
func ValidInitiative(name string) string {
	if !initiativeRE.MatchString(name) {
		return fmt.Sprintf("%q is not a valid initiative name: use 1 to 48 letters, digits, '-' and '_', starting with a letter or digit (like auth-login)", name)
	}
	return ""
}

// Errors of the orchestrators a caller can tell apart with errors.Is.
var (
	// ErrOrchestratorInvalid: the request itself cannot work (a bad name,
	// no goal).
	ErrOrchestratorInvalid = errors.New("invalid request")
	// ErrOrchestratorExists: the initiative's branch, worktree or session
	// exists.
	ErrOrchestratorExists = errors.New("already exists")
	// ErrOrchestratorDirty: the repository has changes the worktree would
	// not have.
	ErrOrchestratorDirty = errors.New("uncommitted changes")
	// ErrOrchestratorNotFound: no orchestrator session by that name.
	ErrOrchestratorNotFound = errors.New("no such orchestrator")
	// ErrUnknownAgent: the agent is not one of the configured names.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrMergeConflict: the merge would conflict; nothing was changed.
	ErrMergeConflict = errors.New("merge conflict")
	// ErrRecordsDamaged: the orchestrator records file could not be read;
	// it was moved aside and the records start empty.
	ErrRecordsDamaged = errors.New("orchestrator records damaged")
	// ErrNoRecords: nothing to restore from.
	ErrNoRecords = errors.New("no orchestrator records")
)

// Steps of a spawn, as progress and errors name them.
const (
	StepValidate = "validate"
	StepCheck    = "check repository"
	StepWorktree = "create worktree"
	StepSetup    = "set up worktree"
	StepSession  = "start session"
	StepLink     = "link task list"
	StepReady    = "wait until ready"
	StepTrust    = "answer trust dialog"
	StepPrompt   = "send first prompt"
)

// SpawnError is a failed spawn: the step that failed and what was undone.
type SpawnError struct {
	Initiative string
	Step       string
	Err        error
	// CleanedUp lists what was undone ("killed tmux session orch-auth").
	CleanedUp []string
	// Left lists what could not be undone, with how to do it by hand.
	Left []string
}

func (e *SpawnError) Error() string {
	msg := fmt.Sprintf("spawn %s failed at step %q: %v", e.Initiative, e.Step, e.Err)
	switch {
	case len(e.CleanedUp) > 0:
		msg += "; cleaned up: " + strings.Join(e.CleanedUp, ", ")
	case e.Step != StepValidate && e.Step != StepCheck:
		msg += "; nothing to clean up"
	}
	if len(e.Left) > 0 {
		msg += "; left behind: " + strings.Join(e.Left, ", ")
	}
	return msg
}

func (e *SpawnError) Unwrap() error { return e.Err }

// SpawnRequest asks for a new orchestrator.
type SpawnRequest struct {
	// Initiative names the orchestrator: branch <initiative>, worktree
	// <repo>/trees/<initiative>, tmux session orch-<initiative>.
	Initiative string `json:"initiative"`
	// Goal is what the orchestrator is to achieve; it opens the first
	// prompt.
	Goal string `json:"goal"`
	// Repo is a directory in the git repository (default: the working
	// directory).
	Repo string `json:"repo,omitempty"`
	// Base is the commit-ish the new branch starts from (default HEAD).
	Base string `json:"base,omitempty"`
	// Agent is the name of a configured agent (default "claude"): the
	// command line it runs is the operator's, from the configuration,
	// never the requester's.
	Agent string `json:"agent,omitempty"`
	// Command is a command line the operator typed (`system3 spawn
	// --agent "CMD ARGS"`), run by the shell instead of a named agent. Only
	// the CLI sets it; it is refused from every other origin.
	Command string `json:"-"`
	// TaskList is the task list id (default PRD-<INITIATIVE>).
	TaskList string `json:"task_list,omitempty"`
	// Context is more text for the first prompt.
	Context string `json:"context,omitempty"`
	// NoAutoTrust leaves Claude Code's folder-trust dialog to the
	// operator (spawn still waits for it to be answered).
	NoAutoTrust bool `json:"no_auto_trust,omitempty"`
	// Origin says who asks, for the audit log: "cli", "tui", "mcp:<client>".
	Origin string `json:"origin"`
	// Host names another configured host to start it on (see
	// docs/remote.md); empty or "local": this machine. A Manager starts
	// orchestrators on its own machine only and refuses any other host.
	Host string `json:"host,omitempty"`
	// Progress, when set, hears each step as it starts.
	Progress func(step, message string) `json:"-"`
}

// SpawnResult is a spawned orchestrator.
type SpawnResult struct {
	Status     string   `json:"status"` // "spawned"
	Initiative string   `json:"initiative"`
	Session    string   `json:"session"`
	Pane       string   `json:"pane"`
	Worktree   string   `json:"worktree"`
	Branch     string   `json:"branch"`
	Base       string   `json:"base"`
	Repo       string   `json:"repo"`
	TaskList   string   `json:"task_list"`
	Agent      string   `json:"agent"`
	Command    []string `json:"command"`
	// AutoTrusted: system3 answered the folder-trust dialog.
	AutoTrusted bool `json:"auto_trusted"`
	// TreesExcluded: trees/ was added to .git/info/exclude.
	TreesExcluded bool `json:"trees_excluded,omitempty"`
	// Wisdom is what went into the first prompt from the learning store,
	// and WisdomNote why there is none ("none configured").
	Wisdom     []WisdomItem `json:"wisdom"`
	WisdomNote string       `json:"wisdom_note,omitempty"`
	Prompt     string       `json:"prompt"`
	// PromptVerified: the agent was seen to take the first prompt.
	PromptVerified bool   `json:"prompt_verified"`
	Detail         string `json:"detail,omitempty"`
	// Setup lists what the configured set-up did; SetupLog keeps its
	// command's output.
	Setup    []string `json:"setup,omitempty"`
	SetupLog string   `json:"setup_log,omitempty"`
}

// WisdomItem is one learning from earlier work offered to a new
// orchestrator in its first prompt, quoted as its reporter's.
type WisdomItem struct {
	ID   int64  `json:"id"`
	Text string `json:"text"`
	// Kind is "pattern" (from work that went well) or "anti-pattern"
	// (from work that failed or was poorly reasoned).
	Kind string `json:"kind,omitempty"`
	// ReportedBy is who reported it, as system3 saw them; empty: unknown.
	ReportedBy string `json:"reported_by"`
	// Reported is when its reporter reported it.
	Reported time.Time `json:"reported"`
}

// StopRequest asks to stop an orchestrator.
type StopRequest struct {
	// Name is the initiative ("auth") or its session ("orch-auth"), or the
	// name of any tmux session.
	Name string `json:"name"`
	// RemoveWorktree also removes the orchestrator's worktree (never one
	// with uncommitted changes; the branch is kept).
	RemoveWorktree bool `json:"remove_worktree,omitempty"`
	// Repo finds the worktree (<repo>/trees/<initiative>) when the session
	// no longer shows where it ran.
	Repo   string `json:"repo,omitempty"`
	Origin string `json:"origin"`
}

// StopResult is what Stop did.
type StopResult struct {
	Status  string `json:"status"` // "stopped"
	Session string `json:"session"`
	// Interrupted: the agent was sent its interrupt key before the kill.
	Interrupted bool `json:"interrupted"`
	// Worktree is the orchestrator's worktree, when known; Removed says
	// whether it was removed. The branch is always kept.
	Worktree string `json:"worktree,omitempty"`
	Removed  bool   `json:"worktree_removed"`
	Branch   string `json:"branch,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// RestoreRequest asks to bring back orchestrators whose tmux sessions are
// gone.
type RestoreRequest struct {
	// Names are initiatives or sessions; empty with All: every record not
	// stopped on purpose.
	Names  []string `json:"names,omitempty"`
	All    bool     `json:"all,omitempty"`
	Origin string   `json:"origin"`
	// Progress, when set, hears each orchestrator as it starts.
	Progress func(name, message string) `json:"-"`
}

// Restore outcomes (RestoreOutcome.Status).
const (
	RestoreRestored = "restored"
	RestoreSkipped  = "skipped"
	RestoreFailed   = "failed"
)

// RestoreOutcome is what restore did for one orchestrator.
type RestoreOutcome struct {
	Name    string `json:"name"`
	Session string `json:"session"`
	Status  string `json:"status"` // restored, skipped, failed
	Reason  string `json:"reason,omitempty"`
	Pane    string `json:"pane,omitempty"`
	// Command is the argv it was restarted with, resume included.
	Command        []string `json:"command,omitempty"`
	AgentSessionID string   `json:"agent_session_id,omitempty"`
	TaskList       string   `json:"task_list,omitempty"`
}

// RestoreResult is what Restore did, per orchestrator, by name.
type RestoreResult struct {
	Orchestrators []RestoreOutcome `json:"orchestrators"`
	// Problem is a damaged records file, moved aside.
	Problem string `json:"problem,omitempty"`
}

// Counts returns how many were restored, skipped and failed.
func (r RestoreResult) Counts() (restored, skipped, failed int) {
	for _, o := range r.Orchestrators {
		switch o.Status {
		case RestoreRestored:
			restored++
		case RestoreSkipped:
			skipped++
		default:
			failed++
		}
	}
	return
}

// Merge modes of finish (FinishRequest.Merge).
const (
	MergeFastForward = "ff"
	MergeCommit      = "merge"
)

// FinishRequest asks to finish an orchestrator's work. With no action it
// only shows the diff against the base branch; each action is explicit.
type FinishRequest struct {
	// Name is the initiative or its session.
	Name string `json:"name"`
	// Merge merges the branch into the base branch in the main checkout:
	// "ff" (fast-forward only) or "merge" (a merge commit); "" does not.
	Merge string `json:"merge,omitempty"`
	// PR pushes the branch and opens a pull request with gh.
	PR bool `json:"pr,omitempty"`
	// Title and Body of the pull request (default: the initiative, and
	// the diff stat).
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
	// Remove stops the session, removes the worktree and deletes the
	// branch, once the branch is merged into the base or pushed.
	Remove bool `json:"remove,omitempty"`
	// Force removes what is neither merged nor pushed, and a worktree
	// with uncommitted changes.
	Force bool `json:"force,omitempty"`
	// Repo, Base: where to look when there is no record of the
	// orchestrator (default: the working directory, and the main
	// checkout's branch).
	Repo   string `json:"repo,omitempty"`
	Base   string `json:"base,omitempty"`
	Origin string `json:"origin"`
	// Progress, when set, hears each step as it starts.
	Progress func(step, message string) `json:"-"`
}

// FinishResult is what Finish found and did.
type FinishResult struct {
	Name     string `json:"name"`
	Session  string `json:"session"`
	Worktree string `json:"worktree"`
	Branch   string `json:"branch"`
	Base     string `json:"base"`
	Repo     string `json:"repo"`
	// Stat and Diff are the branch's changes since it left the base
	// (git diff BASE...BRANCH); Uncommitted lists changed files not yet
	// committed in the worktree (they are in no diff and no merge).
	Stat        string `json:"stat"`
	Diff        string `json:"diff"`
	Uncommitted string `json:"uncommitted,omitempty"`
	Commits     int    `json:"commits"`
	// Merged is the merge done ("ff" or "merge"), MergeCommit the base's
	// new head.
	Merged      string `json:"merged,omitempty"`
	MergeCommit string `json:"merge_commit,omitempty"`
	Pushed      bool   `json:"pushed,omitempty"`
	PRURL       string `json:"pr_url,omitempty"`
	// Stopped, Removed, BranchDeleted: the clean-up done.
	Stopped       bool `json:"session_stopped,omitempty"`
	Removed       bool `json:"worktree_removed,omitempty"`
	BranchDeleted bool `json:"branch_deleted,omitempty"`
	// Outcome is what was recorded in the learning store ("success",
	// "failure"), when anything was.
	Outcome string `json:"outcome,omitempty"`
	// Steps says what was done, in order.
	Steps []string `json:"steps"`
}
