// Package approval is system3's approval policy: rules a person writes
// (policy.yaml beside the config, or policy: in it) that decide an agent's
// permission requests (a shell command, an edit, a fetch, an MCP tool) as
// allow, deny or ask, before the agent shows its own dialog. It is pure:
// loading files and watching them for changes is here, deciding when and
// where a decision is asked for is the daemon's.
package approval

import (
	"bytes"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Decision is what a rule decides about a permission request.
type Decision string

// The decisions, strongest first: deny beats ask beats allow. None is no
// decision: no rule matched, and the agent shows its own dialog.
const (
	Deny  Decision = "deny"
	Ask   Decision = "ask"
	Allow Decision = "allow"
	None  Decision = ""
)

// strength orders decisions: deny beats ask beats allow.
func (d Decision) strength() int {
	switch d {
	case Deny:
		return 3
	case Ask:
		return 2
	case Allow:
		return 1
	}
	return 0
}

// The tools whose input a rule can look into, by the names Claude Code
// gives them.
var (
	shellTools = []string{"Bash"}
	pathTools  = []string{"Edit", "Write", "MultiEdit", "NotebookEdit", "Read"}
	fetchTools = []string{"WebFetch"}
)

// Request is one permission request: which agent, in which session, asks
// to run which tool with what input.
type Request struct {
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	// Cwd is the pane's working directory: where inside_worktree and
	// relative path globs are taken from.
	Cwd  string `json:"cwd,omitempty"`
	Tool string `json:"tool"`
	// AgentTool is the agent's own name for the tool when the policy
	// knows it by another (the Gemini CLI's run_shell_command is Bash:
	// FromGemini).
	AgentTool string `json:"agent_tool,omitempty"`
	// Input is the tool's input as the agent sent it (a JSON object).
	Input json.RawMessage `json:"input,omitempty"`
	// RealPath is the file with its symbolic links followed (Resolve),
	// "" when not resolved.
	RealPath string `json:"real_path,omitempty"`
}

// Command is the shell command a Bash request runs, "" for other tools.
func (r Request) Command() string {
	if !slices.Contains(shellTools, r.Tool) {
		return ""
	}
	return r.field("command")
}

// Path is the file an edit (or read) is about, made absolute against Cwd
// and clean, "" for other tools.
func (r Request) Path() string {
	if !slices.Contains(pathTools, r.Tool) {
		return ""
	}
	if r.RealPath != "" {
		return r.RealPath
	}
	p := r.field("file_path")
	if p == "" {
		p = r.field("notebook_path")
	}
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if r.Cwd == "" {
			return ""
		}
		p = filepath.Join(r.Cwd, p)
	}
	return filepath.Clean(p)
}

