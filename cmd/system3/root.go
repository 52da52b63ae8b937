package main

import (
	"github.com/spf13/cobra"
)

// skipSetup marks commands that must work even with a broken config (version,
// help, completion).
const skipSetup = "system3/skip-setup"

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "system3",
		Short: "Supervise AI coding agents running in tmux",
		Long: `system3 watches every tmux pane and Claude Code task list, classifies what each
coding agent is doing (working, idle, awaiting input, error, error loop,
exited), and wakes a person or a supervising agent when one needs help.

With no command it opens the dashboard (see system3 tui --help); system3 demo
shows it on scripted agents in a private tmux server.

It also starts and stops orchestrators in git worktrees (spawn, stop, link),
takes Claude Code's hook events as a push signal (hooks install), remembers
how initiatives ended and what they taught (outcome report, reflect,
capabilities; learnings lists and deletes what it keeps), and reminds
looping agents of your CLAUDE.md directives (patterns, directives,
interventions). Supervising agents get the same over MCP (serve, mcp).

It selects the tmux server with --tmux-socket (tmux -L) or --tmux-socket-path
(tmux -S); without either it uses your default tmux server.

Settings come from flags, then environment variables (SYSTEM3_TMUX_SOCKET,
SYSTEM3_TMUX_SOCKET_PATH, SYSTEM3_STATE_DIR, SYSTEM3_TASKS_DIR, SYSTEM3_CONFIG),
then the config file ($XDG_CONFIG_HOME/system3/config.yaml), then defaults.
Logs go to system3.log in the state dir ($XDG_STATE_HOME/system3). A system3
process runs its work on one core unless GOMAXPROCS says otherwise (bench
uses all of them).`,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return a.runDashboard(cmd.Context()) },
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			for c := cmd; c != nil; c = c.Parent() {
				if c.Annotations[skipSetup] != "" {
					return nil
				}
			}
			if err := a.setup(); err != nil {
				return err
			}
			a.Log.Debug("command start", "command", cmd.CommandPath(), "state_dir", a.Settings.StateDir)
			return nil
		},
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(flagError)

	pf := root.PersistentFlags()
	pf.StringVar(&a.flags.TmuxSocket, "tmux-socket", "", "tmux server socket name, as for tmux -L (env SYSTEM3_TMUX_SOCKET)")
	pf.StringVar(&a.flags.TmuxSocketPath, "tmux-socket-path", "", "tmux server socket path, as for tmux -S (env SYSTEM3_TMUX_SOCKET_PATH)")
	pf.StringVar(&a.flags.ConfigPath, "config", "", "config file (env SYSTEM3_CONFIG; default $XDG_CONFIG_HOME/system3/config.yaml)")
	pf.StringVar(&a.flags.StateDir, "state-dir", "", "directory for the log, wake journal and sockets (env SYSTEM3_STATE_DIR; default $XDG_STATE_HOME/system3)")
	pf.StringVar(&a.flags.TasksDir, "tasks-dir", "", "root of Claude Code task lists (env SYSTEM3_TASKS_DIR; default ~/.claude/tasks)")
	pf.StringVar(&a.flags.LogLevel, "log-level", "", "log level: debug, info, warn or error (default info)")

	root.AddCommand(
		newVersionCmd(a),
		newTUICmd(a),
		newStatusCmd(a),
		newTasksCmd(a),
		newClassifyCmd(a),
		newRulesCmd(a),
		newWaitCmd(a),
		newWatchCmd(a),
		newHostsCmd(a),
		newAttachCmd(a),
		newAckCmd(a),
		newWakesCmd(a),
		newServeCmd(a), // mcp-server engineer: temporary, for tests
		newMCPCmd(a),
		newTokenCmd(a),
		newNotifyCmd(a),
		newWebCmd(a),
		newInjectCmd(a),
		newAnswerCmd(a),
		newInterruptCmd(a),
		newSpawnCmd(a),
		newStopCmd(a),
		newLinkCmd(a),
		newRestoreCmd(a),
		newFinishCmd(a),
		newAuditCmd(a),
		newOutcomesCmd(a),
		newOutcomeCmd(a),
		newLearningsCmd(a),
		newReflectCmd(a),
		newCapabilitiesCmd(a),
		newPatternsCmd(a),
		newDirectivesCmd(a),
		newInterventionsCmd(a),
		newDemoCmd(a),
		newFakeAgentCmd(a),
		newHookCmd(a),
		newHooksCmd(a),
		newPolicyCmd(a),
		newSuperviseCmd(a),
		newBenchCmd(a),
	)
	rejectUnknownCommands(root)
	return root
}
