package approval

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Rule is one rule of the policy. Every condition it states must hold for
// it to match; a condition left out matches anything. A condition on a
// tool's input (command, paths, inside_worktree, hosts, mcp_server,
// mcp_tool) matches only requests of the tools that have that input.
type Rule struct {
	// ID names the rule in verdicts and the audit log.
	ID string `yaml:"id" json:"id"`
	// Agents are the agents it applies to (claude, codex, ...).
	Agents Strings `yaml:"agents,omitempty" json:"agents,omitempty"`
	// Sessions are globs of tmux session names.
	Sessions Strings `yaml:"sessions,omitempty" json:"sessions,omitempty"`
	// Tools are globs of tool names (Bash, Edit, Write, WebFetch,
	// mcp__github__*).
	Tools Strings `yaml:"tools,omitempty" json:"tools,omitempty"`
	// Command are globs, CommandRegexp a regular expression, that one
	// simple command of a shell command must match whole.
	Command       Strings `yaml:"command,omitempty" json:"command,omitempty"`
	CommandRegexp string  `yaml:"command_regexp,omitempty" json:"command_regexp,omitempty"`
	// Paths are globs of the file an edit is about; a relative glob is
	// taken from the pane's working directory, ** is any number of
	// directories.
	Paths Strings `yaml:"paths,omitempty" json:"paths,omitempty"`
	// InsideWorktree, when set, is whether the file must be inside the
	// pane's working directory (true) or outside it (false).
	InsideWorktree *bool `yaml:"inside_worktree,omitempty" json:"inside_worktree,omitempty"`
	// Hosts are globs of the host a fetch asks for (*.example.com).
	Hosts Strings `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// MCPServer and MCPTool are globs of an MCP tool's server and tool.
	MCPServer Strings `yaml:"mcp_server,omitempty" json:"mcp_server,omitempty"`
	MCPTool   Strings `yaml:"mcp_tool,omitempty" json:"mcp_tool,omitempty"`

	Decision Decision `yaml:"decision" json:"decision"`
	// Message is what the agent is told when the rule denies.
	Message     string `yaml:"message,omitempty" json:"message,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`

	// Source is the file that defined it.
	Source string `yaml:"-" json:"source,omitempty"`

	re *regexp.Regexp
}

// Strings is a list written as one string or as a YAML list.
type Strings []string

// UnmarshalYAML reads a string or a list of strings.
func (s *Strings) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v string
		if err := n.Decode(&v); err != nil {
			return err
		}
		*s = Strings{v}
		return nil
	}
	var v []string
	if err := n.Decode(&v); err != nil {
		return err
	}
	*s = v
	return nil
}

func (r *Rule) hasCommand() bool { return len(r.Command) > 0 || r.re != nil }

// appliesTo checks every condition but the command.
func (r *Rule) appliesTo(req Request) bool {
	if len(r.Agents) > 0 && !slices.Contains(r.Agents, req.Agent) {
		return false
	}
	if len(r.Sessions) > 0 && !anyGlob(r.Sessions, req.Session) {
		return false
	}
	if len(r.Tools) > 0 && !anyGlob(r.Tools, req.Tool) {
		return false
	}
	if r.hasCommand() && !slices.Contains(shellTools, req.Tool) {
		return false
	}
	return r.appliesToPath(req) && r.appliesToHost(req) && r.appliesToMCP(req)
}

// appliesToPath checks the conditions on the file the request touches.
func (r *Rule) appliesToPath(req Request) bool {
	if len(r.Paths) == 0 && r.InsideWorktree == nil {
		return true
	}
	p := req.Path()
	if p == "" {
		return false
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(g string) bool { return matchPath(g, req.Cwd, p) }) {
		return false
	}
	if r.InsideWorktree != nil && inside(req.Cwd, p) != *r.InsideWorktree {
		return false
	}
	if r.InsideWorktree != nil && !*r.InsideWorktree && req.Cwd == "" {
		// Not knowing the worktree is not knowing the file is outside.
		return false
	}
	return true
}

