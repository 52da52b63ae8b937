package monitor

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/agent"
)

// Claude Code writes each session's conversation to a JSONL transcript,
// ~/.claude/projects/<cwd with every non-alphanumeric byte as '-'>/<id>.jsonl.
// A tool call that fails is a tool_result with is_error: true there, which
// the screen only shows collapsed ("Listed 4 directories · 4 failed"), so the
// transcript is the reliable source for loops of failing tool calls.

// toolResult is one tool result recorded in a transcript (or an API error
// that ended a turn).
type toolResult struct {
	Time   time.Time
	Failed bool
	Text   string // the result's text, for failures
}

// transcriptLine is the part of a transcript entry system3 reads.
type transcriptLine struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	// IsAPIError marks the assistant entry Claude Code writes when a turn
	// ends on an API error ("API Error: ..." as its text).
	IsAPIError bool `json:"isApiErrorMessage"`
	Message    struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type contentBlock struct {
	Type    string          `json:"type"`
	IsError bool            `json:"is_error"`
	Content json.RawMessage `json:"content"`
}

// parseTranscriptLine returns the tool results in one transcript line, and
// a turn that ended on an API error as a failed result; lines of other
// kinds, and lines it cannot read, have none.
func parseTranscriptLine(line []byte) []toolResult {
	var l transcriptLine
	if json.Unmarshal(line, &l) != nil || len(l.Message.Content) == 0 {
		return nil
	}
	if l.Type == "assistant" && l.IsAPIError {
		return []toolResult{{Time: l.Timestamp, Failed: true, Text: blockText(l.Message.Content)}}
	}
	if l.Type != "user" || l.Message.Content[0] != '[' {
		return nil
	}
	var blocks []contentBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return nil
	}
	var out []toolResult
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		r := toolResult{Time: l.Timestamp, Failed: b.IsError}
		if b.IsError {
			r.Text = blockText(b.Content)
		}
		out = append(out, r)
	}
	return out
}

// blockText is a tool result's content: a string, or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// Bounds on following a transcript: how many recent results are kept, how
// much is read per poll, and the longest line kept while incomplete.
const (
	keepResults   = 32
	maxReadChunk  = 4 << 20
	maxLineLength = 1 << 20
)

// transcriptTail follows one transcript file, reading only what was
// appended since the last poll.
type transcriptTail struct {
	path    string
	off     int64
	partial []byte
	results []toolResult
	// uses wait for their results; calls are the completed tool calls
	// not yet taken (see toolcall.go).
	uses  map[string]toolUse
	calls []api.ToolCall
	// usage adds up the tokens of the responses read.
	usage usageTally
}

// poll reads what was appended. A file that shrank (rewritten) is read
// again from the start.
func (t *transcriptTail) poll() error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < t.off {
		t.off, t.partial, t.results, t.uses, t.usage = 0, nil, nil, nil, usageTally{}
	}
	if st.Size() == t.off {
		return nil
	}
	data, err := io.ReadAll(io.NewSectionReader(f, t.off, min(st.Size()-t.off, maxReadChunk)))
	if err != nil {
		return err
	}
	t.off += int64(len(data))
	data = append(t.partial, data...)
	last := bytes.LastIndexByte(data, '\n')
	if last < 0 {
		t.partial = keepPartial(data)
		return nil
	}
	for line := range bytes.SplitSeq(data[:last], []byte{'\n'}) {
		t.results = append(t.results, parseTranscriptLine(line)...)
		t.toolCalls(line)
		t.usage.add(line)
	}
	if n := len(t.results); n > keepResults {
		t.results = append([]toolResult(nil), t.results[n-keepResults:]...)
	}
	t.partial = keepPartial(data[last+1:])
	return nil
}

// keepPartial keeps an incomplete last line for the next poll, unless it
// is too long to be worth it (a huge tool output): then it is dropped.
func keepPartial(b []byte) []byte {
	if len(b) > maxLineLength {
		return nil
	}
	return append([]byte(nil), b...)
}

// failingRun reports a loop: the last n tool results all failed with the
// same error signature within window of now. It returns the error text and
// true when they did.
func (t *transcriptTail) failingRun(n int, window time.Duration, now time.Time) (string, bool) {
	if n <= 0 || len(t.results) < n {
		return "", false
	}
	last := t.results[len(t.results)-n:]
	sig := normalizeError(last[0].Text)
	for _, r := range last {
		if !r.Failed || normalizeError(r.Text) != sig || now.Sub(r.Time) > window {
			return "", false
		}
	}
	return last[n-1].Text, true
}

// AgentInfo is what the process of an agent tells about it.
type AgentInfo struct {
	// Transcript is the session's transcript file, "" when unknown.
	Transcript string
	// TaskList is the Claude Code task list the session writes
	// (CLAUDE_CODE_TASK_LIST_ID), "" when not set.
	TaskList string
	// SessionID is the agent's conversation id, for agents whose
	// transcript does not name it (Probe.SessionID), "" when unknown.
	SessionID string
}

// ProbeAgent looks at the agent's process (the first of how.Processes
// found) running below pid (the pane's process) in directory cwd: its
// task list id from its environment (how.TaskListVar), and its
// transcript, the most recently written .jsonl in how.TranscriptDir.
// Without such a process (a renamed build, a wrapper that runs it under
// another name, system3's demo agents), the first process in the pane
// whose environment names a task list links it, and no transcript is
// followed. An agent whose transcript does not name its conversation
// names it by how.SessionID.
func ProbeAgent(how *agent.Probe, pid int, cwd string) AgentInfo {
	if how == nil {
		return AgentInfo{}
	}
	cpid := 0
	for _, name := range how.Processes {
		if cpid = findProcess(pid, name); cpid != 0 {
			break
		}
	}
	if cpid == 0 {
		info := AgentInfo{TaskList: envInTree(pid, how.TaskListVar)}
		info.SessionID = probeSessionID(how, pid, agent.Process{Env: processEnv(pid)})
		return info
	}
	env := processEnv(cpid)
	info := AgentInfo{TaskList: env[how.TaskListVar], SessionID: probeSessionID(how, pid, agent.Process{Env: env, Args: processArgs(cpid)})}
	if how.TranscriptDir != nil {
		if dir := how.TranscriptDir(env, cwd); dir != "" {
			info.Transcript = newestTranscript(dir)
		}
	}
	return info
}

// probeSessionID asks how.SessionID for the conversation of the agent in
// the pane whose process is pane. A process holds what was written at t
// when it runs in the pane and had started by t (a second of slack for
// the boot time's rounding), so a process that took the id of one that
// died holding a conversation is not taken for it.
func probeSessionID(how *agent.Probe, pane int, p agent.Process) string {
	if how.SessionID == nil || p.Env == nil {
		return ""
	}
	p.Holds = func(pid int, t time.Time) bool {
		if ok, err := descendsFrom(pid, pane); !ok || err != nil {
			return false
		}
		at, err := processStart(pid)
		return err == nil && !at.After(t.Add(time.Second))
	}
	return how.SessionID(p)
}

// newestTranscript is the most recently written .jsonl in project, or "".
func newestTranscript(project string) string {
	entries, err := os.ReadDir(project)
	if err != nil {
		return ""
	}
	var newest string
	var newestMod time.Time
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		info, err := e.Info()
		if err == nil && info.ModTime().After(newestMod) {
			newest, newestMod = filepath.Join(project, e.Name()), info.ModTime()
		}
	}
	return newest
}
