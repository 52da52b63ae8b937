package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tmux"
)

// Lifecycle commands and watch across hosts, through the real sshd:
// watch --all-hosts follows the remote's sessions as lab:NAME; stop
// lab:NAME runs stop on the remote (its session goes, watch sees it go),
// audited here with its outcome; link --session lab:NAME links there; a
// host that is down gets its sentence, audited here too.
func TestHostsRouteLifecycleOverSSH(t *testing.T) {
	w := newHostsWorld(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The remote's CLI must find the remote's tmux server, as a login
	// profile there would tell it.
	wrapper := filepath.Join(t.TempDir(), "system3-lab")
	script := fmt.Sprintf("#!/bin/sh\nexport SYSTEM3_TMUX_SOCKET_PATH='%s'\nexec '%s' \"$@\"\n", w.remote.Path, self)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(w.env["SYSTEM3_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	cfg = fmt.Appendf(cfg, "  lab:\n    ssh: remote\n    system3: %s\n    state_dir: %s\n    ssh_options: [-F, %s]\n", wrapper, w.state, w.ssh.config)
	if err := os.WriteFile(w.env["SYSTEM3_CONFIG"], cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	rc := tmux.NewClient(w.remote)
	for _, name := range []string{"orch-far", "orch-linked"} {
		if _, err := rc.NewSession(context.Background(), tmux.NewSessionOptions{Name: name, Width: 100, Height: 30, Command: []string{"sleep", "600"}}); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testkit.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"watch", "--all-hosts", "--json"}, strings.NewReader(""), &out, &errOut, func(k string) string { return w.env[k] })
	}()
	testkit.WaitFor(t, 30*time.Second, "watch --all-hosts to show lab:orch-far", func() bool {
		return strings.Contains(out.String(), `"session":"lab:orch-far"`) && strings.Contains(out.String(), `"host":"lab"`)
	})

	code, sout, serr := invoke(t, w.env, "stop", "lab:orch-far")
	if code != 0 || !strings.Contains(sout, "stopped orch-far") {
		t.Fatalf("stop lab:orch-far: exit %d, out %q, stderr %q", code, sout, serr)
	}
	if ok, err := rc.HasSession(context.Background(), "orch-far"); err != nil || ok {
		t.Fatalf("the remote session is still there (%v, %v)", ok, err)
	}
	testkit.WaitFor(t, 30*time.Second, "watch to see lab:orch-far go", func() bool {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, `"kind":"removed"`) && strings.Contains(l, `"session":"lab:orch-far"`) {
				return true
			}
		}
		return false
	})

	code, sout, serr = invoke(t, w.env, "link", "--session", "lab:orch-linked", "--task-list", "PRD-FAR")
	if code != 0 || !strings.Contains(sout, "PRD-FAR") {
		t.Fatalf("link lab:orch-linked: exit %d, out %q, stderr %q", code, sout, serr)
	}
	snap, err := dialDaemon(t, w.state).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	linked := false
	for _, s := range snap.Sessions {
		if s.Session == "orch-linked" && s.TaskList == "PRD-FAR" {
			linked = true
		}
	}
	if !linked {
		t.Errorf("the remote daemon does not show the link: %+v", snap.Sessions)
	}

	// MCP: stop_orchestrator lab:NAME runs stop there as the MCP client,
	// not as its operator.
	if _, err := rc.NewSession(context.Background(), tmux.NewSessionOptions{Name: "orch-mcp", Width: 100, Height: 30, Command: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	a := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return w.env[k] }}, stdin: strings.NewReader(""), stdout: io.Discard}
	if err := a.setup(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	local := dialDaemon(t, w.env["SYSTEM3_STATE_DIR"])
	var opts mcpserver.Options
	a.WithHosts(&opts)
	// The daemon's orchestrators route HOST:NAME to its hosts.
	ms, err := mcpserver.New(a.FleetOf(local), opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ms.Handler())
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); ms.Close() })
	mc, err := client.NewStreamableHttpClient(ts.URL + mcpserver.EndpointPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	mcpStart(t, mc, "hosts-lc")
	mout, isErr := callTool(t, mc, "stop_orchestrator", map[string]any{"name": "lab:orch-mcp"})
	if isErr || !strings.Contains(mout, `"session":"lab:orch-mcp"`) {
		t.Fatalf("stop_orchestrator lab:orch-mcp: %s", mout)
	}
	if ok, err := rc.HasSession(context.Background(), "orch-mcp"); err != nil || ok {
		t.Fatalf("the remote session orch-mcp is still there (%v, %v)", ok, err)
	}
	entries, err := audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	remoteStop := false
	for _, e := range entries {
		if e.Action == "stop" && e.Target == "orch-mcp" && strings.Contains(e.Origin, "mcp:hosts-lc via ssh from ") {
			remoteStop = true
		}
	}
	if !remoteStop {
		t.Errorf("the remote audit log lacks the MCP client's stop: %+v", entries)
	}
	if mout, isErr := callTool(t, mc, "stop_orchestrator", map[string]any{"name": "down:orch-x"}); !isErr || !strings.Contains(mout, "down or unreachable") {
		t.Errorf("stop_orchestrator down:orch-x: %s", mout)
	}
	// spawn_orchestrator with host runs spawn there as the MCP client: a
	// repository that is not there fails there, with its reason, audited
	// on both sides; an unknown host is refused here.
	norepo := filepath.Join(t.TempDir(), "no-repo")
	mout, isErr = callTool(t, mc, "spawn_orchestrator", map[string]any{"initiative": "far", "goal": "Try it", "repo": norepo, "host": "lab"})
	if !isErr || !strings.Contains(mout, "host lab: spawn failed") {
		t.Fatalf("spawn_orchestrator on lab with no repository: %s", mout)
	}
	entries, err = audit.Read(filepath.Join(w.state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	remoteSpawn := false
	for _, e := range entries {
		if e.Action == "spawn" && e.Target == "orch-far" && e.Error != "" && strings.Contains(e.Origin, "mcp:hosts-lc via ssh from ") {
			remoteSpawn = true
		}
	}
	if !remoteSpawn {
		t.Errorf("the remote audit log lacks the MCP client's failed spawn: %+v", entries)
	}
	if mout, isErr := callTool(t, mc, "spawn_orchestrator", map[string]any{"initiative": "far", "goal": "Try it", "host": "nosuch"}); !isErr || !strings.Contains(mout, `no host "nosuch"`) {
		t.Errorf("spawn_orchestrator on an unknown host: %s", mout)
	}

	code, _, serr = invoke(t, w.env, "stop", "down:orch-x")
	if code == 0 || !strings.Contains(serr, "host down is down or unreachable") {
		t.Fatalf("stop down:orch-x: exit %d, stderr %q", code, serr)
	}

	// This machine's audit: each routed command with its outcome.
	var stop, link, failed, spawned bool
	for _, e := range routedEntries(t, w.env["SYSTEM3_STATE_DIR"]) {
		switch {
		case e.Tool == "spawn" && e.Host == "lab" && e.Target == "lab:orch-far" && e.Origin == "mcp:hosts-lc" && e.Phase == audit.PhaseResult && e.Error != "":
			spawned = true
		case e.Tool == "stop" && e.Host == "lab" && e.Target == "lab:orch-far" && e.Phase == audit.PhaseResult && e.Sent && e.Error == "":
			stop = true
		case e.Tool == "link" && e.Host == "lab" && e.Phase == audit.PhaseResult && e.Sent:
			link = true
		case e.Tool == "stop" && e.Host == "down" && e.Phase == audit.PhaseResult && !e.Sent && strings.Contains(e.Error, "down or unreachable"):
			failed = true
		}
	}
	if !stop || !link || !failed || !spawned {
		t.Errorf("audit here: stop %v, link %v, failure %v, spawn %v: %+v", stop, link, failed, spawned, routedEntries(t, w.env["SYSTEM3_STATE_DIR"]))
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("watch exited %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not end")
	}
}

// With a local daemon that follows the config's hosts, status
// --all-hosts takes the remote's sessions from it ("followed") instead of
// asking over ssh, and a host that is down is still shown disconnected
// with its sentence.
func TestHostsStatusFromFollowingDaemon(t *testing.T) {
	w := newHostsWorld(t)
	if _, err := tmux.NewClient(w.remote).NewSession(context.Background(), tmux.NewSessionOptions{Name: "orch-seen", Width: 100, Height: 30, Command: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	env := followingDaemon(t, w.env)

	var doc hostsStatusDoc
	testkit.WaitFor(t, 30*time.Second, "status --all-hosts to show the remote followed", func() bool {
		code, out, _ := invoke(t, env, "status", "--all-hosts", "--json")
		doc = hostsStatusDoc{}
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
			return false
		}
		for _, h := range doc.Hosts {
			if h.Name == "remote" && h.Source == "followed" && h.State == "connected" {
				return true
			}
		}
		return false
	})
	found := false
	for _, s := range doc.Sessions {
		if s.Host == "remote" && s.Session.Session == "remote:orch-seen" {
			found = true
		}
	}
	by := map[string]hostStatus{}
	for _, h := range doc.Hosts {
		by[h.Name] = h
	}
	if !found || by["down"].State != "disconnected" || !strings.Contains(by["down"].Error, "down or unreachable") || by["local"].State != "connected" {
		t.Fatalf("status --all-hosts from the daemon: %+v", doc)
	}
}

// followingDaemon starts a daemon (monitors and socket, in this process)
// with env's config, hosts included, so it follows them; it has its own
// state dir and tmux server. It returns the environment of its commands.
func followingDaemon(t testing.TB, env map[string]string) map[string]string {
	t.Helper()
	out := maps.Clone(env)
	out["SYSTEM3_STATE_DIR"] = testkit.ShortDir(t)
	out["SYSTEM3_TMUX_SOCKET_PATH"] = tmuxtest.NewServer(t, "sleep", "600").Path
	startTestMonitors(t, out)
	return out
}
