package ipc

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Peer is the process at the other end of a connection, as the kernel
// reports it (SO_PEERCRED on Linux). The server derives every origin it
// records from it: a client says who it acts for, never who it is.
type Peer struct {
	// PID is 0 when the kernel did not say (another system, a pipe in
	// tests, a process in another pid namespace).
	PID int
	UID int
	// Exe is the peer's executable (/proc/<pid>/exe), "" when unknown.
	Exe string
	// Agent is the agent CLI that ran the peer, when one of its ancestors
	// is one ("claude": a supervising Claude Code ran `system3 answer`),
	// and AgentPID that ancestor's pid.
	Agent    string
	AgentPID int
}

// maxClaim bounds the origin a client claims, as recorded.
const maxClaim = 200

// Origin is the audit origin of a call from this peer. The verified part
// comes first ("socket:pid=1234,exe=/usr/local/bin/system3", with
// "agent=claude:987" when an agent CLI ran the peer); what the
// client says it acts for ("cli", "mcp:claude-code") follows as its claim,
// quoted, so no claim can pass for a verified origin.
func (p Peer) Origin(claim string) string {
	o := "socket:unknown-peer"
	if p.PID > 0 {
		exe := p.Exe
		if exe == "" {
			exe = "?"
		}
		o = fmt.Sprintf("socket:pid=%d,exe=%s", p.PID, exe)
		if p.Agent != "" {
			o = fmt.Sprintf("socket:pid=%d,agent=%s:%d,exe=%s", p.PID, p.Agent, p.AgentPID, exe)
		}
	}
	claim = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, claim)
	if claim == "" {
		return o
	}
	if len(claim) > maxClaim {
		claim = strings.ToValidUTF8(claim[:maxClaim], "") + "…"
	}
	return o + " claims " + strconv.Quote(claim)
}
