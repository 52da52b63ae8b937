package lifecycle

import (
	"path/filepath"
	"slices"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
)

// agentOf is the agent an orchestrator runs, as monitor/agents knows it
// (its resume, its hooks, whether it writes task lists), whatever program
// its command starts: a wrapper script, an nvm shim or `npx …` runs
// Claude Code as surely as `claude` does. Spawn and restore ask only this,
// so they never disagree. In order:
//
//   - the configured agent's name, when it is a known agent's (`--agent
//     claude` runs Claude Code, whatever its command);
//   - a configured agent of a known agent's name whose command the record
//     ran (the longest such command): the same command line under
//     another name;
//   - the agent the monitor identified its pane as (Identified);
//   - its program's file name (/usr/local/bin/claude).
//
// None of them: agent.Unknown(rec.Agent), which has no resume and no
// hooks.
func (m *Manager) agentOf(rec Record) agent.Spec {
	if s, ok := known(rec.Agent); ok {
		return s
	}
	if rec.CommandLine {
		// One shell command line: its program is Agent.
		return agent.Unknown(rec.Agent)
	}
	var best agent.Spec
	longest := 0
	for _, name := range m.AgentNames() {
		s, ok := known(name)
		c := m.cfg.Agents[name].Command
		if ok && len(c) > longest && len(c) <= len(rec.Command) && slices.Equal(c, rec.Command[:len(c)]) {
			best, longest = s, len(c)
		}
	}
	if longest > 0 {
		return best
	}
	if s, ok := known(rec.Identified); ok {
		return s
	}
	if len(rec.Command) > 0 {
		if s, ok := agents.ByProgram(filepath.Base(rec.Command[0])); ok && s.IsAgent() {
			return s
		}
	}
	return agent.Unknown(rec.Agent)
}

// known is the registered agent (no shell or viewer) of that name.
func known(name string) (agent.Spec, bool) {
	i := slices.IndexFunc(agents.All, func(s agent.Spec) bool { return s.Name == name && s.IsAgent() })
	if i < 0 {
		return agent.Spec{}, false
	}
	return agents.All[i], true
}
