package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// parts is a facade.Service over a fake api.Service whose orchestrators,
// learning store and coach record what they are asked and fail, when fail
// is set, with an error named after the method.
type parts struct {
	*fakeService
	fail bool

	mu      sync.Mutex
	spawns  []api.SpawnRequest
	stops   []api.StopRequest
	deletes []api.LearnDeleteRequest
	steps   []string // progress a spawn reports
}

var _ facade.Service = (*parts)(nil)

func (p *parts) err(name string) error {
	if p.fail {
		return errors.New(name)
	}
	return nil
}

func (p *parts) Features(context.Context) (facade.Features, error) {
	if p.fail {
		return facade.Features{}, p.err("features")
	}
	return facade.Features{Orchestrators: true, Finish: true, Learning: true, Coaching: true}, nil
}

func (p *parts) Spawn(_ context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	p.mu.Lock()
	p.spawns = append(p.spawns, req)
	p.mu.Unlock()
	for _, s := range p.steps {
		if req.Progress != nil {
			req.Progress(s, "step "+s)
		}
	}
	if err := p.err("spawn"); err != nil {
		return api.SpawnResult{}, err
	}
	return api.SpawnResult{Status: "spawned", Initiative: req.Initiative, Repo: req.Repo}, nil
}

func (p *parts) Stop(_ context.Context, req api.StopRequest) (api.StopResult, error) {
	p.mu.Lock()
	p.stops = append(p.stops, req)
	p.mu.Unlock()
	return api.StopResult{}, p.err("stop")
}

func (p *parts) Restore(context.Context, api.RestoreRequest) (api.RestoreResult, error) {
	return api.RestoreResult{}, p.err("restore")
}

func (p *parts) Finish(context.Context, api.FinishRequest) (api.FinishResult, error) {
	return api.FinishResult{}, p.err("finish")
}

func (p *parts) Agents(context.Context) ([]string, error) {
	if p.fail {
		return nil, p.err("agents")
	}
	return []string{"claude", "codex"}, nil
}

func (p *parts) ReportOutcome(context.Context, api.Outcome) (api.LearnReport, error) {
	return api.LearnReport{}, p.err("report_outcome")
}

func (p *parts) Capabilities(context.Context, string, string) ([]api.Capability, error) {
	return nil, p.err("capabilities")
}

func (p *parts) Reflect(context.Context, string, string, api.Budget) (api.Reflection, error) {
	return api.Reflection{}, p.err("reflect")
}

func (p *parts) Learnings(context.Context, int) (api.LearnSummary, error) {
	return api.LearnSummary{}, p.err("learnings")
}

func (p *parts) Outcomes(context.Context, api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	return nil, p.err("outcomes")
}

func (p *parts) ListLearnings(context.Context, api.LearningFilter) ([]api.LearnItem, error) {
	return nil, p.err("list_learnings")
}

func (p *parts) DeleteLearnings(_ context.Context, req api.LearnDeleteRequest) ([]api.LearnItem, error) {
	p.mu.Lock()
	p.deletes = append(p.deletes, req)
	p.mu.Unlock()
	if err := p.err("delete_learnings"); err != nil {
		return nil, err
	}
	items := make([]api.LearnItem, len(req.IDs))
	for i, id := range req.IDs {
		items[i] = api.LearnItem{ID: id, Kind: api.LearningPattern, Text: "learning " + fmt.Sprint(id)}
	}
	return items, nil
}

func (p *parts) PatternInfos(context.Context) ([]api.PatternInfo, error) {
	return nil, p.err("patterns")
}

func (p *parts) PatternInfo(context.Context, string) (api.PatternInfo, error) {
	return api.PatternInfo{}, p.err("pattern")
}

func (p *parts) ActiveAlerts(context.Context) ([]api.CoachAlert, error) {
	return nil, p.err("active_alerts")
}

func (p *parts) History(context.Context, api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	return nil, p.err("alert_history")
}

func (p *parts) Stats(context.Context, string, string) ([]api.CoachStats, error) {
	return nil, p.err("intervention_stats")
}

func (p *parts) Directives(context.Context) (api.DirectivesView, error) {
	return api.DirectivesView{}, p.err("directives")
}

func (p *parts) RequestIntervention(context.Context, api.InterventionRequest) (api.InterventionResult, error) {
	return api.InterventionResult{}, p.err("request_intervention")
}

func (p *parts) ReportIntervention(context.Context, api.CoachReport) (api.InterventionStanding, error) {
	return api.InterventionStanding{}, p.err("report_intervention")
}

