// Package agents is the registry of the agents system3 knows: one line per
// agent, in detection order, each agent's package a folder below this one
// (monitor/agents/<name>, an agent.Spec and its rules.yaml). The built-in
// rules are every agent's rules file in this order, then common.yaml (rules
// no one agent owns). Code outside the agents' own packages asks this
// registry about an agent instead of comparing its name.
package agents

import (
	_ "embed"
	"slices"
	"strings"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents/aider"
	"github.com/system3-dev/system3/monitor/agents/claude"
	"github.com/system3-dev/system3/monitor/agents/cline"
	"github.com/system3-dev/system3/monitor/agents/codex"
	"github.com/system3-dev/system3/monitor/agents/copilot"
	"github.com/system3-dev/system3/monitor/agents/gemini"
	"github.com/system3-dev/system3/monitor/agents/opencode"
	"github.com/system3-dev/system3/monitor/agents/qwen"
	"github.com/system3-dev/system3/monitor/agents/shell"
	"github.com/system3-dev/system3/monitor/agents/viewer"
	"github.com/system3-dev/system3/monitor/rules"
)

// All is every known agent, in detection order (an agent earlier in the
// list wins when two recognise the same pane), with shells and viewers
// last.
var All = []agent.Spec{
	claude.Spec,
	codex.Spec,
	gemini.Spec,
	qwen.Spec,
	opencode.Spec,
	cline.Spec,
	copilot.Spec,
	aider.Spec,
	shell.Spec,
	viewer.Spec,
}

// Default is the agent spawn starts when none is named.
const Default = "claude"

//go:embed common.yaml
var common []byte

// builtin is compiled once, the first time an engine is built from it.
var builtin = func() rules.Source {
	parts := make([]rules.Source, 0, len(All)+1)
	for _, s := range All {
		parts = append(parts, rules.Source{Name: "builtin", Data: s.Rules})
	}
	return rules.Bundle("builtin", append(parts, rules.Source{Name: "builtin", Data: common})...)
}()

// Builtin is the built-in rules: every agent's rules file, in registry
// order, and the common file. Users' rules files go after it:
// rules.New(agents.Builtin(), user).
func Builtin() rules.Source { return builtin }

// Lookup is the agent named name: a registered one, None() for "" (no
// agent recognised), else the defaults (an agent a user's rules file
// defines).
func Lookup(name string) agent.Spec {
	if name == "" {
		return agent.None()
	}
	if i := slices.IndexFunc(All, func(s agent.Spec) bool { return s.Name == name }); i >= 0 {
		return All[i]
	}
	return agent.Unknown(name)
}

// IsAgent reports whether name is an agent: recognised, and no shell or
// pager.
func IsAgent(name string) bool { return name != "" && Lookup(name).IsAgent() }

// IsShell reports whether name is a registered plain shell.
func IsShell(name string) bool {
	return name != "" && slices.ContainsFunc(All, func(s agent.Spec) bool { return s.Name == name && s.Kind == agent.Shell })
}

// ByProgram is the registered agent whose launch command's program is
// program ("claude" for /usr/local/bin/claude's base name).
func ByProgram(program string) (agent.Spec, bool) {
	for _, s := range All {
		if len(s.Launch.Command) > 0 && s.Launch.Command[0] == program {
			return s, true
		}
	}
	return agent.Spec{}, false
}

// Launchable is every agent spawn starts by name without configuration.
func Launchable() []agent.Spec {
	var out []agent.Spec
	for _, s := range All {
		if len(s.Launch.Command) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// Resumable names the agents whose resume system3 knows, for messages:
// "claude, codex, gemini, qwen, opencode, cline or copilot".
func Resumable() string {
	var names []string
	for _, s := range All {
		if s.Resume != nil {
			names = append(names, s.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