// Host is the lower-case host a fetch asks for, "" for other tools or a
// URL without one.
func (r Request) Host() string {
	if !slices.Contains(fetchTools, r.Tool) {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(r.field("url")))
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// MCP splits an MCP tool's name (mcp__server__tool) into its server and
// tool; ok is false for other tools.
func (r Request) MCP() (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(r.Tool, "mcp__")
	if !found {
		return "", "", false
	}
	server, tool, _ = strings.Cut(rest, "__")
	return server, tool, server != ""
}

// Summary is the input that identifies the request, on one line: the
// command, the file, the URL (the URLs of a fetch of several), else the
// input as compact JSON.
func (r Request) Summary() string {
	if us := r.urls(); len(us) > 0 {
		return strings.Join(us, " ")
	}
	for _, k := range []string{"command", "file_path", "notebook_path", "url"} {
		if v := r.field(k); v != "" {
			return v
		}
	}
	return string(compact(r.Input))
}

// field is a string field of the input, "" when absent or not a string.
func (r Request) field(name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Input, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[name], &s) != nil {
		return ""
	}
	return s
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// Verdict is what the policy decided about a request, and why.
type Verdict struct {
	Decision Decision `json:"decision"`
	// Rule names the rule that decided (for an allow of a shell command
	// by its parts, each rule that allowed a part, joined by ", ").
	Rule string `json:"rule,omitempty"`
	// Message is what the agent is told with a deny.
	Message string `json:"message,omitempty"`
	// Why says in one sentence why no allow applied when one could have
	// (a substitution, a redirection, an unclosed quote), "" otherwise.
	Why string `json:"why,omitempty"`
}

// Policy is a loaded set of rules. The zero value decides nothing.
type Policy struct {
	rules []*Rule
	// Sources are the files the rules came from.
	Sources []string
	// askTimeout is ask_timeout (0: DefaultAskTimeout).
	askTimeout time.Duration
}

// AskTimeout is how long a request the policy asks about holds the
// agent's hook for an answer before the agent's own dialog shows.
func (p *Policy) AskTimeout() time.Duration {
	if p == nil || p.askTimeout == 0 {
		return DefaultAskTimeout
	}
	return p.askTimeout
}

// Rules returns the rules in the order they were written.
func (p *Policy) Rules() []*Rule {
	if p == nil {
		return nil
	}
	return p.rules
}

// Decide applies the policy to a request. Every rule that matches counts:
// a deny beats an ask, which beats an allow; among rules of one decision
// the first written names the verdict. A shell command is decided part
// by part: a deny or ask rule applies when one part (or the whole
// command) matches it, an allow only when every part is allowed, by one
// rule or several, and the command has no substitution and writes no
// file by redirection. A fetch of several URLs is decided URL by URL
// the same way.
func (p *Policy) Decide(req Request) Verdict {
	if p == nil || len(p.rules) == 0 {
		return Verdict{}
	}
	if us := req.urls(); len(us) > 0 {
		return p.decideEach(req, us)
	}
	return p.decide(req)
}

// decide is Decide for one command, file or URL.
func (p *Policy) decide(req Request) Verdict {
	var best *Rule
	bestDecision := None
	take := func(r *Rule) {
		if r.Decision.strength() > bestDecision.strength() {
			best, bestDecision = r, r.Decision
		}
	}
	cmd := req.Command()
	var sh Shell
	parsed := false
	var partRules []*Rule // allow rules with a command condition
	for _, r := range p.rules {
		if !r.appliesTo(req) {
			continue
		}
		if !r.hasCommand() {
			take(r)
			continue
		}
		if !parsed {
			sh, parsed = ParseShell(cmd), true
		}
		if r.Decision == Allow {
			partRules = append(partRules, r)
			continue
		}
		if r.matchCommand(normSpace(cmd)) || slices.ContainsFunc(sh.Parts, r.matchCommand) {
			take(r)
		}
	}
	if bestDecision == Deny || bestDecision == Ask {
		return best.verdict()
	}
	if len(partRules) == 0 {
		if best != nil {
			return best.verdict()
		}
		return Verdict{}
	}
	why := ""
	switch {
	case sh.Err != nil:
		why = "the command could not be read (" + sh.Err.Error() + ")"
	case sh.Substitution:
		why = "the command runs a substitution ($( ), backticks, <( ) or >( )), which no allow rule covers"
	case sh.Redirect != "":
		why = "the command writes a file by redirection (> " + sh.Redirect + "), which no allow rule covers"
	case len(sh.Parts) == 0:
		why = "the command is empty"
	}
	var names []string
	if why == "" {
		for _, part := range sh.Parts {
			i := slices.IndexFunc(partRules, func(r *Rule) bool { return r.matchCommand(part) })
			if i < 0 {
				why = "no allow rule covers " + quote(part)
				names = nil
				break
			}
			if !slices.Contains(names, partRules[i].ID) {
				names = append(names, partRules[i].ID)
			}
		}
	}
	if len(names) > 0 {
		return Verdict{Decision: Allow, Rule: strings.Join(names, ", ")}
	}
	if best != nil { // an allow without a command condition
		return best.verdict()
	}
	return Verdict{Why: why}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Resolve makes a request's working directory and file real: symbolic
// links followed as far as the path exists, so a link inside the worktree
// that leads out of it is outside. It reads the file system; Decide does
// not.
func Resolve(req Request) Request {
	if req.Cwd != "" {
		req.Cwd = realPath(req.Cwd)
	}
	if p := req.Path(); p != "" {
		req.RealPath = realPath(p)
	}
	return req
}

// realPath follows the symbolic links of the longest part of p that
// exists, and keeps the rest as written.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
