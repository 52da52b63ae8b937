package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

// A spawn over the socket reports its steps as they come, in order,
// carries the operator's command line, names the repository as an
// absolute path (the daemon runs elsewhere), and takes its origin from the
// peer with the client's claim kept.
func TestSpawnOverTheSocket(t *testing.T) {
	b := facadetest.Over(newFake(t))
	b.Orchestrators.SetSteps(0, "worktree", "session", "prompt")
	ts := serve(t, b)
	c := dial(t, ts.path)
	var got []string
	res, err := c.Spawn(context.Background(), api.SpawnRequest{Initiative: "auth", Goal: "g", Command: "aider --yes", Origin: "cli",
		Progress: func(step, msg string) { got = append(got, step+"="+msg) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"worktree=doing worktree", "session=doing session", "prompt=doing prompt"}
	if !slices.Equal(got, want) {
		t.Errorf("progress = %q, want %q", got, want)
	}
	wd, _ := os.Getwd()
	if res.Status != "spawned" || res.Repo != wd {
		t.Errorf("result = %+v, want spawned in %s", res, wd)
	}
	req := b.Orchestrators.Spawns()[0]
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
	if r := b.Orchestrators.Spawns()[1].Repo; r != filepath.Join(wd, "sub") {
		t.Errorf("relative repo reached the daemon as %q", r)
	}
}

// The errors of the parts keep their identity across the socket, so the
// dashboard and the MCP server tell "not available" and "not found" from
// a failure, as they do in-process.
func TestPartErrorsCrossTheSocket(t *testing.T) {
	svc := backend.New(newFake(t), backend.Parts{})
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
