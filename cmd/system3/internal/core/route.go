package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/lifecycle"
)

// RoutedVia is what a routed action adds to its origin: "via ssh from
// THIS-MACHINE".
func RoutedVia() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "?"
	}
	return "via ssh from " + name
}

// RouteCLI runs `system3 ARGS...` on host through ssh, its output to
// stdout and stderr, and returns the remote exit status. This machine's
// audit log records the routing (action route, tool, host, target, the
// arguments) before anything runs (nothing runs when that entry cannot be
// written) and after, with the exit status or the failure.
func (a *App) RouteCLI(ctx context.Context, origin, host, tool, target string, args []string, stdout, stderr io.Writer) (int, error) {
	h, err := a.RemoteHost(host)
	if err != nil {
		return -1, err
	}
	log := audit.Open(a.Settings.StateDir)
	defer log.Close()
	e := api.AuditEntry{Origin: origin, Action: "route", Tool: tool, Host: host, Target: api.JoinHost(host, target),
		ID: fmt.Sprintf("route-%d-%d", time.Now().UnixNano(), os.Getpid()), Phase: audit.PhaseAttempt, Args: strings.Join(args, " ")}
	if err := log.Write(e); err != nil {
		return -1, fmt.Errorf("not sent to host %s: %w", host, err)
	}
	code, err := h.RunCLI(ctx, stdout, stderr, args...)
	e.Phase, e.Time, e.Args = audit.PhaseResult, time.Time{}, ""
	switch {
	case err != nil:
		e.Error = err.Error()
	case code != 0:
		e.Error = fmt.Sprintf("exit status %d on host %s", code, host)
	default:
		e.Sent, e.Result = true, "done"
	}
	if werr := log.Write(e); werr != nil {
		a.Log.Warn("audit a routed command's outcome", "host", host, "err", werr)
	}
	return code, err
}

// hostsLifecycle is the MCP servers' lifecycle with the config's hosts
// beside this machine: stop_orchestrator HOST:NAME runs `system3 stop NAME
// --origin "CLIENT via ssh from THIS-MACHINE"` on that host, so its policy
// judges the MCP client (not its operator), after this machine's policy
// (the session named HOST:orch-NAME). Spawning stays on this machine.
type hostsLifecycle struct {
	// local spawns and stops on this machine.
	local interface {
		Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error)
		Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error)
	}
	a   *App
	svc interface {
		Allow(ctx context.Context, req api.AllowRequest) error
	}
}

// managerHosts is a Manager with the config's hosts: spawn and stop
// routed, the rest the Manager's (restore and finish act on this
// machine's records and checkouts).
type managerHosts struct {
	*lifecycle.Manager
	hostsLifecycle
}

func (m managerHosts) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	return m.hostsLifecycle.Spawn(ctx, req)
}

func (m managerHosts) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	return m.hostsLifecycle.Stop(ctx, req)
}

// HostsLifecycle wraps lc for the config's hosts; without hosts it is
// lc.
func (a *App) HostsLifecycle(lc *lifecycle.Manager, svc api.Service) lifecycle.Orchestrators {
	if len(a.RemoteHosts()) == 0 {
		return lc
	}
	return managerHosts{Manager: lc, hostsLifecycle: hostsLifecycle{local: lc, a: a, svc: svc}}
}

// serviceHosts is a service's orchestrators with this process's hosts:
// spawn and stop on another host are run there from here, as the
// sessions of that host are followed from here (Fleet); the rest is the
// service's.
type serviceHosts struct {
	facade.Orchestrators
	hostsLifecycle
}

func (s serviceHosts) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	return s.hostsLifecycle.Spawn(ctx, req)
}

func (s serviceHosts) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	return s.hostsLifecycle.Stop(ctx, req)
}

