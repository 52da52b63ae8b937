// Package ipc serves a [facade.Service] on a Unix socket in the state dir,
// so CLI commands (wait, watch, ack, status) use the monitors of the one
// system3 process that runs them instead of starting their own.
//
// The protocol is newline-delimited JSON, one call per connection, which
// keeps both ends simple and lets either side end a call by closing:
//
//	server → {"hello":"system3","v":1,"pid":1234}          on accept
//	client → {"v":1,"method":"wait_wake","filter":{...}}    one request line
//	server → {"result":{...}}                               the reply, or
//	         {"error":{"code":"not_found","message":"..."}} (both for an Ack
//	                                                        applied but not journaled)
//
// A long call (spawn, restore, finish) may write {"progress":{"step":...,
// "message":...}} lines before its reply.
//
// Streaming methods (watch, subscribe_wakes, watch_preview) reply
// {"ok":true} once the subscription exists, then one {"result":...} line per item until the
// client closes the connection or the service ends the stream; the server
// then closes. A client that closes mid-call cancels the call's context on
// the server. Each side checks the other's version and says so plainly when
// they differ; a request that is not valid gets a bad_request error and the
// connection is closed.
package ipc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/wake"
)

// SocketFile is the name of the socket in the state dir.
const SocketFile = "system3.sock"

// Version is the protocol version. Bump it on any change an older peer
// would misread; both ends refuse a peer with another version.
const Version = 2

// helloName identifies a system3 server, so a client that reaches some other
// program's socket says so instead of failing on its output.
const helloName = "system3"

// Limits on one line. Requests are small (a filter and an id); replies
// carry whole snapshots, so the client allows far more.
const (
	MaxRequestLine = 1 << 20
	maxReplyLine   = 64 << 20
)

// Timeouts for work that should be instant on a local socket.
const (
	requestTimeout   = 10 * time.Second // server: from accept to a full request line
	writeTimeout     = 30 * time.Second // server: one unary reply
	handshakeTimeout = 5 * time.Second  // client: Dial's ping, at most
)

var (
	// ErrNoDaemon matches (errors.Is) Dial's error when nothing serves the
	// socket: no socket file, or a stale one left by a process that died. The
	// caller may then run its own monitors.
	ErrNoDaemon = errors.New("no system3 daemon is running")
	// ErrVersion matches the error when client and server speak different
	// protocol versions (a system3 upgraded while its daemon kept running).
	ErrVersion = errors.New("system3 protocol version mismatch")
	// ErrConnLost matches the error of a call whose connection the server
	// closed before replying, which happens when the daemon stops.
	ErrConnLost = errors.New("the system3 daemon closed the connection")
	// ErrInUse matches Listen's error when a live server answers on the path.
	ErrInUse = errors.New("socket in use")
	// ErrClientClosed is returned by calls on a closed [Client].
	ErrClientClosed = errors.New("ipc client closed")

	errLineTooLong = errors.New("line too long")
)

// hello is the first line the server writes on every connection.
type hello struct {
	Hello string `json:"hello"`
	V     int    `json:"v"`
	PID   int    `json:"pid,omitempty"`
}

// request is the one line a client sends.
type request struct {
	V      int         `json:"v"`
	Method string      `json:"method"`
	Filter *wireFilter `json:"filter,omitempty"`
	ID     string      `json:"id,omitempty"`
	By     string      `json:"by,omitempty"`
	// Statuses: a watch's client takes the registry's status updates
	// (api.StatusChanged). Every client since they came says so; an older
	// one, which would read one as a session's change, is sent none.
	Statuses bool `json:"statuses,omitempty"`
	// Body is the request of the action methods (a api.InjectRequest,
	// ...), in its own JSON form.
	Body json.RawMessage `json:"body,omitempty"`
}

// wireFilter is api.WakeFilter with a JSON form of its own, so renaming a Go
// field never changes the protocol. A test keeps the two in step.
type wireFilter struct {
	Reasons      []api.Reason `json:"reasons,omitempty"`
	Session      string       `json:"session,omitempty"`
	SinceSeq     uint64       `json:"since_seq,omitempty"`
	IncludeAcked bool         `json:"include_acked,omitempty"`
	// IncludeResolved: an older daemon ignores it and lists open wakes
	// with resolved ones it cannot tell apart.
	IncludeResolved bool `json:"include_resolved,omitempty"`
	Limit           int  `json:"limit,omitempty"`
}

func toWire(f api.WakeFilter) *wireFilter {
	return &wireFilter{Reasons: f.Reasons, Session: f.Session, SinceSeq: f.SinceSeq, IncludeAcked: f.IncludeAcked, IncludeResolved: f.IncludeResolved, Limit: f.Limit}
}

func (w *wireFilter) filter() api.WakeFilter {
	if w == nil {
		return api.WakeFilter{}
	}
	return api.WakeFilter{Reasons: w.Reasons, Session: w.Session, SinceSeq: w.SinceSeq, IncludeAcked: w.IncludeAcked, IncludeResolved: w.IncludeResolved, Limit: w.Limit}
}

