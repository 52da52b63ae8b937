package claudefake

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/fakehttp"
)

// API is a scripted stand-in for the Anthropic Messages API, served on
// 127.0.0.1 at a random port. Point the CLI at URL with ANTHROPIC_BASE_URL.
//
// Every main conversation request (see RequestKind) is answered, in order of
// precedence, by a pending FailNext error, by the rule that issued the
// tool_use whose result the request carries, by the first Rule whose Contains
// occurs in the latest user turn, or by the default steps ("OK."). Compaction
// requests and auxiliary side calls get answers of their own and never
// consume a rule's steps. Every request is recorded.
type API struct {
	// URL is the base URL, e.g. "http://127.0.0.1:40123", without a trailing slash.
	URL string

	http *fakehttp.HTTPFake[Request]

	mu       sync.Mutex
	rules    []*ruleState
	def      ruleState
	compact  Step
	failNext []APIError
	toolRule map[string]*ruleState // tool_use id -> the rule that issued it
	nextID   int
}

// Rule scripts the fake's answers to prompts that contain a keyword.
type Rule struct {
	// Name identifies the rule in recorded Requests; Contains is used when empty.
	Name string
	// Contains selects the rule: a substring of the latest user turn (see
	// Request.Prompt). Pick keywords the CLI's own prompts do not contain:
	// compaction, for one, asks about "Pending Tasks" and "errors".
	Contains string
	// Steps are served one per matching main request, in order; the last step
	// repeats once the others are used up. A request that carries the result
	// of a tool_use this rule issued also matches the rule, so a rule can run a
	// whole tool loop: [tool call, final text].
	Steps []Step
	// EachPrompt runs Steps from the first for every prompt that selects
	// the rule, each prompt on its own: the tool results of one turn go on
	// with that turn's steps. A rule then scripts one turn, the same however
	// often it is asked and from however many sessions at once.
	EachPrompt bool
	// Reply, when set, answers every main request the rule takes (by
	// Contains, or as the result of a tool call it issued) instead of
	// Steps: a test scripts an agent that reads what it was sent. It runs
	// outside the fake's lock and may block; it must not call the fake.
	Reply func(Request) Step
}

// Step is one scripted answer to a main conversation request: an HTTP error,
// or an assistant message made of optional text followed by an optional tool
// call.
type Step struct {
	// Text is the assistant's text. Empty with a nil Tool means "OK.".
	Text string
	// Chunks splits Text into this many text_delta events when streaming (at
	// least 1), each preceded by ChunkDelay: a slow stream keeps the CLI busy.
	Chunks     int
	ChunkDelay time.Duration
	// Tool, when set, follows the text as a tool_use block and ends the turn
	// with stop_reason "tool_use".
	Tool *ToolCall
	// Err, when set, answers with this HTTP error instead of a message.
	Err *APIError
	// Repeat serves the step this many times (0 and 1 both mean once) before
	// moving to the next one.
	Repeat int
}

// ToolCall is a tool_use block. Input must hold a JSON object; the helpers in
// tools.go build the inputs of the CLI's built-in tools.
type ToolCall struct {
	Name  string
	Input json.RawMessage
}

// APIError is an error answer in the Anthropic API's shape:
// {"type":"error","error":{"type":Type,"message":Message}}.
type APIError struct {
	Status  int    // HTTP status, e.g. 500, 529, 429, 401
	Type    string // error type; filled from Status by ErrorStatus when empty
	Message string
	// Header is added to the response, e.g. "retry-after".
	Header http.Header
	// Delay holds the answer back, like a slow upstream: the CLI shows
	// "retrying…" while a retry is in flight.
	Delay time.Duration
}

// RequestKind tells the CLI's main conversation requests from the rest.
type RequestKind string

