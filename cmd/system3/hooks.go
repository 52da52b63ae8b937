package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/config"
	"github.com/system3-dev/system3/monitor/hooks"
)

func newHooksCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hooks",
		Short: "Show or install the Claude Code (or Codex, Gemini, Copilot, Qwen Code, Cline) hooks, or opencode's plugin, that report to system3",
		Long: `Claude Code hooks push an agent's state to system3 the moment it changes (a
permission prompt, a finished turn, an API failure), instead of system3 reading
it from the screen a moment later. Each hook runs system3 hook.

system3 hooks print shows the settings snippet; system3 hooks install merges it
into a Claude Code settings file. With --agent codex they do the same for the
Codex CLI's PermissionRequest hook (its hooks.json), with --agent gemini for
the Gemini CLI's BeforeTool hook (its settings.json), and with --agent copilot
for GitHub Copilot CLI's permissionRequest and agentStop hooks (its
settings.json), which let the approval policy decide those agents' tool
calls (docs/policy.md), and with --agent qwen for Qwen Code's hooks, which
are Claude Code's (its settings.json). opencode has plugins instead of
hooks: with --agent opencode they print and write system3's plugin, a
small JavaScript file that runs system3 hook for opencode's events. The
Cline CLI's hooks are files named after their events: with --agent cline
they print and write system3's (TaskStart.sh, PreToolUse.sh, ...). See
docs/hooks.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newHooksPrintCmd(a), newHooksInstallCmd(a))
	return cmd
}

// hookTarget is what system3's hooks take from one agent, and where
// they are installed for it.
type hookTarget struct {
	events []string
	// user is the user's file; project the file under a project's root.
	user    func(*app) string
	project string
	// note is said after installing.
	note string
	// plugin, when set, is a file system3 writes whole (opencode's
	// plugin), given the hook command, instead of settings to merge.
	plugin func(cmd string) ([]byte, error)
	// dir: the hooks are files of their own in the directory that user
	// and project name (the Cline CLI's), written by hooks.InstallCline.
	dir bool
}

// hookAgents are the agents whose hooks system3 prints and installs.
var hookAgents = []string{"claude", "codex", "gemini", "copilot", "qwen", "opencode", "cline"}

var hookTargets = map[string]hookTarget{
	"claude": {events: hooks.Events, user: (*app).userSettingsPath, project: filepath.Join(".claude", "settings.local.json")},
	"codex": {events: hooks.CodexEvents, user: (*app).codexHooksPath, project: filepath.Join(".codex", "hooks.json"),
		note: `Codex runs the hook once you trust it: when it next starts it asks ("Hooks need review": choose "Trust all and continue"), or trust it in /hooks.`},
	"gemini": {events: hooks.GeminiEvents, user: (*app).geminiSettingsPath, project: filepath.Join(".gemini", "settings.json"),
		note: `Gemini runs the hook in folders it trusts. It asks about every call of these tools that no rule allows or denies; a rule's allow lets the call run without Gemini's dialog only where Gemini itself would not ask, as in yolo mode (gemini --approval-mode yolo): see docs/policy.md.`},
	"copilot": {events: hooks.CopilotEvents, user: (*app).copilotSettingsPath, project: filepath.Join(".github", "copilot", "settings.local.json"),
		note: `Copilot runs the hooks from its next start (a project's in a folder it trusts), unless disableAllHooks is set.`},
	"qwen": {events: hooks.QwenEvents, user: (*app).qwenSettingsPath, project: filepath.Join(".qwen", "settings.json"),
		note: `Qwen Code runs the hooks from its next start (a project's only in a folder it trusts), unless disableAllHooks is set; /hooks lists them.`},
	"opencode": {events: hooks.OpencodeEvents, user: (*app).opencodePluginPath, project: filepath.Join(".opencode", "plugins", hooks.OpencodePluginFile),
		plugin: hooks.OpencodePlugin,
		note:   `opencode loads the plugin from its next start. Install it in one place only (the user's or a project's): each copy reports every event.`},
	"cline": {events: hooks.ClineEvents, user: (*app).clineHooksDir, project: filepath.Join(".clinerules", "hooks"), dir: true,
		note: `Cline reads its hooks when a session starts. Install them in one place only (the user's or a project's): Cline runs every copy. Its events count only from a Cline whose sessions run in its own process (CLINE_SESSION_BACKEND_MODE=local, as system3 spawn starts it): see docs/hooks.md.`},
}