// reply is every line the server writes after the hello.
type reply struct {
	OK     bool       `json:"ok,omitempty"` // a stream has started
	Result any        `json:"result,omitempty"`
	Error  *wireError `json:"error,omitempty"`
	// Progress is a step of a long call (spawn, restore, finish), sent
	// before its reply.
	Progress *wireProgress `json:"progress,omitempty"`
}

// replyIn is reply as the client decodes it.
type replyIn struct {
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result"`
	Error    *wireError      `json:"error"`
	Progress *wireProgress   `json:"progress"`
}

type wireProgress struct {
	Step    string `json:"step"`
	Message string `json:"message"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Spawn is a failed spawn's account (an *api.SpawnError): the step,
	// what was cleaned up and what was left; Code and Message are its
	// cause's.
	Spawn *wireSpawnError `json:"spawn,omitempty"`
}

type wireSpawnError struct {
	Initiative string   `json:"initiative"`
	Step       string   `json:"step"`
	CleanedUp  []string `json:"cleaned_up,omitempty"`
	Left       []string `json:"left,omitempty"`
}

// Error codes. The sentinel ones are mapped back on the client, so
// errors.Is works across the socket as it does in-process.
const (
	codeBadRequest = "bad_request"
	codeVersion    = "version"
	codeInternal   = "error"
	codeBusy       = "busy"
)

var sentinels = []struct {
	code string
	err  error
}{
	{"not_found", api.ErrUnknownWake},
	{"not_durable", wake.ErrNotDurable},
	{"closed", wake.ErrClosed},
	{"deadline_exceeded", context.DeadlineExceeded},
	{"canceled", context.Canceled},
	{codeVersion, ErrVersion},
	{"unknown_target", api.ErrUnknownTarget},
	{"ambiguous_target", api.ErrAmbiguousTarget},
	{"not_awaiting", api.ErrNotAwaiting},
	{"prompt_changed", api.ErrPromptChanged},
	{"not_idle", api.ErrNotIdle},
	{"bad_answer", api.ErrBadAnswer},
	{"invalid_request", api.ErrBadRequest},
	{"unknown_list", api.ErrUnknownList},
	{"unknown_task", api.ErrUnknownTask},
	{"no_sender", api.ErrNoSender},
	{"audit_unwritable", api.ErrAuditUnwritable},
	{"refused", api.ErrRefused},
	{"pane_dead", tmux.ErrPaneDead},
	{"tmux_not_found", tmux.ErrNotFound},
	{"no_tmux_server", tmux.ErrNoServer},
	{"invalid_key", tmux.ErrInvalidKey},
	{"hook_refused", api.ErrHookRefused},
	{"not_recorded", api.ErrNotRecorded},
	{"unavailable", facade.ErrUnavailable},
	{"coach_not_found", api.ErrCoachNotFound},
	{"coach_bad_request", api.ErrCoachBadRequest},
	{"coach_no_sender", api.ErrCoachNoSender},
	{"learn_invalid", api.ErrLearnInvalid},
	{"learn_storage", api.ErrLearnStorage},
	{"orchestrator_invalid", api.ErrOrchestratorInvalid},
	{"orchestrator_exists", api.ErrOrchestratorExists},
	{"orchestrator_dirty", api.ErrOrchestratorDirty},
	{"orchestrator_not_found", api.ErrOrchestratorNotFound},
	{"unknown_agent", api.ErrUnknownAgent},
	{"merge_conflict", api.ErrMergeConflict},
	{"records_damaged", api.ErrRecordsDamaged},
	{"no_records", api.ErrNoRecords},
}

func toWireError(err error) *wireError {
	if err == nil {
		return nil
	}
	if se := (*api.SpawnError)(nil); errors.As(err, &se) && se.Err != nil {
		w := toWireError(se.Err)
		w.Spawn = &wireSpawnError{Initiative: se.Initiative, Step: se.Step, CleanedUp: se.CleanedUp, Left: se.Left}
		return w
	}
	// An *Error keeps its code: a protocol error, or a service that is
	// itself a Client.
	var e *Error
	if errors.As(err, &e) {
		return &wireError{Code: e.Code, Message: err.Error()}
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return &wireError{Code: s.code, Message: err.Error()}
		}
	}
	return &wireError{Code: codeInternal, Message: err.Error()}
}

// Error is an error the server returned. Its message is the server's; for
// well-known codes it unwraps to the matching sentinel (api.ErrUnknownWake,
// context.DeadlineExceeded, ...).
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error {
	for _, s := range sentinels {
		if s.code == e.Code {
			return s.err
		}
	}
	return nil
}

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	msg := w.Message
	if msg == "" {
		msg = "system3 daemon error " + w.Code
	}
	if s := w.Spawn; s != nil {
		return &api.SpawnError{Initiative: s.Initiative, Step: s.Step, Err: &Error{Code: w.Code, Message: msg}, CleanedUp: s.CleanedUp, Left: s.Left}
	}
	return &Error{Code: w.Code, Message: msg}
}

// readLine reads one '\n'-terminated line of at most max bytes (newline
// excluded). A line cut by EOF is io.ErrUnexpectedEOF; nothing at all is io.EOF.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		n := len(line) + len(frag)
		if err == nil {
			n-- // the newline
		}
		if n > max {
			return nil, fmt.Errorf("%w (more than %d bytes)", errLineTooLong, max)
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
