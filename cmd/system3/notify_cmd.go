package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/wake/notify"
)

func newNotifyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Check the notification channels (desktop, ntfy, webhook)",
		Long: `New wakes reach the operator besides the dashboard through the channels
configured under notify: in config.yaml: desktop notifications (D-Bus,
notify-send, osascript, OSC 9/777 through tmux), ntfy pushes whose buttons
answer a prompt, and a webhook (Slack, Mattermost or any JSON receiver).
The process that runs the monitors (system3 serve, or a dashboard that is
not attached to one) delivers them. See docs/notifications.md.`,
		Args: cobra.NoArgs,
	}
	test := &cobra.Command{
		Use:   "test [CHANNEL]",
		Short: "Send a sample notification to every configured channel, or one",
		Long: `Send a sample notification (a made-up permission prompt of session
system3-test) to each configured channel, or only to CHANNEL (desktop, ntfy
or webhook), and print whether each delivery succeeded. The sample's action
buttons answer nothing: no wake has its id.`,
		Example: `  system3 notify test
  system3 notify test ntfy`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: []string{"desktop", "ntfy", "webhook"},
		RunE: func(cmd *cobra.Command, args []string) error {
			only := ""
			if len(args) == 1 {
				only = args[0]
			}
			return a.sendTest(cmd.Context(), a.stdout, only)
		},
	}
	cmd.AddCommand(test)
	return cmd
}

// sendTest sends the sample message to every configured channel (or the
// one named), printing each result.
func (a *app) sendTest(ctx context.Context, w io.Writer, only string) error {
	ts, err := a.NotifyTargets(core.ChannelFace{Push: true, Desktop: true, Terminal: a.term}, nil)
	if err != nil {
		return fmt.Errorf("config %s: %w", a.Settings.ConfigPath, err)
	}
	failed, tried := 0, 0
	for _, t := range ts {
		name := t.Channel.Name()
		if only != "" && name != only {
			continue
		}
		tried++
		start := time.Now()
		err := t.Channel.Send(ctx, notify.Sample())
		if c, ok := t.Channel.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			failed++
			fmt.Fprintf(w, "%-8s failed: %v\n", name, err)
			continue
		}
		fmt.Fprintf(w, "%-8s sent in %s\n", name, time.Since(start).Round(time.Millisecond))
	}
	switch {
	case tried == 0 && only != "":
		return fmt.Errorf("no channel %q is configured (channels: desktop, ntfy, webhook; see docs/notifications.md)", only)
	case tried == 0:
		return fmt.Errorf("no notification channel is configured: set notify.ntfy.url, notify.webhook.url or notify.desktop in %s (see docs/notifications.md)", a.Settings.ConfigPath)
	case failed > 0:
		return fmt.Errorf("%d of %d channels failed", failed, tried)
	}
	return nil
}