// hookTargetFor is agent's row ("" is claude).
func hookTargetFor(agent string) (hookTarget, error) {
	if agent == "" {
		agent = "claude"
	}
	t, ok := hookTargets[agent]
	if !ok {
		return hookTarget{}, fmt.Errorf("--agent %q: system3 installs hooks for %s and %s", agent, strings.Join(hookAgents[:len(hookAgents)-1], ", "), hookAgents[len(hookAgents)-1])
	}
	return t, nil
}

func newHooksPrintCmd(a *app) *cobra.Command {
	var command, agent string
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the Claude Code settings that send every hook event to system3",
		Long: `Print Claude Code settings JSON whose hooks run system3 hook for every event
system3 uses. Use it as the value of claude --settings for one process, or
merge it into a settings file by hand (system3 hooks install does that for you).
With --agent codex, print the Codex CLI's hooks.json: its PermissionRequest hook
runs system3 hook. With --agent gemini, the Gemini CLI's settings.json: its
BeforeTool hook runs system3 hook for the tools Gemini asks about. With
--agent copilot, GitHub Copilot CLI's settings.json: its permissionRequest
and agentStop hooks run system3 hook --event NAME. With --agent qwen, Qwen
Code's settings.json: Claude Code's hooks, but for the task events Qwen
Code does not have. With --agent opencode, system3's opencode plugin
(system3.js), which runs system3 hook when a turn starts, ends or fails
and when opencode asks a permission. With --agent cline, the Cline CLI's
hook files system3 writes (TaskStart.sh, TaskResume.sh, PreToolUse.sh,
PostToolUse.sh, TaskComplete.sh), each a shell script that runs the
command.

The command is this system3's absolute path followed by "hook" (and by
--state-dir when one was chosen), unless --command says otherwise.`,
		Example: `  system3 hooks print
  claude --settings "$(system3 hooks print)"
  system3 hooks print --agent codex
  system3 hooks print --agent gemini
  system3 hooks print --agent copilot
  system3 hooks print --agent qwen
  system3 hooks print --agent opencode
  system3 hooks print --agent cline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, err := hookTargetFor(agent)
			if err != nil {
				return err
			}
			cmdline, err := a.HookCommand(command)
			if err != nil {
				return err
			}
			if target.dir {
				b, err := hooks.ClinePrint(cmdline)
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(b)
				return err
			}
			if target.plugin != nil {
				b, err := target.plugin(cmdline)
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(b)
				return err
			}
			b, err := hooks.SettingsFor(cmdline, target.events)
			if err != nil {
				return err
			}
			var out bytes.Buffer
			if err := json.Indent(&out, b, "", "  "); err != nil {
				return err
			}
			out.WriteByte('\n')
			_, err = a.stdout.Write(out.Bytes())
			return err
		},
	}
	cmd.Flags().StringVar(&command, "command", "", "the command the hooks run (default: this system3 with \"hook\")")
	cmd.Flags().StringVar(&agent, "agent", "claude", "the agent whose hooks to print: "+strings.Join(hookAgents, " or "))
	return cmd
}

func newHooksInstallCmd(a *app) *cobra.Command {
	var (
		project, command, agent string
		user, dryRun            bool
	)
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Merge system3's hooks into a Claude Code settings file",
		Long: `Merge the hooks system3 hooks print shows into a Claude Code settings file,
keeping every other setting and every other hook. Events that already run the
command are left alone, so running it again changes nothing.

--user (the default) writes ~/.claude/settings.json (or $CLAUDE_CONFIG_DIR's),
for every Claude Code session of this user. --project DIR writes
DIR/.claude/settings.local.json, for sessions in that project only; it is the
personal, uncommitted settings file, since the hook names a binary on this
machine.

The old file is copied to FILE.system3-backup-TIME first, and the change is
shown as a diff. A file that is not valid JSON (Claude Code allows no comments)
is refused and left as it was. --dry-run shows the diff and changes nothing.

--agent codex merges the Codex CLI's PermissionRequest hook into its hooks.json
instead: $CODEX_HOME/hooks.json (~/.codex/hooks.json) for the user, or
DIR/.codex/hooks.json with --project (Codex reads a project's hooks only in a
folder it trusts). Codex runs a hook only once you trust it: the next time it
starts it asks ("Hooks need review": choose "Trust all and continue"), or
trust it in Codex's /hooks.

--agent gemini merges the Gemini CLI's BeforeTool hook into its settings.json:
~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini/settings.json) for the user,
or DIR/.gemini/settings.json with --project. Gemini runs hooks only in folders
it trusts; it warns once about a project's new hooks. Gemini allows comments in
settings.json, which system3 cannot keep: it refuses such a file (add the hook
by hand from system3 hooks print --agent gemini).

--agent copilot merges GitHub Copilot CLI's permissionRequest and agentStop
hooks into its settings.json: $COPILOT_HOME/settings.json
(~/.copilot/settings.json) for the user, or
DIR/.github/copilot/settings.local.json with --project, the repository's
personal, uncommitted settings. Copilot runs a project's hooks only in a
folder it trusts.

--agent qwen merges Qwen Code's hooks (Claude Code's, in the same form)
into its settings.json: $QWEN_HOME/settings.json (~/.qwen/settings.json) for
the user, or DIR/.qwen/settings.json with --project. Qwen Code runs a
project's hooks only in a folder it trusts (when folder trust is on), and
none with disableAllHooks. Like Gemini, it allows comments in settings.json,
which system3 cannot keep: it refuses such a file (add the hooks by hand
from system3 hooks print --agent qwen).

