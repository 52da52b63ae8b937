package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/monitor/hooks"
)

func newSuperviseCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "supervise",
		Short: "Set up a Claude Code session to supervise your orchestrators (install, uninstall, skill)",
		Long: `Make a Claude Code session a supervisor of the agents system3 watches, in one
command: system3 supervise install. Then start Claude Code anywhere and tell it
"supervise my orchestrators" (or type /system3-supervise).

It waits with system3 wait --for-agent as a background task, which completes,
and wakes it, only when an agent needs attention: zero model requests while
nothing happens. It then analyses the wake, decides, acts (answers the prompt,
guides or interrupts the agent, or leaves it to a person), and waits again.
docs/supervising.md has the protocol and what each way of waiting costs.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newSuperviseInstallCmd(a, true), newSuperviseInstallCmd(a, false), newSuperviseSkillCmd(a))
	return cmd
}

// supervisor is where this user's Claude Code keeps its files, and
// system3 as the supervisor will run it.
func (a *app) supervisor(command string, allowActions bool) (hooks.Supervisor, error) {
	dir := a.Getenv("CLAUDE_CONFIG_DIR")
	claudeJSON := filepath.Join(a.Settings.Home, ".claude.json")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".claude")
	} else {
		claudeJSON = filepath.Join(dir, ".claude.json")
	}
	prog := command
	if prog == "" {
		var err error
		if prog, err = selfCommand(); err != nil {
			return hooks.Supervisor{}, err
		}
	}
	// In the order wait --for-agent names them in the next wait (by
	// name), so the permission's prefix matches that command too.
	argv := []string{prog}
	for _, f := range []struct{ name, val string }{
		{"config", a.flags.ConfigPath}, {"state-dir", a.flags.StateDir},
		{"tmux-socket", a.flags.TmuxSocket}, {"tmux-socket-path", a.flags.TmuxSocketPath},
	} {
		if f.val != "" {
			argv = append(argv, "--"+f.name, f.val)
		}
	}
	return hooks.Supervisor{ClaudeDir: dir, ClaudeJSON: claudeJSON, Command: argv, AllowActions: allowActions}, nil
}

// selfCommand is how a supervisor runs this system3: "system3" when that
// is this binary on PATH, else this binary's absolute path.
func selfCommand() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot tell where this system3 is (%v); pass --command", err)
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	if onPath, err := exec.LookPath("system3"); err == nil {
		if p, err := filepath.EvalSymlinks(onPath); err == nil && p == exe {
			return "system3", nil
		}
	}
	return exe, nil
}

func newSuperviseInstallCmd(a *app, install bool) *cobra.Command {
	var (
		dryRun, allowActions, asJSON bool
		command                      string
	)
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install the supervising skill, its permissions and the MCP server into Claude Code",
		Long: `Set up Claude Code, for this user, to supervise with system3:

  ~/.claude/skills/system3-supervise/SKILL.md  the protocol: wait in the
      background, analyse, decide, act, wait again (system3 supervise skill
      prints it)
  ~/.claude/settings.json  permission to run system3 wait, wakes and status
      and the MCP tools that read, without asking; with --allow-actions also
      answer, inject, interrupt and ack (system3's own policy still applies:
      mcp.read_only and allow_sessions in the config)
  ~/.claude.json  the system3 MCP server (system3 mcp), for every project

($CLAUDE_CONFIG_DIR instead of ~/.claude and ~ when it is set.) Every other
setting is kept; each changed file is backed up first and the change shown as
a diff. Running it again changes nothing. The global flags given
(--tmux-socket, --state-dir...) go into every command it writes. Claude Code
rewrites ~/.claude.json while it runs: install before starting the supervisor,
or restart it after. Then tell Claude Code "supervise my orchestrators".`,
		Example: `  system3 supervise install --dry-run
  system3 supervise install
  system3 supervise install --allow-actions
  system3 --tmux-socket work supervise install`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.supervisor(command, allowActions)
			if err != nil {
				return err
			}
			var changes []hooks.SupervisorChange
			if install {
				changes, err = s.Install(dryRun)
			} else {
				changes, err = s.Uninstall(dryRun)
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetEscapeHTML(false)
				if changes == nil {
					changes = []hooks.SupervisorChange{}
				}
				return enc.Encode(changes)
			}
			return printSuperviseChanges(a.stdout, changes, install, dryRun)
		},
	}
	if !install {
		cmd.Use = "uninstall"
		cmd.Short = "Remove what supervise install added to Claude Code, and nothing else"
		cmd.Long = `Remove the skill, the permission rules and the MCP server registration that
system3 supervise install added, leaving every other setting as it is. Files
are backed up first. A skill file system3 did not write is left alone.`
		cmd.Example = `  system3 supervise uninstall --dry-run
  system3 supervise uninstall`
	}
	f := cmd.Flags()
	f.BoolVar(&dryRun, "dry-run", false, "show what would change, change nothing")
	f.BoolVar(&asJSON, "json", false, "print the changes as JSON")
	f.StringVar(&command, "command", "", "the system3 the supervisor runs (default: system3 when it is this binary on PATH, else this binary's path)")
	if install {
		f.BoolVar(&allowActions, "allow-actions", false, "also let the supervisor answer, inject, interrupt and ack without asking you")
	}
	return cmd
}

func printSuperviseChanges(w io.Writer, changes []hooks.SupervisorChange, install, dryRun bool) error {
	if len(changes) == 0 {
		if install {
			_, err := fmt.Fprintln(w, "Claude Code is set up to supervise already; nothing to change.\nTell it: supervise my orchestrators")
			return err
		}
		_, err := fmt.Fprintln(w, "nothing of system3's supervisor set-up is installed; nothing to change")
		return err
	}
	for _, c := range changes {
		fmt.Fprint(w, c.Diff)
		verb := "changed"
		if dryRun {
			verb = "would change"
		}
		line := fmt.Sprintf("%s %s: %s", verb, c.Path, c.What)
		if c.Backup != "" {
			line += "; the previous file is " + c.Backup
		}
		fmt.Fprintln(w, line)
	}
	switch {
	case dryRun:
		fmt.Fprintln(w, "dry run: nothing was changed")
	case install:
		fmt.Fprintln(w, "Done. Start Claude Code (restart it if it runs) and tell it: supervise my orchestrators\nUndo with: system3 supervise uninstall")
	default:
		fmt.Fprintln(w, "Done: the supervisor set-up is removed.")
	}
	return nil
}

func newSuperviseSkillCmd(a *app) *cobra.Command {
	var command string
	var allowActions bool
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Print the supervising skill (SKILL.md) install writes, for reading or for another agent",
		Long: `Print the SKILL.md that system3 supervise install writes: the protocol a
supervising agent follows (wait in the background, analyse, decide, act, wait
again). Agents other than Claude Code can be given it as their instructions.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.supervisor(command, allowActions)
			if err != nil {
				return err
			}
			_, err = io.WriteString(a.stdout, s.Skill())
			return err
		},
	}
	cmd.Flags().StringVar(&command, "command", "", "the system3 the supervisor runs (default: system3 when it is this binary on PATH, else this binary's path)")
	cmd.Flags().BoolVar(&allowActions, "allow-actions", false, "the skill as install --allow-actions writes it")
	return cmd
}
