package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/wake"
)

// ackBy is how acknowledgements from the CLI are recorded.
const ackBy = "cli"

func newAckCmd(a *app) *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "ack ID | --all",
		Short: "Acknowledge a wake, so wait stops returning it",
		Long: `Acknowledge a wake once it is handled: ` + "`system3 wait`" + ` stops returning
it and no view counts it as needing a person. ID is the id wait or
` + "`system3 wakes`" + ` printed ("w0000000012-..."); --all acknowledges every
unacknowledged wake. HOST:ID, as
` + "`wait --all-hosts`" + ` names a wake of another host, acknowledges it on that
host's daemon, through ssh. Acknowledging a
wake twice is harmless. The condition stays known: an agent still waiting at
the same prompt does not raise a new wake until the prompt goes away and
comes back.

With --json, print the acknowledged wake (or, with --all, the list of them)
as JSON.`,
		Example: `  system3 ack w0000000012-mh8x3k2
  system3 ack --all
  system3 ack web1:w0000000040-mh8x3k9
  id=$(system3 wait --json | jq -r .id) && system3 ack "$id"`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return errors.New("give a wake ID or --all, not both")
			case !all && len(args) != 1:
				return errors.New("give the ID of the wake to acknowledge (`system3 wait` prints it), or --all")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !all {
				if host, id, _ := api.SplitHost(args[0], a.IsHost); host != "" && host != api.LocalHost {
					return a.ackRemote(ctx, host, id, asJSON)
				} else if host == api.LocalHost {
					args[0] = id
				}
			}
			svc, err := a.Client(ctx, core.RunMonitors)
			if err != nil {
				return err
			}
			defer a.Release(svc.Close)

			var evs []api.Wake
			if all {
				evs, err = svc.AckAll(ctx, ackBy)
			} else {
				var ev api.Wake
				ev, err = svc.Ack(ctx, args[0], ackBy)
				if errors.Is(err, api.ErrUnknownWake) {
					return fmt.Errorf("no wake %q: it never existed or was acknowledged long ago; list the wakes and their ids with `system3 wakes` (`--all` for resolved and acknowledged ones too)", args[0])
				}
				if ev.ID != "" {
					evs = []api.Wake{ev}
				}
			}
			// A change the journal could not take yet is still made, and
			// written when the disk recovers: report it, but as done.
			if errors.Is(err, wake.ErrNotDurable) && len(evs) > 0 {
				fmt.Fprintf(a.Stderr, "system3: warning: %v\n", err)
				err = nil
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				if all {
					if evs == nil {
						evs = []api.Wake{}
					}
					return enc.Encode(evs)
				}
				return enc.Encode(evs[0])
			}
			return writeAcked(a.stdout, evs, all)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "acknowledge every pending wake")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the acknowledged wakes as JSON")
	return cmd
}

// ackRemote acknowledges wake id on host's daemon.
func (a *app) ackRemote(ctx context.Context, host, id string, asJSON bool) error {
	r := routed{action: "ack", target: id}
	ev, err := routeAction(ctx, a, host, r, func(svc api.Service, origin string) (api.Wake, error) {
		return svc.Ack(ctx, id, origin)
	}, func(ev api.Wake) (bool, bool, string) { return true, true, "acked " + ev.ID })
	if errors.Is(err, wake.ErrNotDurable) && ev.ID != "" {
		fmt.Fprintf(a.Stderr, "system3: warning: %v\n", err)
		err = nil
	}
	if errors.Is(err, api.ErrUnknownWake) {
		return fmt.Errorf("no wake %q on host %s: it never existed or was acknowledged long ago; see pending wakes with `system3 status --host %s`", id, host, host)
	}
	if err != nil {
		return err
	}
	ev.Session = api.JoinHost(host, ev.Session)
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(ev)
	}
	return writeAcked(a.stdout, []api.Wake{ev}, false)
}

func writeAcked(w io.Writer, evs []api.Wake, all bool) error {
	if len(evs) == 0 {
		_, err := fmt.Fprintln(w, "no pending wakes to acknowledge")
		return err
	}
	for _, ev := range evs {
		fmt.Fprintf(w, "acked %s (%s, %s) by %s at %s\n", ev.ID, ev.Reason, sanitize(ev.Place()),
			sanitize(api.ShortOrigin(ev.AckedBy)), ev.AckedAt.Local().Format("15:04:05"))
	}
	if all {
		fmt.Fprintf(w, "acknowledged %s\n", count(len(evs), "wake", "wakes"))
	}
	return nil
}
