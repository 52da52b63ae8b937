package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/system3-dev/system3/monitor"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/ipc"
	"github.com/system3-dev/system3/monitor/remote"
)

// splitHost reads the HOST: prefix of a session, pane or wake id given to
// an action. The prefix routes only when it names this machine (local) or
// a host of the config; anything else (a tmux target orch:1.0) is left
// whole for this machine, with host "". A local tmux session named like a
// host is reached as local:NAME.
func (a *app) splitHost(s string) (host, rest string) {
	name, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return "", s
	}
	if name == remote.Local {
		return remote.Local, rest
	}
	for _, h := range a.remoteHosts() {
		if h.Name == name {
			return name, rest
		}
	}
	return "", s
}

// routedOrigin is the origin a routed action claims on the remote daemon,
// which records it after the peer it sees (the relay ssh started there).
func routedOrigin() string {
	return actionOrigin + " " + routedVia()
}

// routedVia is what a routed action adds to its origin: "via ssh from
// THIS-MACHINE".
func routedVia() string {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "?"
	}
	return "via ssh from " + name
}

// routed describes an action sent to another host's daemon, for this
// machine's audit log.
type routed struct {
	action string // answer, inject, interrupt, ack
	target string // as the remote knows it: session, pane or wake id
	text   string // inject's text, audited as given
	args   string // the rest: the option of an answer, inject's flags
}

// routeAction runs do on host's daemon through the ssh link. The remote
// service does the action, so its policy, text checks and audit apply
// there; this machine's audit log records that it routed the action, before
// (nothing is sent when that cannot be written) and after, with the
// outcome. result says how the outcome is recorded.
func routeAction[T any](ctx context.Context, a *app, host string, r routed, do func(svc monitor.Service, origin string) (T, error), result func(T) (sent, verified bool, detail string)) (T, error) {
	var zero T
	h, err := a.remoteHost(host)
	if err != nil {
		return zero, err
	}
	log := audit.Open(a.settings.StateDir)
	defer log.Close()
	id := fmt.Sprintf("route-%d-%d", time.Now().UnixNano(), os.Getpid())
	e := audit.Entry{Origin: actionOrigin, Action: "route", Tool: r.action, Host: host, Target: host + ":" + r.target,
		ID: id, Phase: audit.PhaseAttempt, Text: r.text, Args: r.args}
	if err := log.Write(e); err != nil {
		return zero, fmt.Errorf("not sent to host %s: %w", host, err)
	}
	l := remote.NewLink(h)
	defer func() {
		l.Close()
		a.recordSeen([]*remote.Link{l})
	}()
	v, err := do(l.Client, routedOrigin())
	err = l.Observe(ctx, err)
	e.Phase, e.Time, e.Text, e.Args = audit.PhaseResult, time.Time{}, "", ""
	if err != nil {
		e.Error = err.Error()
	} else {
		e.Sent, e.Checked, e.Result = result(v)
	}
	if werr := log.Write(e); werr != nil {
		a.log.Warn("audit a routed action's outcome", "host", host, "err", werr)
	}
	if err != nil && (errors.Is(err, remote.ErrLinkLost) || errors.Is(err, ipc.ErrConnLost) || errors.Is(err, io.ErrUnexpectedEOF)) {
		// The link failed: whether the action ran there is not known
		// unless its audit log says.
		return zero, fmt.Errorf("%w; whether host %s did the %s is not known: see its audit log (%s)", err, host, r.action, h.CommandLine("audit"))
	}
	return v, err
}

// actionOutcome is how a routed action's result is audited here.
func actionOutcome(res monitor.ActionResult) (bool, bool, string) {
	return res.Delivered, res.Verified, describeAction(res)
}

// runOnHost runs a lifecycle command (spawn, stop, finish) on host through
// ssh: `system3 ARGS...` there, with the flags given here, its output
// streamed here. The host's own system3 does it and audits it there; this
// machine's audit log records the routing before (nothing runs when that
// entry cannot be written) and after, with the exit status.
func (a *app) runOnHost(cmd *cobra.Command, host, target string, args ...string) error {
	h, err := a.remoteHost(host)
	if err != nil {
		return err
	}
	args = append(args, forwardedFlags(cmd, "host")...)
	log := audit.Open(a.settings.StateDir)
	defer log.Close()
	e := audit.Entry{Origin: actionOrigin, Action: "route", Tool: cmd.Name(), Host: host, Target: host + ":" + target,
		ID: fmt.Sprintf("route-%d-%d", time.Now().UnixNano(), os.Getpid()), Phase: audit.PhaseAttempt, Args: strings.Join(args, " ")}
	if err := log.Write(e); err != nil {
		return fmt.Errorf("not sent to host %s: %w", host, err)
	}
	code, err := h.RunCLI(cmd.Context(), a.stdout, a.stderr, args...)
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
		a.log.Warn("audit a routed command's outcome", "host", host, "err", werr)
	}
	if err != nil {
		return err
	}
	if code != 0 {
		// The remote system3 has said why on stderr.
		return &exitError{code: code}
	}
	return nil
}

// forwardedFlags are the flags given to cmd itself (not the global ones,
// which name this machine's paths), as --name=value, less skip.
func forwardedFlags(cmd *cobra.Command, skip ...string) []string {
	var out []string
	cmd.LocalNonPersistentFlags().Visit(func(f *pflag.Flag) {
		if slices.Contains(skip, f.Name) {
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return out
}