const (
	// KindMain is a request for the next assistant turn of the conversation
	// shown on screen (it offers tools to the model).
	KindMain RequestKind = "main"
	// KindCompact is the CLI's request to summarise the conversation (/compact
	// or auto-compaction), answered with the compaction step; it never
	// consumes rule steps.
	KindCompact RequestKind = "compact"
	// KindAux is a side call to /v1/messages without tools, such as session
	// title generation. Answered with AuxText; never consumes rule steps.
	KindAux RequestKind = "aux"
	// KindOther is any other endpoint (count_tokens, model listing, ...).
	KindOther RequestKind = "other"
)

// Request is one request the fake received.
type Request struct {
	Time   time.Time
	Method string
	Path   string // URL path without the query
	Query  string // raw query, e.g. "beta=true"
	Header http.Header
	Body   []byte
	Kind   RequestKind
	// Prompt is the latest user turn, for /v1/messages requests: the last
	// block of the last user message, <system-reminder>s skipped. That is the
	// text the user typed last (the CLI sends prompts that got no answer, after
	// an API error, as earlier blocks of the same message), or the text of the
	// tool result the request carries.
	Prompt string
	// Rule names the rule that answered a main request: "" for the default
	// steps, "FailNext" for an injected failure.
	Rule string
	// Status is the HTTP status the fake answered with.
	Status int
}

// AuxText answers auxiliary /v1/messages calls.
const AuxText = "Fake session"

// CompactSummary is the default answer to a compaction request: the CLI
// wants an <analysis> block and a <summary> block.
const CompactSummary = "<analysis>Fake analysis.</analysis>\n\n<summary>The user talked to a fake API.</summary>"

// compactMarker is part of the CLI's summarisation prompt (seen in 2.1.329 and 2.1.330).
const compactMarker = "create a detailed summary of the conversation"

// New starts a fake serving rules on 127.0.0.1; Close stops it. errorLog
// gets the HTTP server's errors (nil: the log package's standard logger).
func New(errorLog *log.Logger, rules ...Rule) (*API, error) {
	f := &API{
		def:      ruleState{rule: Rule{Steps: []Step{{Text: "OK."}}}},
		compact:  Step{Text: CompactSummary},
		toolRule: map[string]*ruleState{},
	}
	for _, r := range rules {
		f.AddRule(r)
	}
	h, err := fakehttp.Serve[Request](http.HandlerFunc(f.serve), errorLog)
	if err != nil {
		return nil, fmt.Errorf("fake Anthropic API: %w", err)
	}
	f.http, f.URL = h, h.URL
	return f, nil
}

// Summary lists the requests received, one line each, for failure messages.
func (f *API) Summary() string {
	return fakehttp.Summary(f.Requests(), func(r Request) fakehttp.RequestLine {
		return fakehttp.RequestLine{Time: r.Time, Method: r.Method, Path: r.Path, Status: r.Status, Kind: string(r.Kind), Rule: r.Rule, Prompt: r.Prompt}
	})
}

// Close stops the server, cutting off streams that are still being sent.
func (f *API) Close() { f.http.Close() }

// AddRule appends a rule; earlier rules win when several match.
func (f *API) AddRule(r Rule) {
	if r.Name == "" {
		r.Name = r.Contains
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{rule: r})
}

// SetDefault sets the steps served when no rule matches (initially "OK.").
func (f *API) SetDefault(steps ...Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = ruleState{rule: Rule{Steps: steps}}
}

// SetCompactReply sets the answer to compaction requests; its Text must hold
// a <summary> block. A slow stream keeps "Compacting conversation…" on screen.
func (f *API) SetCompactReply(st Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compact = st
}

// FailNext makes the next n main requests fail with e, before any rule is
// consulted; the CLI's retries count as requests. It replaces failures still
// pending from an earlier call, so FailNext(0, APIError{}) cancels them.
func (f *API) FailNext(n int, e APIError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = nil
	for range n {
		f.failNext = append(f.failNext, e)
	}
}

