package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

func TestRestoreAndFinishTools(t *testing.T) {
	big := strings.Repeat("+line\n", maxDiffBytes/6+100)
	tests := []struct {
		name    string
		opts    Options
		plain   bool // a lifecycle that cannot restore or finish
		script  func(ff *facadetest.Orchestrators)
		tool    string
		args    map[string]any
		wantErr string
		check   func(t *testing.T, ff *facadetest.Orchestrators, out map[string]any)
	}{
		{name: "restore by name", tool: "restore_orchestrators", args: map[string]any{"names": []string{"auth"}},
			check: func(t *testing.T, ff *facadetest.Orchestrators, out map[string]any) {
				os := out["orchestrators"].([]any)
				if len(os) != 1 || os[0].(map[string]any)["status"] != "restored" {
					t.Errorf("out = %v", out)
				}
				if r := ff.Restores()[0]; len(r.Names) != 1 || r.All || r.Origin != "mcp:fin-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "restore all", tool: "restore_orchestrators", args: map[string]any{"all": true},
			check: func(t *testing.T, ff *facadetest.Orchestrators, out map[string]any) {
				if r := ff.Restores()[0]; !r.All {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "restore neither", tool: "restore_orchestrators", args: map[string]any{}, wantErr: `{"all": true}`},
		{name: "restore unsupported", plain: true, tool: "restore_orchestrators", args: map[string]any{"all": true}, wantErr: "cannot start or stop"},
		{name: "finish diff", tool: "finish_orchestrator", args: map[string]any{"name": "auth"},
			script: func(ff *facadetest.Orchestrators) {
				ff.SetFinish(api.FinishResult{Name: "auth", Branch: "auth", Base: "main", Stat: " a | 1 +", Diff: big, Steps: []string{"diff"}})
			},
			check: func(t *testing.T, ff *facadetest.Orchestrators, out map[string]any) {
				if d := out["diff"].(string); len(d) > maxDiffBytes+200 || !strings.Contains(d, "diff cut at 64 KiB") {
					t.Errorf("diff not cut: %d bytes", len(d))
				}
				if r := ff.Finishes()[0]; r.Name != "auth" || r.Merge != "" || r.Remove || r.Origin != "mcp:fin-test" {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "finish merge", tool: "finish_orchestrator", args: map[string]any{"name": "auth", "merge": "ff", "remove": true},
			script: func(ff *facadetest.Orchestrators) {
				ff.SetFinish(api.FinishResult{Name: "auth", Merged: "ff", Steps: []string{"diff", "merged"}})
			},
			check: func(t *testing.T, ff *facadetest.Orchestrators, out map[string]any) {
				if r := ff.Finishes()[0]; r.Merge != "ff" || !r.Remove || r.Force {
					t.Errorf("request = %+v", r)
				}
			}},
		{name: "finish bad merge", tool: "finish_orchestrator", args: map[string]any{"name": "auth", "merge": "rebase"}, wantErr: "merge"},
		{name: "finish conflict", tool: "finish_orchestrator", args: map[string]any{"name": "auth", "merge": "merge"},
			script: func(ff *facadetest.Orchestrators) {
				ff.Fail("finish", fmt.Errorf("%w: conflicts in README; the merge was aborted", api.ErrMergeConflict))
			},
			wantErr: "conflicts in README"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture(t)
			ff := &facadetest.Orchestrators{}
			if tt.script != nil {
				tt.script(ff)
			}
			parts := backend.Parts{Orchestrators: ff}
			if tt.plain {
				parts.Orchestrators = ff.Plain()
			}
			c := inProcess(t, newServer(t, f, tt.opts, parts), "fin-test")
			res, out := call(t, c, tt.tool, tt.args)
			txt := text(res)
			switch {
			case tt.wantErr == "" && res.IsError:
				t.Fatalf("tool error: %s", txt)
			case tt.wantErr != "" && !res.IsError:
				t.Fatalf("want a tool error containing %q, got %s", tt.wantErr, txt)
			case tt.wantErr != "" && !strings.Contains(txt, tt.wantErr):
				t.Fatalf("tool error %q lacks %q", txt, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, ff, out)
			}
		})
	}
}
