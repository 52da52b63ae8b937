package main

import (
	"context"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/remote"
)

// routedOrigin is the origin a routed action claims on the remote daemon,
// which records it after the peer it sees (the relay ssh started there).
func routedOrigin() string {
	return actionOrigin + " " + core.RoutedVia()
}

// routed describes an action sent to another host's daemon, for this
// machine's audit log.
type routed struct {
	action string // answer, inject, interrupt, ack
	target string // as the remote knows it: session, pane or wake id
	text   string // inject's text, audited as given
	args   string // the rest: the option of an answer, inject's flags
}

// routeAction runs do on host's daemon through a link of its own, as
// remote.Route does (audited in this machine's audit log before and after,
// as the CLI's). result says how the outcome is recorded.
func routeAction[T any](ctx context.Context, a *app, host string, r routed, do func(svc api.Service, origin string) (T, error), result func(T) (sent, verified bool, detail string)) (T, error) {
	var zero T
	h, err := a.RemoteHost(host)
	if err != nil {
		return zero, err
	}
	log := audit.Open(a.Settings.StateDir)
	defer log.Close()
	l := remote.NewLink(h)
	defer func() {
		l.Close()
		a.RecordSeen([]*remote.Link{l})
	}()
	record := func(e api.AuditEntry) error {
		err := log.Write(e)
		if err != nil && e.Phase == audit.PhaseResult {
			a.Log.Warn("audit a routed action's outcome", "host", host, "err", err)
		}
		return err
	}
	return remote.Route(ctx, l, remote.Routed{Origin: actionOrigin, Action: r.action, Target: r.target, Text: r.text, Args: r.args, Record: record},
		func(c *ipc.Client) (T, error) { return do(c, routedOrigin()) }, result)
}

// actionOutcome is how a routed action's result is audited here.
func actionOutcome(res api.ActionResult) (bool, bool, string) {
	return res.Delivered, res.Verified, describeAction(res)
}

// runOnHost runs a lifecycle command (spawn, stop, finish) on host through
// ssh: `system3 ARGS...` there, with the flags given here, its output
// streamed here. The host's own system3 does it and audits it there; this
// machine's audit log records the routing (routeCLI).
func (a *app) runOnHost(cmd *cobra.Command, host, target string, args ...string) error {
	args = append(args, forwardedFlags(cmd, "host")...)
	code, err := a.RouteCLI(cmd.Context(), actionOrigin, host, cmd.Name(), target, args, a.stdout, a.Stderr)
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
