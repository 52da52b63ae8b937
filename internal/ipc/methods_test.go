package ipc

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// Each method of facade.Service, forwarded, names its own Method, and
// that Method calls the same method of the service it runs on; none of
// the table is left unreached. Names are the socket's: a wrong pairing
// would send one method's call as another's.
func TestEveryServiceMethodIsInTheTable(t *testing.T) {
	wire := map[string]string{
		"Snapshot": "snapshot", "Watch": "watch", "Wakes": "wakes", "WaitWake": "wait_wake",
		"SubscribeWakes": "subscribe_wakes", "Ack": "ack", "AckAll": "ack_all", "Preview": "preview", "WatchPreview": "watch_preview",
		"TaskLists": "task_lists", "Task": "task", "Inject": "inject", "SendKeys": "keys", "Answer": "answer",
		"Interrupt": "interrupt", "Audit": "audit", "Hook": "hook", "Link": "link", "Allow": "allow",
		"Features": "features", "Spawn": "spawn", "Stop": "stop", "Restore": "restore", "Finish": "finish", "Agents": "agents",
		"ReportOutcome": "report_outcome", "Capabilities": "capabilities", "Reflect": "reflect", "Learnings": "learnings", "Outcomes": "outcomes",
		"ListLearnings": "list_learnings", "DeleteLearnings": "delete_learnings",
		"PatternInfos": "patterns", "PatternInfo": "pattern", "ActiveAlerts": "active_alerts", "History": "alert_history",
		"Stats": "intervention_stats", "Directives": "directives", "RequestIntervention": "request_intervention",
		"ReportIntervention": "report_intervention", "Remind": "remind",
	}
	fake := failing{newFake(t)}
	for name := range methods {
		fake.Fail(name, errors.New(name))
	}
	var got *Method
	svc := Forwarding(func(ctx context.Context, m *Method, args any) (any, error) {
		got = m
		return m.Call(ctx, fake, args)
	})
	st := reflect.TypeFor[facade.Service]()
	if st.NumMethod() != len(methods) || len(wire) != len(methods) {
		t.Fatalf("facade.Service has %d methods, the table %d, this test knows %d", st.NumMethod(), len(methods), len(wire))
	}
	reached := map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range st.NumMethod() {
		gm := st.Method(i)
		in := []reflect.Value{reflect.ValueOf(ctx)}
		for j := 1; j < gm.Type.NumIn(); j++ {
			in = append(in, reflect.Zero(gm.Type.In(j)))
		}
		got = nil
		out := reflect.ValueOf(svc).MethodByName(gm.Name).Call(in)
		err, _ := out[len(out)-1].Interface().(error)
		if got == nil || got.Name != wire[gm.Name] {
			t.Errorf("%s was sent as %v, want %q", gm.Name, got, wire[gm.Name])
			continue
		}
		// The fake's Ack looks the (empty) id up before it fails.
		if err == nil || err.Error() != got.Name && !(got.Name == "ack" && errors.Is(err, api.ErrUnknownWake)) {
			t.Errorf("%s ran as %v on the service (error %v), want %s", gm.Name, got, err, gm.Name)
		}
		if len(out) == 2 && out[0].Kind() != reflect.Chan && err != nil && !out[0].IsZero() {
			t.Errorf("%s returned %v with its error", gm.Name, out[0])
		}
		reached[got.Name] = true
	}
	for name := range methods {
		if !reached[name] {
			t.Errorf("method %q is in the table but no service method sends it", name)
		}
	}
}

// Only the actions that reach a pane are sent at most once; everything
// else may run again on a service opened anew.
func TestMethodsSentAtMostOnce(t *testing.T) {
	want := map[string]bool{"inject": true, "keys": true, "answer": true, "interrupt": true,
		// What starts, stops or records something a second call would do
		// twice.
		"spawn": true, "stop": true, "restore": true, "finish": true, "report_outcome": true, "delete_learnings": true,
		"request_intervention": true, "report_intervention": true, "remind": true}
	for name, m := range methods {
		if m.sentAtMostOnce() != want[name] {
			t.Errorf("%s: sent at most once = %v, want %v", name, m.sentAtMostOnce(), want[name])
		}
	}
}

// failing is a facade.Service whose parts' every method fails with an
// error named after its method on the socket, as the test makes the fake
// under it fail: each answers itself, where backend.New's service would
// answer Features without failing and type a Remind first.
type failing struct{ *fakeService }

var _ facade.Service = failing{}

func (failing) Features(context.Context) (facade.Features, error) {
	return facade.Features{}, errors.New("features")
}

func (failing) Spawn(context.Context, api.SpawnRequest) (api.SpawnResult, error) {
	return api.SpawnResult{}, errors.New("spawn")
}

func (failing) Stop(context.Context, api.StopRequest) (api.StopResult, error) {
	return api.StopResult{}, errors.New("stop")
}

func (failing) Restore(context.Context, api.RestoreRequest) (api.RestoreResult, error) {
	return api.RestoreResult{}, errors.New("restore")
}

func (failing) Finish(context.Context, api.FinishRequest) (api.FinishResult, error) {
	return api.FinishResult{}, errors.New("finish")
}

func (failing) Agents(context.Context) ([]string, error) { return nil, errors.New("agents") }

func (failing) ReportOutcome(context.Context, api.Outcome) (api.LearnReport, error) {
	return api.LearnReport{}, errors.New("report_outcome")
}

func (failing) Capabilities(context.Context, string, string) ([]api.Capability, error) {
	return nil, errors.New("capabilities")
}

func (failing) Reflect(context.Context, string, string, api.Budget) (api.Reflection, error) {
	return api.Reflection{}, errors.New("reflect")
}

func (failing) Learnings(context.Context, int) (api.LearnSummary, error) {
	return api.LearnSummary{}, errors.New("learnings")
}

func (failing) Outcomes(context.Context, api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	return nil, errors.New("outcomes")
}

func (failing) ListLearnings(context.Context, api.LearningFilter) ([]api.LearnItem, error) {
	return nil, errors.New("list_learnings")
}

func (failing) DeleteLearnings(context.Context, api.LearnDeleteRequest) ([]api.LearnItem, error) {
	return nil, errors.New("delete_learnings")
}

func (failing) PatternInfos(context.Context) ([]api.PatternInfo, error) {
	return nil, errors.New("patterns")
}

func (failing) PatternInfo(context.Context, string) (api.PatternInfo, error) {
	return api.PatternInfo{}, errors.New("pattern")
}

func (failing) ActiveAlerts(context.Context) ([]api.CoachAlert, error) {
	return nil, errors.New("active_alerts")
}

func (failing) History(context.Context, api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	return nil, errors.New("alert_history")
}

func (failing) Stats(context.Context, string, string) ([]api.CoachStats, error) {
	return nil, errors.New("intervention_stats")
}

func (failing) Directives(context.Context) (api.DirectivesView, error) {
	return api.DirectivesView{}, errors.New("directives")
}

func (failing) RequestIntervention(context.Context, api.InterventionRequest) (api.InterventionResult, error) {
	return api.InterventionResult{}, errors.New("request_intervention")
}

func (failing) ReportIntervention(context.Context, api.CoachReport) (api.InterventionStanding, error) {
	return api.InterventionStanding{}, errors.New("report_intervention")
}

func (failing) Remind(context.Context, facade.RemindRequest) (api.ActionResult, error) {
	return api.ActionResult{}, errors.New("remind")
}