--agent opencode writes system3's opencode plugin, whole, to
$XDG_CONFIG_HOME/opencode/plugins/system3.js (~/.config/opencode/plugins)
for the user, or DIR/.opencode/plugins/system3.js with --project. A
system3.js there that system3 did not write is refused and left as it was;
system3's own earlier one is replaced (copied to a backup first).

--agent cline writes the Cline CLI's hook files (TaskStart.sh,
TaskResume.sh, PreToolUse.sh, PostToolUse.sh, TaskComplete.sh), each a
shell script that runs system3 hook, into $CLINE_DIR/hooks (~/.cline/hooks)
for the user, or DIR/.clinerules/hooks with --project. Cline runs every
file named after an event, so a user's own hooks (PreToolUse, PreToolUse.py,
...) keep running beside system3's; a file of system3's name that system3
did not write is refused, and nothing is changed. Cline's events count
only from a Cline whose sessions run in its own process
(CLINE_SESSION_BACKEND_MODE=local, as system3 spawn starts it): one whose
sessions run in Cline's hub is read from the screen alone.`,
		Example: `  system3 hooks install --dry-run
  system3 hooks install --user
  system3 hooks install --project ~/src/app
  system3 hooks install --agent codex
  system3 hooks install --agent gemini
  system3 hooks install --agent copilot
  system3 hooks install --agent qwen
  system3 hooks install --agent opencode
  system3 hooks install --agent cline`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user && project != "" {
				return fmt.Errorf("choose either --user or --project, not both")
			}
			target, err := hookTargetFor(agent)
			if err != nil {
				return err
			}
			path := target.user(a)
			if project != "" {
				abs, err := filepath.Abs(config.ExpandHome(project, a.Settings.Home))
				if err != nil {
					return err
				}
				if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
					return fmt.Errorf("--project %s is not a directory; pass the project's root directory", project)
				}
				path = filepath.Join(abs, target.project)
			}
			cmdline, err := a.HookCommand(command)
			if err != nil {
				return err
			}
			res, err := applyHooks(target, path, cmdline, dryRun)
			if err != nil {
				return err
			}
			w := a.stdout
			if !res.Changed {
				fmt.Fprintf(w, "%s already runs %s for every event; nothing to change\n", path, cmdline)
				return nil
			}
			fmt.Fprint(w, res.Diff)
			switch {
			case dryRun:
				fmt.Fprintf(w, "dry run: %s was not changed; run without --dry-run to add hooks for %s\n", path, strings.Join(res.Added, ", "))
			case res.Backup != "":
				fmt.Fprintf(w, "updated %s (hooks added for %s); the previous file is %s\n", path, strings.Join(res.Added, ", "), res.Backup)
			default:
				fmt.Fprintf(w, "created %s (hooks added for %s)\n", path, strings.Join(res.Added, ", "))
			}
			if target.note != "" && !dryRun {
				fmt.Fprintln(w, target.note)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "claude", "the agent whose hooks to install: "+strings.Join(hookAgents, " or "))
	f.BoolVar(&user, "user", false, "install into the user's settings, ~/.claude/settings.json (the default; for codex ~/.codex/hooks.json, for gemini ~/.gemini/settings.json, for copilot ~/.copilot/settings.json, for qwen ~/.qwen/settings.json, for opencode ~/.config/opencode/plugins/system3.js, for cline ~/.cline/hooks)")
	f.StringVar(&project, "project", "", "install into DIR/.claude/settings.local.json (for codex DIR/.codex/hooks.json, for gemini DIR/.gemini/settings.json, for copilot DIR/.github/copilot/settings.local.json, for qwen DIR/.qwen/settings.json, for opencode DIR/.opencode/plugins/system3.js, for cline DIR/.clinerules/hooks) instead")
	f.BoolVar(&dryRun, "dry-run", false, "show the diff without changing the file")
	f.StringVar(&command, "command", "", "the command the hooks run (default: this system3 with \"hook\")")
	return cmd
}

