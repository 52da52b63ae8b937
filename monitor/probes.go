package monitor

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/monitor/agent"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

// probes is the Supervisor's job of asking agents' processes what their
// screens do not say: each agent's version (from its process, else its
// screen), and, for agents whose Spec says how to probe them (Claude
// Code), the task list in its environment, its transcript (the tool calls
// it made, their failures, its token usage) and its session id, with what
// its hooks said (hookInfo). Only flush uses it, so it needs no lock; the
// Supervisor drops the panes that are gone.
type probes struct {
	cfg      *Config
	hookInfo func(pane string) (transcript, sessionID string)
	panes    map[string]*paneProbe
	versions map[string]*versionCache
}

// versionCache is a pane's agent version and what it was found for.
type versionCache struct {
	key, version string
}

// versionOf is the version of the agent in a pane: from its process
// (looked up once per agent process), else from its screen (looked at
// until found).
func (pr *probes) versionOf(eng *rules.Engine, p tmux.Pane, agent, screen string) string {
	if agent == "" || eng.IsShellAgent(agent) {
		return ""
	}
	key := fmt.Sprintf("%s\x00%d\x00%s", agent, p.PID, p.Command)
	vc := pr.versions[p.ID]
	if vc == nil || vc.key != key {
		vc = &versionCache{key: key}
		pr.versions[p.ID] = vc
		if pr.cfg.AgentVersion != nil && !p.Dead {
			vc.version = pr.cfg.AgentVersion(p.PID, agent, func(name string) bool { return eng.IsProcessOf(agent, name) })
		}
	}
	if vc.version == "" && !p.Dead {
		vc.version = eng.ScreenVersion(agent, screen)
	}
	return vc.version
}

// probe looks at the pane's agent's process (every reprobeEvery) and
// follows its transcript, for agents whose Spec says how (Claude Code).
func (pr *probes) probe(p tmux.Pane, name string) probeResult {
	how := agents.Lookup(name).Probe
	if how == nil || p.Dead {
		return probeResult{}
	}
	hookTranscript, hookSession := pr.hookInfo(p.ID)
	if pr.cfg.Probe == nil && hookTranscript == "" && hookSession == "" {
		return probeResult{}
	}
	now := pr.cfg.Clock()
	pp := pr.reprobe(p, how, now)
	pp.follow(hookTranscript)
	res := pr.found(pp.info, hookSession)
	if pp.tail == nil {
		return res
	}
	if err := pp.tail.poll(); err != nil {
		pr.cfg.Logger.Debug("read transcript", "pane", p.ID, "path", pp.tail.path, "err", err)
		return res
	}
	pr.readTranscript(&res, pp.tail, p, name, now)
	return res
}

// reprobe is the pane's probe, its process asked again when it was not
// asked for reprobeEvery.
func (pr *probes) reprobe(p tmux.Pane, how *agent.Probe, now time.Time) *paneProbe {
	pp := pr.panes[p.ID]
	if pp == nil {
		pp = &paneProbe{}
		pr.panes[p.ID] = pp
	}
	if pp.probed.IsZero() || now.Sub(pp.probed) >= reprobeEvery {
		pp.probed = now
		if pr.cfg.Probe != nil {
			pp.info = pr.cfg.Probe(p, how)
		}
	}
	return pp
}

// follow sets the transcript the pane's probe follows: the one a hook
// named is the session's; the probe's is a guess (the newest file in the
// project's directory).
func (pp *paneProbe) follow(hookTranscript string) {
	if hookTranscript != "" {
		pp.info.Transcript = hookTranscript
	}
	if pp.info.Transcript == "" {
		pp.tail = nil
	} else if pp.tail == nil || pp.tail.path != pp.info.Transcript {
		pp.tail = &transcriptTail{path: pp.info.Transcript}
	}
}

// found is what the probe and the hooks say of the agent's conversation
// and its task list, with the list's progress.
func (pr *probes) found(info AgentInfo, hookSession string) probeResult {
	res := probeResult{taskList: info.TaskList, agentSessionID: hookSession, transcript: info.Transcript}
	if res.agentSessionID == "" {
		// An agent whose transcript does not name it (Cline).
		res.agentSessionID = info.SessionID
	}
	if res.agentSessionID == "" && res.transcript != "" {
		// Claude Code names its transcript after its session id.
		res.agentSessionID = strings.TrimSuffix(filepath.Base(res.transcript), ".jsonl")
	}
	if res.taskList == "" && hookSession != "" && pr.cfg.TaskProgress != nil {
		// Without CLAUDE_CODE_TASK_LIST_ID, Claude Code names the task
		// list after its session.
		if _, ok := pr.cfg.TaskProgress(hookSession); ok {
			res.taskList = hookSession
		}
	}
	if res.taskList != "" && pr.cfg.TaskProgress != nil {
		if tp, ok := pr.cfg.TaskProgress(res.taskList); ok {
			res.tasks = &tp
		}
	}
	return res
}

// readTranscript adds what the transcript read since says: its tool calls
// go to OnToolCall, its token usage and a run of failing tool calls to res.
func (pr *probes) readTranscript(res *probeResult, tail *transcriptTail, p tmux.Pane, name string, now time.Time) {
	if calls := tail.takeCalls(); pr.cfg.OnToolCall != nil {
		for _, c := range calls {
			c.Pane, c.Session, c.Repo, c.Agent = p.ID, p.SessionName, p.Path, name
			c.Target = fmt.Sprintf("%s:%d.%d", p.SessionName, p.WindowIndex, p.Index)
			pr.cfg.OnToolCall(c)
		}
	}
	res.usage = tail.usage.usage(pr.cfg.Prices)
	if text, ok := tail.failingRun(pr.cfg.LoopThreshold, pr.cfg.LoopWindow, now); ok {
		res.failing = text
		if strings.TrimSpace(text) == "" {
			res.failing = "a tool call failed (no error text)"
		}
	}
}
