package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/claudefake"
	"github.com/system3-dev/system3/tmux"
)

// demo --agent claude runs the real Claude Code against a fake of the
// Anthropic Messages API that the demo serves itself on 127.0.0.1: a
// person walks every state by typing a keyword into a session.

// demoClaudeSessions are the Claude Code sessions of demo --agent claude.
var demoClaudeSessions = []demoSession{
	{Name: "claude-api", TaskList: "PRD-API", Project: "api", Shows: "Claude Code in ./api: type a keyword below"},
	{Name: "claude-web", TaskList: "PRD-WEB", Project: "web", Shows: "Claude Code in ./web: the same, to run two at once"},
}

// demoKeyword is a word that, typed anywhere in a prompt, makes the fake
// model answer one way: one row per state to walk.
type demoKeyword struct {
	Word  string
	Short string // what it does, in the model's own list: short enough for the dashboard's preview
	Shows string // what it does and what the session shows then, for help and the banner
	Steps []claudefake.Step
}

// demoKeywords are tried in order: the first word a prompt holds wins, so
// "plan the tasks" plans rather than asks.
var demoKeywords = []demoKeyword{
	{Word: "plan", Short: "writes a task list (TASKS)", Shows: "writes a task list of three tasks and starts the first (TASKS 0/3)", Steps: []claudefake.Step{
		{Tool: claudefake.TaskCreate("Design the API", "Sketch the endpoints", "Designing the API")},
		{Tool: claudefake.TaskCreate("Implement the handlers", "Write the handlers", "Implementing the handlers")},
		{Tool: claudefake.TaskCreate("Write the tests", "Cover every endpoint", "Writing the tests")},
		{Tool: claudefake.TaskUpdate("1", "in_progress")},
		{Text: "Planned three tasks; the first is under way."},
	}},
	{Word: "deploy", Short: "asks to run a command (awaiting)", Shows: "awaiting_input (permission): asks to run ./deploy.sh --prod; answer with a number", Steps: []claudefake.Step{
		{Text: "I'll deploy the build.", Tool: claudefake.Bash("./deploy.sh --prod", "Deploy to production")},
		{Text: "Deployed (deploy.sh only prints a line: nothing leaves this machine)."},
	}},
	{Word: "fail", Short: "HTTP 500s, then an API error (error)", Shows: "error, then error_loop: the API answers HTTP 500, Claude Code retries three times and shows the API error", Steps: []claudefake.Step{
		{Err: &claudefake.APIError{Status: 500}},
	}},
	{Word: "ask", Short: "asks you a question (awaiting)", Shows: "awaiting_input (question): \"Which database should we use?\"", Steps: []claudefake.Step{
		{Tool: claudefake.AskUserQuestion(claudefake.Question{Question: "Which database should we use?", Header: "Database", Options: []claudefake.Option{
			{Label: "PostgreSQL", Description: "A server, for many writers"},
			{Label: "SQLite", Description: "A file, for one machine"},
		}})},
		{Text: "Noted."},
	}},
	{Word: "work", Short: "answers slowly (working)", Shows: "working: a slow answer streams for half a minute", Steps: []claudefake.Step{
		{Text: strings.Repeat("Refactoring the handlers one at a time and running the tests after each. ", 12), Chunks: 40, ChunkDelay: 750 * time.Millisecond},
	}},
}

// demoFirstPrompt starts every session, so that each shows the keywords.
const demoFirstPrompt = "What can I try in this demo?"

// demoModelHelp is the fake model's answer to any prompt without a
// keyword.
func demoModelHelp() string {
	var b strings.Builder
	// Short lines: the dashboard's preview shows the left of the pane.
	b.WriteString("I am system3's demo model, on 127.0.0.1.\nType a word (dashboard: i, word, enter):\n\n")
	for _, k := range demoKeywords {
		fmt.Fprintf(&b, "- %s: %s\n", k.Word, k.Short)
	}
	b.WriteString("\nAnything else: this list again (idle).")
	return b.String()
}

// demoKeywordLines describes the keywords for help and the banner.
func demoKeywordLines(indent string) string {
	var lines []string
	for _, k := range demoKeywords {
		lines = append(lines, fmt.Sprintf("%s%-8s %s", indent, k.Word, k.Shows))
	}
	return strings.Join(lines, "\n")
}

// installClaude says how to get Claude Code when the demo cannot find it.
const installClaude = "install it with `npm install -g @anthropic-ai/claude-code`, or name its executable with --agent-bin PATH"

