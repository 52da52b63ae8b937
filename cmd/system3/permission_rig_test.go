package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/approval"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// permissionRig is the monitors of an approval-policy test of a real agent
// CLI running in pane, with permissionE2EConfig's policy and a deploy.sh
// in the CLI's directory dir for the model to run. A failed test logs the
// monitors' log, the screen and what the fake API saw.
type permissionRig struct {
	t     *testing.T
	state string
	pane  string
	svc   api.Service
}

// startPermissionRig writes deploy.sh into dir and starts the monitors on
// the tmux server at socket, with state as their state dir; screen and api
// say what the CLI shows and what its fake API saw, for a failure.
func startPermissionRig(t *testing.T, state, socket, pane, dir string, screen, api func() string) *permissionRig {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\necho deployed \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(permissionE2EConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := startTestMonitors(t, map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": t.TempDir(),
		"SYSTEM3_TMUX_SOCKET_PATH": socket, "SYSTEM3_CONFIG": config})
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(state, "system3.log"))
			t.Logf("system3.log:\n%s\nscreen:\n%s\nAPI:\n%s", log, screen(), api())
		}
	})
	return &permissionRig{t: t, state: state, pane: pane, svc: svc}
}

// session is the pane's session as the monitors show it now.
func (r *permissionRig) session() api.Session {
	snap, _ := r.svc.Snapshot(context.Background())
	for _, s := range snap.Sessions {
		if s.Pane == r.pane {
			return s
		}
	}
	return api.Session{}
}

// idle waits for the pane to be agent's, idle.
func (r *permissionRig) idle(agent string) {
	r.t.Helper()
	testkit.WaitForValue(r.t, 30*time.Second, agent+" idle", func() (string, bool) {
		s := r.session()
		return fmt.Sprintf("%s %s by %s %s", s.Agent, s.State, s.Evidence.Source, s.Evidence.Rule), s.Agent == agent && s.State == api.Idle
	})
}

// permissions are the approval policy's entries in the audit log of the
// state dir state.
func permissions(state string) []api.AuditEntry {
	es, _ := audit.Read(filepath.Join(state, audit.File))
	var out []api.AuditEntry
	for _, e := range es {
		if e.Action == approval.AuditAction {
			out = append(out, e)
		}
	}
	return out
}

// hookCommand is the command line of this test binary's `system3 hook`
// for the state dir state, as `hooks install --command` takes it.
func hookCommand(t testing.TB, state string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("env %s=1 SYSTEM3_STATE_DIR=%s %s hook", runMainEnv, core.ShellQuote(state), core.ShellQuote(exe))
}

// installHooks runs `system3 hooks install --agent agent` with this test
// binary's hook for the state dir state, env and args added, and checks
// that it added the events said ("hooks added for ...").
func installHooks(t *testing.T, agent, state, said string, env map[string]string, args ...string) {
	t.Helper()
	argv := append([]string{"hooks", "install", "--agent", agent, "--command", hookCommand(t, state)}, args...)
	if code, out, errOut := invoke(t, env, argv...); code != 0 || !strings.Contains(out, "hooks added for "+said) {
		t.Fatalf("hooks install --agent %s: %d\n%s%s", agent, code, out, errOut)
	}
}
