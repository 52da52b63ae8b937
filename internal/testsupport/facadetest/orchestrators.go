package facadetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// Orchestrators is a fake of the orchestrators (backend.Parts.Orchestrators)
// that also restores and finishes. It records every request and the links
// it is told of, reports each spawn step to the request's Progress, and
// answers with what the test scripted (Fail, SetStop, SetRestore,
// SetFinish, SetAgents), else with a result made from the request. Its
// zero value is ready; it is safe for concurrent use.
type Orchestrators struct {
	mu        sync.Mutex
	errs      map[string]error
	steps     []string
	stepDelay time.Duration
	stop      api.StopResult
	restore   *api.RestoreResult
	finish    *api.FinishResult
	agents    []string

	spawns   []api.SpawnRequest
	stops    []api.StopRequest
	restores []api.RestoreRequest
	finishes []api.FinishRequest
	links    []api.LinkRequest
}

var (
	_ lifecycle.Orchestrators = (*Orchestrators)(nil)
	_ lifecycle.Finisher      = (*Orchestrators)(nil)
)

// SpawnSteps are the steps a spawn reports unless SetSteps says others.
var SpawnSteps = []string{api.StepCheck, api.StepWorktree, api.StepReady}

// Agents are the agents a spawn may name unless SetAgents says others:
// the built-in ones a configuration without agents: gives.
var Agents = []string{"aider", "claude", "codex", "gemini"}

// Fail makes method ("spawn", "stop", "restore", "finish") return err
// after recording its request; nil restores it. Stop, Restore and Finish
// return their scripted result with it, if any (a stop that stopped the
// session but kept a dirty worktree); Spawn returns none.
func (o *Orchestrators) Fail(method string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.errs == nil {
		o.errs = map[string]error{}
	}
	o.errs[method] = err
}

// SetSteps sets the steps a spawn reports, "doing STEP" each, and how
// long it takes over each (its ctx ending stops it).
func (o *Orchestrators) SetSteps(delay time.Duration, steps ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps, o.stepDelay = steps, delay
}

// SetStop sets what Stop answers (zero until set).
func (o *Orchestrators) SetStop(res api.StopResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stop = res
}

// SetRestore sets what Restore answers; until set it answers each name
// restored.
func (o *Orchestrators) SetRestore(res api.RestoreResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restore = &res
}

// SetFinish sets what Finish answers; until set it answers the request's
// branch against main with one commit, a diff holding an escape sequence
// and a tab, and, when it merges, the merge.
func (o *Orchestrators) SetFinish(res api.FinishResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finish = &res
}

// SetAgents sets what AgentNames answers.
func (o *Orchestrators) SetAgents(names ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.agents = names
}

// Spawns returns the spawn requests so far, in order.
func (o *Orchestrators) Spawns() []api.SpawnRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.spawns)
}

// Stops returns the stop requests so far, in order.
func (o *Orchestrators) Stops() []api.StopRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.stops)
}

// Restores returns the restore requests so far, in order.
func (o *Orchestrators) Restores() []api.RestoreRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.restores)
}

// Finishes returns the finish requests so far, in order.
func (o *Orchestrators) Finishes() []api.FinishRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.finishes)
}

// Links returns the links Linked was told of, in order.
func (o *Orchestrators) Links() []api.LinkRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.links)
}

// Plain is o as orchestrators that cannot restore or finish (as a
// router to other hosts is), for the faces' "cannot" paths; it records
// into o.
func (o *Orchestrators) Plain() lifecycle.Orchestrators {
	return struct{ lifecycle.Orchestrators }{o}
}

func (o *Orchestrators) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	o.mu.Lock()
	o.spawns = append(o.spawns, req)
	err, steps, delay := o.errs["spawn"], o.steps, o.stepDelay
	o.mu.Unlock()
	if steps == nil {
		steps = SpawnSteps
	}
	for _, step := range steps {
		if req.Progress != nil {
			req.Progress(step, "doing "+step)
		}
		if delay > 0 {
			select {
			case <-ctx.Done():
				return api.SpawnResult{}, ctx.Err()
			case <-time.After(delay):
			}
		}
	}
	if err != nil {
		return api.SpawnResult{}, err
	}
	agent := req.Agent
	if agent == "" {
		agent = "claude"
	}
	return api.SpawnResult{Status: "spawned", Initiative: req.Initiative, Session: api.OrchestratorSession(req.Initiative), Pane: "%9",
		Worktree: "/repo/trees/" + req.Initiative, Branch: req.Initiative, Repo: req.Repo, TaskList: api.DefaultTaskList(req.Initiative),
		Agent: agent, AutoTrusted: !req.NoAutoTrust, Wisdom: []api.WisdomItem{}, WisdomNote: "none configured",
		Prompt: "Goal: " + req.Goal, PromptVerified: true}, nil
}

// errNoDeadline is Stop's answer to a ctx without a deadline: a stop waits
// on the agent, so whoever stops must bound it.
var errNoDeadline = errors.New("stop without a deadline")

func (o *Orchestrators) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stops = append(o.stops, req)
	if _, ok := ctx.Deadline(); !ok {
		return api.StopResult{}, errNoDeadline
	}
	return o.stop, o.errs["stop"]
}

func (o *Orchestrators) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restores = append(o.restores, req)
	if o.restore != nil {
		return *o.restore, o.errs["restore"]
	}
	if err := o.errs["restore"]; err != nil {
		return api.RestoreResult{}, err
	}
	res := api.RestoreResult{Orchestrators: []api.RestoreOutcome{}}
	for _, n := range req.Names {
		res.Orchestrators = append(res.Orchestrators, api.RestoreOutcome{Name: n, Session: api.OrchestratorSession(n), Status: api.RestoreRestored})
	}
	return res, nil
}

func (o *Orchestrators) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finishes = append(o.finishes, req)
	if o.finish != nil {
		return *o.finish, o.errs["finish"]
	}
	if err := o.errs["finish"]; err != nil {
		return api.FinishResult{}, err
	}
	res := api.FinishResult{Name: req.Name, Branch: req.Name, Base: "main", Commits: 1,
		Stat: " login.go | 1 +\n 1 file changed, 1 insertion(+)", Diff: "diff --git a/login.go b/login.go\n+package \x1b[31mlogin\n\tindented\n",
		Steps: []string{"diff"}}
	if req.Merge != "" {
		res.Merged = req.Merge
		res.Steps = append(res.Steps, "merged "+req.Name+" into main ("+req.Merge+")")
	}
	return res, nil
}

func (o *Orchestrators) AgentNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.agents == nil {
		return slices.Clone(Agents)
	}
	return slices.Clone(o.agents)
}

func (o *Orchestrators) Linked(_ context.Context, req api.LinkRequest, _ api.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.links = append(o.links, req)
}