// findClaude returns the Claude Code executable the demo runs: bin if
// given, else claude on PATH (the value of path).
func findClaude(bin, path string) (string, error) {
	if bin == "" {
		if p := lookIn(path, "claude"); p != "" {
			return filepath.Abs(p)
		}
		return "", errors.New("Claude Code is not installed (no claude on PATH): " + installClaude)
	}
	if err := isExecutable(bin); err != nil {
		return "", fmt.Errorf("Claude Code is not at %s (%v): %s", bin, err, installClaude)
	}
	return filepath.Abs(bin)
}

// lookIn is the first executable file called name in a directory of
// path, or "".
func lookIn(path, name string) string {
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, name); dir != "" && isExecutable(p) == nil {
			return p
		}
	}
	return ""
}

// isExecutable reports why p is not a file this user may run.
func isExecutable(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("a directory")
	case st.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// startClaude serves the fake API and starts one Claude Code per session
// in its project, with a throwaway HOME in the demo's directory whose
// .claude.json skips onboarding and trusts the projects. Claude Code gets
// only the environment given here (env -i): no key, proxy, cloud
// provider or config dir of the user's can send it anywhere else.
func (d *demoEnv) startClaude(ctx context.Context, bin, path string, width, height int) (map[string]string, error) {
	home, binDir, tmp := filepath.Join(d.Dir, "home"), filepath.Join(d.Dir, "bin"), filepath.Join(d.Dir, "tmp")
	for _, p := range []string{home, binDir, tmp} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("create the demo directory: %w", err)
		}
	}
	// Linked as claude, the process is named claude, whatever the file is
	// called (npm's is claude.exe): that is how system3 knows it.
	claude := filepath.Join(binDir, "claude")
	if err := os.Symlink(bin, claude); err != nil {
		return nil, fmt.Errorf("link Claude Code into the demo: %w", err)
	}
	var projects []string
	for _, s := range d.Sessions {
		dir := filepath.Join(d.Dir, "projects", s.Project)
		projects = append(projects, dir)
		script := "#!/bin/sh\necho \"deploy.sh: the demo's deploy script; nothing was deployed\"\n"
		if err := os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte(script), 0o700); err != nil {
			return nil, fmt.Errorf("write the demo's deploy.sh: %w", err)
		}
	}
	if err := claudefake.WriteConfig(home, "", true, projects...); err != nil {
		return nil, fmt.Errorf("write the demo's .claude.json: %w", err)
	}

	// The fake's own errors go to a log of its own: stderr is the
	// dashboard's.
	apiLog, err := os.OpenFile(filepath.Join(d.StateDir, "fake-api.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the demo's fake API log: %w", err)
	}
	d.closers = append(d.closers, apiLog.Close)
	var rules []claudefake.Rule
	for _, k := range demoKeywords {
		rules = append(rules, claudefake.Rule{Contains: k.Word, Steps: k.Steps, EachPrompt: true})
	}
	api, err := claudefake.New(log.New(apiLog, "", log.LstdFlags), rules...)
	if err != nil {
		return nil, err
	}
	d.API = api
	api.SetDefault(claudefake.Step{Text: demoModelHelp()})

	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := append([]string{
		"HOME=" + home,
		"PATH=" + binDir + string(filepath.ListSeparator) + path,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
		// Its temporary files go where Close removes them.
		"TMPDIR=" + tmp,
		"CLAUDE_CODE_ENABLE_TODO_TOOLS=1",
		// "fail" shows the API error after seconds, not minutes of retries.
		"CLAUDE_CODE_MAX_RETRIES=3",
	}, claudefake.Env(api.URL)...)
	// Its Bash tool wants bash (or zsh) as SHELL.
	if sh := lookIn(path, "bash"); sh != "" {
		env = append(env, "SHELL="+sh)
	}
	c := tmux.NewClient(d.Server)
	panes := map[string]string{}
	for i, s := range d.Sessions {
		argv := append(append([]string{"env", "-i"}, env...), "CLAUDE_CODE_TASK_LIST_ID="+s.TaskList,
			claude, "--permission-mode", "default", demoFirstPrompt)
		pane, err := c.NewSession(ctx, tmux.NewSessionOptions{Name: s.Name, WindowName: "claude", Dir: projects[i],
			Command: argv, Width: width, Height: height})
		if err != nil {
			return panes, fmt.Errorf("start Claude Code in %s: %w", s.Name, err)
		}
		panes[s.Name] = pane
	}
	return panes, nil
}
