package core

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// The idle health check logs an orchestrator that exited with unfinished
// tasks, once.
func TestOrchestratorHealth(t *testing.T) {
	var buf bytes.Buffer
	a := &App{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	f := monitortest.NewService(t, monitortest.Ticking(time.Now()))
	sess := func(pane string, st api.State, done, total int) api.Session {
		return api.Session{Pane: pane, Session: "orch" + pane, Target: "orch" + pane + ":0.0", Agent: "claude", State: st,
			TaskList: "L" + pane, Tasks: &api.TaskProgress{Completed: done, Total: total}}
	}
	f.SetSnapshot(api.Snapshot{Sessions: []api.Session{sess("%1", api.Exited, 2, 5), sess("%2", api.Exited, 3, 3), sess("%3", api.Working, 1, 4)}})
	check := orchestratorHealth(f, a)
	for range 2 {
		if err := check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(buf.String(), "orchestrator exited with unfinished tasks"); got != 1 || !strings.Contains(buf.String(), "target=orch%1:0.0") {
		t.Fatalf("log:\n%s", buf.String())
	}
}