func (l hostsLifecycle) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	host, name, _ := api.SplitHost(strings.TrimSpace(req.Name), l.a.IsHost)
	switch host {
	case "":
		return l.local.Stop(ctx, req)
	case api.LocalHost:
		req.Name = name
		return l.local.Stop(ctx, req)
	}
	session := name
	if !strings.HasPrefix(session, api.OrchestratorPrefix) {
		session = api.OrchestratorPrefix + session
	}
	args := []string{"stop", name}
	if req.RemoveWorktree {
		args = append(args, "--remove-worktree")
	}
	out, errb, code, err := l.run(ctx, req.Origin, host, session, name, args)
	if err != nil {
		return api.StopResult{}, err
	}
	var res api.StopResult
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			return res, fmt.Errorf("host %s answered stop with %q: %w", host, strings.TrimSpace(out.String()), jerr)
		}
		res.Session = api.JoinHost(host, res.Session)
	}
	if code != 0 {
		return res, fmt.Errorf("host %s: %s", host, lastLineOf(errb.String(), fmt.Sprintf("stop exited %d", code)))
	}
	return res, nil
}

// run checks this machine's policy for args[0] (stop, spawn) on host's
// session, then runs `system3 ARGS --json --origin "ORIGIN via ssh from
// HERE"` on host, audited here against target. It returns the command's
// output, the end of its errors and its exit status.
func (l hostsLifecycle) run(ctx context.Context, origin, host, session, target string, args []string) (out *bytes.Buffer, errb *tailWriter, code int, err error) {
	action := args[0]
	if err := l.svc.Allow(ctx, api.AllowRequest{Action: action, Session: api.JoinHost(host, session), Origin: origin}); err != nil {
		return nil, nil, 0, err
	}
	args = append(args, "--json", "--origin="+origin+" "+RoutedVia())
	out, errb = &bytes.Buffer{}, &tailWriter{max: 4096}
	code, err = l.a.RouteCLI(ctx, origin, host, action, target, args, out, errb)
	return out, errb, code, err
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return string(t.b) }

// lastLineOf is the last non-empty line of s without system3's prefix, or
// def.
func lastLineOf(s, def string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimPrefix(strings.TrimSpace(lines[i]), "system3: "); l != "" {
			return l
		}
	}
	return def
}

// Spawn starts an orchestrator on req.Host when it names another host:
// `system3 spawn ... --json --origin "CLIENT via ssh from THIS-MACHINE"`
// runs there, so it acts as the MCP client (a configured agent only, that
// host's policy), after this machine's policy (the session named
// HOST:orch-INITIATIVE). Its progress is not relayed; its result is.
func (l hostsLifecycle) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	host := strings.TrimSpace(req.Host)
	if host == "" || host == api.LocalHost {
		req.Host = ""
		return l.local.Spawn(ctx, req)
	}
	if _, err := l.a.RemoteHost(host); err != nil {
		return api.SpawnResult{}, fmt.Errorf("%w: %w", api.ErrOrchestratorInvalid, err)
	}
	session := api.OrchestratorSession(req.Initiative)
	args := []string{"spawn", "--initiative=" + req.Initiative, "--goal=" + req.Goal}
	for _, f := range []struct{ name, v string }{{"repo", req.Repo}, {"base", req.Base}, {"agent", req.Agent}, {"task-list", req.TaskList}, {"context", req.Context}} {
		if f.v != "" {
			args = append(args, "--"+f.name+"="+f.v)
		}
	}
	if req.NoAutoTrust {
		args = append(args, "--no-auto-trust")
	}
	out, errb, code, err := l.run(ctx, req.Origin, host, session, session, args)
	if err != nil {
		return api.SpawnResult{}, err
	}
	if code != 0 {
		// spawn --json prints its failure as a document too.
		var failed struct {
			Step  string `json:"step"`
			Error string `json:"error"`
		}
		if json.Unmarshal(out.Bytes(), &failed) == nil && failed.Error != "" {
			return api.SpawnResult{}, fmt.Errorf("host %s: spawn failed at %s: %s", host, failed.Step, failed.Error)
		}
		return api.SpawnResult{}, fmt.Errorf("host %s: %s", host, lastLineOf(errb.String(), fmt.Sprintf("spawn exited %d", code)))
	}
	var res api.SpawnResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("host %s answered spawn with %q: %w", host, strings.TrimSpace(out.String()), err)
	}
	res.Session, res.Pane = api.JoinHost(host, res.Session), api.JoinHost(host, res.Pane)
	return res, nil
}