// appliesToHost checks the condition on the host the request fetches from.
func (r *Rule) appliesToHost(req Request) bool {
	if len(r.Hosts) == 0 {
		return true
	}
	h := req.Host()
	return h != "" && anyGlob(r.Hosts, h)
}

// appliesToMCP checks the conditions on the MCP server and tool called.
func (r *Rule) appliesToMCP(req Request) bool {
	if len(r.MCPServer) == 0 && len(r.MCPTool) == 0 {
		return true
	}
	server, tool, ok := req.MCP()
	if !ok {
		return false
	}
	if len(r.MCPServer) > 0 && !anyGlob(r.MCPServer, server) {
		return false
	}
	return len(r.MCPTool) == 0 || anyGlob(r.MCPTool, tool)
}

// matchCommand reports whether one simple command matches the rule's
// command globs or regexp.
func (r *Rule) matchCommand(part string) bool {
	for _, g := range r.Command {
		if matchWords(g, part) {
			return true
		}
	}
	return r.re != nil && r.re.MatchString(part)
}

func (r *Rule) verdict() Verdict {
	v := Verdict{Decision: r.Decision, Rule: r.ID}
	if r.Decision == Deny {
		v.Message = r.Message
		if v.Message == "" {
			v.Message = fmt.Sprintf("system3's approval policy denies this (rule %s).", r.ID)
		}
	}
	return v
}

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if ok, err := path.Match(g, s); err == nil && ok {
			return true
		}
	}
	return false
}

// check validates a rule and compiles it; the error names what to fix.
func (r *Rule) check() error {
	if strings.TrimSpace(r.ID) == "" {
		return errors.New("no id: give each rule an id (it names the rule in verdicts and the audit log)")
	}
	switch r.Decision {
	case Allow, Deny, Ask:
	case "":
		return errors.New("no decision: say allow, deny or ask")
	default:
		return fmt.Errorf("decision %q: say allow, deny or ask", r.Decision)
	}
	if r.Message != "" && r.Decision != Deny {
		return errors.New("message is what a deny tells the agent; this rule does not deny")
	}
	for _, l := range []struct {
		name  string
		globs Strings
	}{{"sessions", r.Sessions}, {"tools", r.Tools}, {"hosts", r.Hosts}, {"mcp_server", r.MCPServer}, {"mcp_tool", r.MCPTool}} {
		for _, g := range l.globs {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("%s: an empty glob", l.name)
			}
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("%s: %q is not a glob: %v", l.name, g, err)
			}
		}
	}
	for _, a := range r.Agents {
		if strings.TrimSpace(a) == "" {
			return errors.New("agents: an empty agent name")
		}
	}
	for _, g := range r.Command {
		if normSpace(g) == "" {
			return errors.New("command: an empty glob")
		}
	}
	if r.CommandRegexp != "" {
		re, err := regexp.Compile(`^(?:` + r.CommandRegexp + `)$`)
		if err != nil {
			return fmt.Errorf("command_regexp: %v", err)
		}
		r.re = re
	}
	for _, g := range r.Paths {
		if err := checkPathGlob(g); err != nil {
			return fmt.Errorf("paths: %v", err)
		}
	}
	// A condition on one kind of input with tools of another kind could
	// never match: say so rather than keep a rule that does nothing.
	kinds := map[string][]string{"command": shellTools, "paths": pathTools, "inside_worktree": pathTools, "hosts": fetchTools}
	used := map[string]bool{"command": r.hasCommand(), "paths": len(r.Paths) > 0, "inside_worktree": r.InsideWorktree != nil, "hosts": len(r.Hosts) > 0}
	for _, cond := range []string{"command", "paths", "inside_worktree", "hosts"} {
		if !used[cond] || len(r.Tools) == 0 {
			continue
		}
		if !slices.ContainsFunc(kinds[cond], func(t string) bool { return anyGlob(r.Tools, t) }) {
			return fmt.Errorf("%s applies to %s, and tools names none of them", cond, strings.Join(kinds[cond], ", "))
		}
	}
	return nil
}