// applyHooks installs target's hooks running cmdline into the file at
// path, or with dryRun says what it would change.
func applyHooks(target hookTarget, path, cmdline string, dryRun bool) (hooks.Result, error) {
	if target.dir {
		if dryRun {
			res, _, err := hooks.PlanCline(path, cmdline)
			return res, err
		}
		return hooks.InstallCline(path, cmdline)
	}
	if target.plugin != nil {
		b, err := target.plugin(cmdline)
		if err != nil {
			return hooks.Result{Path: path}, err
		}
		if dryRun {
			return hooks.PlanFile(path, b)
		}
		return hooks.InstallFile(path, b)
	}
	if dryRun {
		res, _, err := hooks.PlanFor(path, cmdline, target.events)
		return res, err
	}
	return hooks.InstallFor(path, cmdline, target.events)
}

// opencodePluginPath is where opencode loads the user's plugins from:
// plugins/ in its config directory, $XDG_CONFIG_HOME/opencode
// (~/.config/opencode).
func (a *app) opencodePluginPath() string {
	dir := a.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".config")
	}
	return filepath.Join(dir, "opencode", "plugins", hooks.OpencodePluginFile)
}

// clineHooksDir is the Cline CLI's user hooks directory: hooks/ in
// $CLINE_DIR (~/.cline), as Cline finds it.
func (a *app) clineHooksDir() string {
	dir := a.Getenv("CLINE_DIR")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".cline")
	}
	return filepath.Join(dir, "hooks")
}

// codexHooksPath is the Codex CLI's user hooks.json.
func (a *app) codexHooksPath() string {
	dir := a.Getenv("CODEX_HOME")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".codex")
	}
	return filepath.Join(dir, "hooks.json")
}

// geminiSettingsPath is the Gemini CLI's user settings.json, under
// $GEMINI_CLI_HOME when set, as Gemini finds it.
func (a *app) geminiSettingsPath() string {
	home := a.Getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = a.Settings.Home
	}
	return filepath.Join(home, ".gemini", "settings.json")
}

// copilotSettingsPath is GitHub Copilot CLI's user settings.json, under
// $COPILOT_HOME (~/.copilot), as Copilot finds it.
func (a *app) copilotSettingsPath() string {
	dir := a.Getenv("COPILOT_HOME")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".copilot")
	}
	return filepath.Join(dir, "settings.json")
}

// qwenSettingsPath is Qwen Code's user settings.json, in $QWEN_HOME
// (~/.qwen), as Qwen Code finds it.
func (a *app) qwenSettingsPath() string {
	dir := a.Getenv("QWEN_HOME")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".qwen")
	}
	return filepath.Join(dir, "settings.json")
}

// userSettingsPath is Claude Code's user settings file.
func (a *app) userSettingsPath() string {
	dir := a.Getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		dir = filepath.Join(a.Settings.Home, ".claude")
	}
	return filepath.Join(dir, "settings.json")
}
