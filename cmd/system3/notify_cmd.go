package main

import (
	"github.com/spf13/cobra"
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