func (p *parts) Remind(context.Context, facade.RemindRequest) (api.ActionResult, error) {
	return api.ActionResult{}, p.err("remind")
}

// A spawn over the socket reports its steps as they come, in order,
// carries the operator's command line, names the repository as an
// absolute path (the daemon runs elsewhere), and takes its origin from the
// peer with the client's claim kept.
func TestSpawnOverTheSocket(t *testing.T) {
	p := &parts{fakeService: newFake(t), steps: []string{"worktree", "session", "prompt"}}
	ts := serve(t, p)
	c := dial(t, ts.path)
	var got []string
	res, err := c.Spawn(context.Background(), api.SpawnRequest{Initiative: "auth", Goal: "g", Command: "aider --yes", Origin: "cli",
		Progress: func(step, msg string) { got = append(got, step+"="+msg) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"worktree=step worktree", "session=step session", "prompt=step prompt"}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %q, want %q", got, want)
	}
	wd, _ := os.Getwd()
	if res.Status != "spawned" || res.Repo != wd {
		t.Errorf("result = %+v, want spawned in %s", res, wd)
	}
	p.mu.Lock()
	req := p.spawns[0]
	p.mu.Unlock()
	if req.Command != "aider --yes" || req.Repo != wd || !filepath.IsAbs(req.Repo) {
		t.Errorf("the daemon got command %q, repo %q", req.Command, req.Repo)
	}
	if api.Claimed(req.Origin) != "cli" || req.Origin == "cli" {
		t.Errorf("origin %q: want the peer, claiming cli", req.Origin)
	}
	// A relative repository is the client's, made absolute.
	if _, err := c.Spawn(context.Background(), api.SpawnRequest{Initiative: "b", Repo: "sub"}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.spawns[1].Repo; r != filepath.Join(wd, "sub") {
		t.Errorf("relative repo reached the daemon as %q", r)
	}
}

// The errors of the parts keep their identity across the socket, so the
// dashboard and the MCP server tell "not available" and "not found" from
// a failure, as they do in-process.
func TestPartErrorsCrossTheSocket(t *testing.T) {
	svc := facade.New(newFake(t), facade.Parts{})
	c := dial(t, serve(t, svc).path)
	f, err := c.Features(context.Background())
	if err != nil || f != (facade.Features{}) {
		t.Fatalf("features = %+v, %v; want none", f, err)
	}
	if _, err := c.Spawn(context.Background(), api.SpawnRequest{Initiative: "x"}); !errors.Is(err, facade.ErrUnavailable) {
		t.Errorf("spawn without orchestrators: %v, want ErrUnavailable", err)
	}
	if _, err := c.Learnings(context.Background(), 5); !errors.Is(err, facade.ErrUnavailable) {
		t.Errorf("learnings without a store: %v, want ErrUnavailable", err)
	}
	for _, tt := range []struct {
		err  error
		want error
	}{
		{api.ErrCoachNotFound, api.ErrCoachNotFound}, {api.ErrLearnInvalid, api.ErrLearnInvalid}, {api.ErrOrchestratorExists, api.ErrOrchestratorExists},
		{api.ErrUnknownAgent, api.ErrUnknownAgent}, {api.ErrNotRecorded, api.ErrNotRecorded},
	} {
		we := toWireError(tt.err)
		if got := we.err(); !errors.Is(got, tt.want) {
			t.Errorf("%v came back as %v (code %s)", tt.err, got, we.Code)
		}
	}
}

// A failed spawn's account (its step, what was cleaned up and left)
// crosses the socket whole, its cause's identity kept: `system3 spawn
// --json` prints it as it does in-process.
func TestSpawnErrorCrossesTheSocket(t *testing.T) {
	in := &api.SpawnError{Initiative: "auth", Step: api.StepCheck, Err: fmt.Errorf("%w: trees/auth exists", api.ErrOrchestratorExists),
		CleanedUp: []string{"killed tmux session orch-auth"}, Left: []string{"remove trees/auth by hand"}}
	got := toWireError(in).err()
	var se *api.SpawnError
	if !errors.As(got, &se) {
		t.Fatalf("%v (%T) is no *api.SpawnError", got, got)
	}
	if se.Initiative != "auth" || se.Step != api.StepCheck || !slices.Equal(se.CleanedUp, in.CleanedUp) || !slices.Equal(se.Left, in.Left) {
		t.Errorf("account = %+v, want %+v", se, in)
	}
	if !errors.Is(got, api.ErrOrchestratorExists) || got.Error() != in.Error() {
		t.Errorf("cause: %q (exists %v), want %q", got.Error(), errors.Is(got, api.ErrOrchestratorExists), in.Error())
	}
}
