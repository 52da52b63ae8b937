package monitor

import (
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// The classify stage: a pane's listing and screen become the rules'
// result, with what the agent's process and transcript add.

// classify runs the rules on one pane's listing and screen.
func (s *Supervisor) classify(eng *rules.Engine, p tmux.Pane, screen string) rules.Result {
	in := rules.Input{Processes: []string{p.Command}, Dead: p.Dead, DeadStatus: p.DeadStatus}
	if !p.Dead {
		in.Screen = screen
		if s.cfg.Foreground != nil && !s.notShell(eng, p) {
			// A shell's own state comes from who holds its terminal.
			comm, job, ok := s.cfg.Foreground(p.PID)
			if ok && eng.ShellFor(comm) != "" {
				in.Shell, in.Job = comm, job
				if job == "" {
					// The shell holds its terminal now, whatever command
					// the listing (made up to a few seconds ago) saw in
					// front: an agent that quit to it is seen at once.
					in.Processes[0] = comm
				}
			}
			if ok {
				s.roots[p.ID] = rootProcess{pid: p.PID, command: p.Command, comm: comm}
			}
		}
		// Look below the pane's process only when its foreground
		// command is not an agent already (a wrapper, node, a shell).
		if s.cfg.Processes != nil && !eng.IsAgentProcess(in.Processes[0]) {
			in.Processes = append(in.Processes, s.cfg.Processes(p.PID)...)
		}
		if s.cfg.Cmdlines != nil && eng.WantsArgs(in.Processes) {
			in.Cmdlines = s.cfg.Cmdlines(p.PID)
		}
		in.Raw = s.rawFront(eng, p, in)
	}
	res := eng.Classify(in)
	if res.Rule == api.RuleProcessGone && res.AgentBy == "screen" && len(in.Processes) > 0 && s.seenAgentOf(p.ID) == "" {
		// The screen shows an agent this pane was never seen running,
		// with a shell in the foreground: a shell that printed an agent's
		// text (cat of a transcript, a script's first moments), not an
		// agent that exited. It is the shell's screen.
		if shell := eng.ShellFor(in.Processes[0]); shell != "" {
			in.Agent = shell
			res = eng.Classify(in)
		}
	}
	return res
}

// notShell reports that the pane's own process was read before and is not
// a shell, so who holds its terminal does not matter: an agent started
// as the pane's command stays that process. A process that execs another
// program changes the foreground command tmux lists, and a new pid is a
// new process; either reads it again.
func (s *Supervisor) notShell(eng *rules.Engine, p tmux.Pane) bool {
	r, ok := s.roots[p.ID]
	return ok && r.pid == p.PID && r.command == p.Command && eng.ShellFor(r.comm) == ""
}

// seenAgentOf is the agent a pane was last seen running ("" if none).
func (s *Supervisor) seenAgentOf(pane string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.panes[pane]; ok {
		return st.seenAgent
	}
	return ""
}

// reprobeEvery is how often a pane's process is looked at again: a new
// Claude Code session (after /clear, or a restart) writes a new transcript.
const reprobeEvery = 10 * time.Second

type paneProbe struct {
	info   AgentInfo
	probed time.Time
	tail   *transcriptTail
}

// probeResult is what a pane's process and transcript add to its screen.
type probeResult struct {
	// failing is the error of a run of failing tool calls, or "".
	failing  string
	taskList string
	tasks    *api.TaskProgress
	usage    *api.Usage
	// agentSessionID and transcript name the agent's conversation.
	agentSessionID, transcript string
	// version is the agent's version, when known.
	version string
}

// errorSummary is a tool error in one line: its first two non-empty lines
// ("Exit code 2 · ls: cannot access ..."), at most 200 characters.
func errorSummary(text string) string {
	var parts []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
			if len(parts) == 2 {
				break
			}
		}
	}
	s := strings.Join(parts, " · ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}