// Requests returns a copy of every request received so far, oldest first.
func (f *API) Requests() []Request { return f.http.Requests() }

// MainPrompts returns the latest user turn of every main request, oldest first.
func (f *API) MainPrompts() []string {
	var out []string
	for _, r := range f.Requests() {
		if r.Kind == KindMain {
			out = append(out, r.Prompt)
		}
	}
	return out
}

type ruleState struct {
	rule Rule
	step int // index into rule.Steps
	used int // times rule.Steps[step] has been served
}

// next returns the step to serve and advances.
func (s *ruleState) next() Step {
	if len(s.rule.Steps) == 0 {
		return Step{}
	}
	st := s.rule.Steps[s.step]
	s.used++
	if s.used >= max(st.Repeat, 1) && s.step < len(s.rule.Steps)-1 {
		s.step++
		s.used = 0
	}
	return st
}

func (f *API) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{
		Time:   time.Now(),
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
		Kind:   KindOther,
	}
	f.http.Answer(w, &rec, func(w http.ResponseWriter) { rec.Status = f.route(w, r, body, &rec) })
}

// route answers one request and returns the HTTP status it sent.
func (f *API) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		return f.messages(w, body, rec)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		return fakehttp.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": 1000})
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		return fakehttp.WriteJSON(w, http.StatusOK, map[string]any{
			"data":     []any{},
			"has_more": false,
			"first_id": nil,
			"last_id":  nil,
		})
	case r.Method == http.MethodHead || r.URL.Path == "/":
		w.WriteHeader(http.StatusOK)
		return http.StatusOK
	default:
		return writeError(w, APIError{Status: http.StatusNotFound, Message: "Not found: " + r.URL.Path})
	}
}

func (f *API) messages(w http.ResponseWriter, body []byte, rec *Request) int {
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return writeError(w, APIError{Status: http.StatusBadRequest, Message: "bad JSON: " + err.Error()})
	}
	prompt, toolID := latestUserTurn(req.Messages)
	rec.Prompt = prompt
	if len(req.Tools) == 0 {
		rec.Kind = KindAux
		return f.reply(w, req, Step{Text: AuxText}, "")
	}
	if strings.Contains(prompt, compactMarker) {
		rec.Kind = KindCompact
		f.mu.Lock()
		st := f.compact
		f.mu.Unlock()
		if st.Err != nil {
			return f.writeError(w, *st.Err)
		}
		st.Tool = nil
		return f.reply(w, req, st, "")
	}
	rec.Kind = KindMain

	f.mu.Lock()
	if len(f.failNext) > 0 {
		e := f.failNext[0]
		f.failNext = f.failNext[1:]
		f.mu.Unlock()
		rec.Rule = "FailNext"
		return f.writeError(w, e)
	}
	rs := f.pick(prompt, toolID)
	rec.Rule = rs.rule.Name
	var st Step
	if reply := rs.rule.Reply; reply != nil {
		f.mu.Unlock()
		st = reply(*rec)
		f.mu.Lock()
	} else {
		st = rs.next()
	}
	var newToolID string
	if st.Err == nil && st.Tool != nil {
		f.nextID++
		newToolID = fmt.Sprintf("toolu_fake%06d", f.nextID)
		f.toolRule[newToolID] = rs
	}
	f.mu.Unlock()

	if st.Err != nil {
		return f.writeError(w, *st.Err)
	}
	return f.reply(w, req, st, newToolID)
}

// pick chooses the rule for a main request. Called with f.mu held.
func (f *API) pick(prompt, toolUseID string) *ruleState {
	if rs, ok := f.toolRule[toolUseID]; ok {
		return rs
	}
	for _, rs := range f.rules {
		if rs.rule.Contains != "" && strings.Contains(prompt, rs.rule.Contains) {
			if rs.rule.EachPrompt {
				return &ruleState{rule: rs.rule}
			}
			return rs
		}
	}
	return &f.def
}
