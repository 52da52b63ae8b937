package codextest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// FakeAPI is a scripted stand-in for the OpenAI Responses API, served on
// 127.0.0.1 at a random port. Codex reaches it through a model provider
// whose base_url is URL + "/v1" (Start writes that config).
//
// Every main request (see RequestKind) is answered, in order of precedence,
// by a pending FailNext error, by the rule that issued the function call
// whose output the request carries, by the first Rule whose Contains occurs
// in the latest user turn, or by the default steps ("OK."). Title requests
// get a title of their own and never consume a rule's steps. Every request is
// recorded.
type FakeAPI struct {
	// URL is the base URL, e.g. "http://127.0.0.1:40123", without a trailing
	// slash and without the "/v1" the provider's base_url adds.
	URL string

	http *clitest.HTTPFake[Request]

	mu       sync.Mutex
	rules    []*ruleState
	def      ruleState
	failNext []APIError
	callRule map[string]*ruleState // call_id -> the rule that issued it
	nextID   int
}

// Rule scripts the fake's answers to prompts that contain a keyword.
type Rule struct {
	// Name identifies the rule in recorded Requests; Contains is used when empty.
	Name string
	// Contains selects the rule: a substring of the latest user turn (see
	// Request.Prompt).
	Contains string
	// Steps are served one per matching main request, in order; the last step
	// repeats once the others are used up. A request that carries the output
	// of a function call this rule issued also matches the rule, so a rule
	// can run a whole tool loop: [tool call, final text].
	Steps []Step
}

// Step is one scripted answer to a main request: an HTTP error, or a
// response made of optional text followed by an optional function call.
type Step struct {
	// Text is the assistant's message. Empty with a nil Tool means "OK.".
	Text string
	// Chunks splits Text into this many output_text deltas (at least 1), each
	// preceded by ChunkDelay: a slow stream keeps the CLI busy.
	Chunks     int
	ChunkDelay time.Duration
	// Tool, when set, follows the text as a function_call output item.
	Tool *ToolCall
	// Err, when set, answers with this HTTP error instead of a response.
	Err *APIError
	// Hang keeps the stream open after the text without completing it, until
	// the fake closes or the CLI goes away: a turn that never ends.
	Hang bool
	// Repeat serves the step this many times (0 and 1 both mean once) before
	// moving to the next one.
	Repeat int
}

// ToolCall is a function_call output item. Arguments must hold a JSON
// object; the helpers in tools.go build the arguments of Codex's tools.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// APIError is an error answer in the OpenAI API's shape:
// {"error":{"message":Message,"type":Type,"code":Code}}.
type APIError struct {
	Status  int // HTTP status, e.g. 500, 429, 401
	Type    string
	Code    string
	Message string
	// Header is added to the response, e.g. "retry-after".
	Header http.Header
	// Delay holds the answer back, like a slow upstream.
	Delay time.Duration
	// ResetsAt, when set, is sent as the error's resets_at (Unix
	// seconds), as ChatGPT's usage_limit_reached error says when the
	// limit resets.
	ResetsAt time.Time
}

// RequestKind tells the CLI's requests apart.
type RequestKind string

const (
	// KindMain is a request for the next turn of the conversation shown on
	// screen (POST /v1/responses offering tools).
	KindMain RequestKind = "main"
	// KindTitle is the CLI's side request for a thread title (a
	// /v1/responses request with a JSON schema text format). Answered with
	// Title; never consumes rule steps.
	KindTitle RequestKind = "title"
	// KindOther is any other request (model listing, compaction...).
	KindOther RequestKind = "other"
)

// Title answers title requests.
const Title = "Fake task"

// Request is one request the fake received.
type Request struct {
	Time   time.Time
	Method string
	Path   string // URL path without the query
	Query  string
	Header http.Header
	Body   []byte
	Kind   RequestKind
	// Prompt is the latest user turn of a /v1/responses request: the text of
	// the last input item when that is a user message, or the output of the
	// function call it carries (then CallID names that call).
	Prompt string
	CallID string
	// Rule names the rule that answered a main request: "" for the default
	// steps, "FailNext" for an injected failure.
	Rule string
	// Status is the HTTP status the fake answered with.
	Status int
}

// NewFakeAPI starts a fake serving rules and stops it when the test ends.
func NewFakeAPI(t testing.TB, rules ...Rule) *FakeAPI {
	t.Helper()
	f := &FakeAPI{
		def:      ruleState{rule: Rule{Steps: []Step{{Text: "OK."}}}},
		callRule: map[string]*ruleState{},
	}
	for _, r := range rules {
		f.AddRule(r)
	}
	f.http = clitest.NewHTTPFake[Request](t, "fake Responses API", http.HandlerFunc(f.serve), f.Summary)
	f.URL = f.http.URL
	return f
}

// Summary lists the requests received, one line each, for failure messages.
func (f *FakeAPI) Summary() string {
	return clitest.Summary(f.Requests(), func(r Request) clitest.RequestLine {
		return clitest.RequestLine{Time: r.Time, Method: r.Method, Path: r.Path, Status: r.Status, Kind: string(r.Kind), Rule: r.Rule, Prompt: r.Prompt}
	})
}

// Close stops the server, cutting off streams that are still being sent.
func (f *FakeAPI) Close() { f.http.Close() }

// AddRule appends a rule; earlier rules win when several match.
func (f *FakeAPI) AddRule(r Rule) {
	if r.Name == "" {
		r.Name = r.Contains
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{rule: r})
}

// FailNext makes the next n main requests fail with e, before any rule is
// consulted; the CLI's retries count as requests. It replaces failures still
// pending from an earlier call, so FailNext(0, APIError{}) cancels them.
func (f *FakeAPI) FailNext(n int, e APIError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext = nil
	for range n {
		f.failNext = append(f.failNext, e)
	}
}

// Requests returns a copy of every request received so far, oldest first.
func (f *FakeAPI) Requests() []Request { return f.http.Requests() }

// MainPrompts returns the latest user turn of every main request, oldest first.
func (f *FakeAPI) MainPrompts() []string {
	var out []string
	for _, r := range f.Requests() {
		if r.Kind == KindMain {
			out = append(out, r.Prompt)
		}
	}
	return out
}

// CountMain returns how many main requests carried a prompt containing s.
func (f *FakeAPI) CountMain(s string) int {
	n := 0
	for _, p := range f.MainPrompts() {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
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

// UsageLimit is the 429 ChatGPT answers when a plan's usage limit is
// spent: Codex says "You've hit your usage limit. Try again at …" with
// the reset in its local time.
func UsageLimit(reset time.Time) APIError {
	return APIError{Status: http.StatusTooManyRequests, Type: "usage_limit_reached",
		Message: "The usage limit has been reached", ResetsAt: reset}
}

// ErrorStatus returns the usual OpenAI error for an HTTP status.
func ErrorStatus(status int) APIError {
	e := APIError{Status: status}
	e.fill()
	return e
}

func (e *APIError) fill() {
	if e.Type != "" || e.Message != "" {
		return
	}
	switch e.Status {
	case http.StatusUnauthorized:
		e.Type, e.Code = "invalid_request_error", "invalid_api_key"
		e.Message = "Incorrect API key provided: sk-fake***. You can find your API key at https://platform.openai.com/account/api-keys."
	case http.StatusTooManyRequests:
		e.Type, e.Code = "requests", "rate_limit_exceeded"
		e.Message = "Rate limit reached for requests. Please try again in 20s."
	case http.StatusBadRequest:
		e.Type = "invalid_request_error"
		e.Message = "Bad request."
	default:
		e.Type = "server_error"
		e.Message = "The server had an error while processing your request. Sorry about that!"
	}
}

// responsesRequest is the part of a Responses API request body the fake reads.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []inputItem       `json:"input"`
	Tools  []json.RawMessage `json:"tools"`
	Text   *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
}

type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// textOf returns the text of a message content or a function call output:
// a string, or a list of parts with "text".
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if p.Text != "" {
				out = append(out, p.Text)
			}
		}
		return strings.Join(out, "\n")
	}
	return string(raw)
}

// latestUserTurn returns the text of the last input item that is a user
// message or a function call output; callID is set for the latter.
func latestUserTurn(items []inputItem) (text, callID string) {
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		switch {
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			return textOf(it.Output), it.CallID
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			return strings.TrimSpace(textOf(it.Content)), ""
		}
	}
	return "", ""
}

func (f *FakeAPI) serve(w http.ResponseWriter, r *http.Request) {
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
func (f *FakeAPI) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		return f.responses(w, r, body, rec)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		return clitest.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		return writeError(w, APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "Not found: " + r.URL.Path})
	}
}

func (f *FakeAPI) responses(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return writeError(w, APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "bad JSON: " + err.Error()})
	}
	prompt, callID := latestUserTurn(req.Input)
	rec.Prompt, rec.CallID = prompt, callID
	if req.Text != nil && req.Text.Format != nil && req.Text.Format.Type == "json_schema" {
		rec.Kind = KindTitle
		b, _ := json.Marshal(map[string]string{"title": Title})
		return f.reply(w, r, Step{Text: string(b)}, "")
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
	rs := f.pick(prompt, callID)
	st := rs.next()
	rec.Rule = rs.rule.Name
	var newCallID string
	if st.Err == nil && st.Tool != nil {
		f.nextID++
		newCallID = fmt.Sprintf("call_fake%06d", f.nextID)
		f.callRule[newCallID] = rs
	}
	f.mu.Unlock()

	if st.Err != nil {
		return f.writeError(w, *st.Err)
	}
	return f.reply(w, r, st, newCallID)
}

// pick chooses the rule for a main request. Called with f.mu held.
func (f *FakeAPI) pick(prompt, callID string) *ruleState {
	if rs, ok := f.callRule[callID]; ok {
		return rs
	}
	for _, rs := range f.rules {
		if rs.rule.Contains != "" && strings.Contains(prompt, rs.rule.Contains) {
			return rs
		}
	}
	return &f.def
}

// reply streams a response built from st: response.created, the message
// (output_item.added, output_text deltas, output_item.done), the function
// call, then response.completed.
func (f *FakeAPI) reply(w http.ResponseWriter, r *http.Request, st Step, callID string) int {
	text := st.Text
	if text == "" && st.Tool == nil {
		text = "OK."
	}
	f.mu.Lock()
	f.nextID++
	n := f.nextID
	f.mu.Unlock()
	respID := fmt.Sprintf("resp_fake%06d", n)
	msgID := fmt.Sprintf("msg_fake%06d", n)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("x-request-id", "req_"+respID)
	w.WriteHeader(http.StatusOK)
	s := clitest.SSE{W: w, Closed: f.http.Closed(), Gone: r.Context().Done()}
	event := func(data map[string]any) { s.Event(data["type"].(string), data) }
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "status": "in_progress"}})
	out := 0
	if text != "" {
		event(map[string]any{"type": "response.output_item.added", "output_index": out,
			"item": map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}})
		event(map[string]any{"type": "response.content_part.added", "output_index": out, "item_id": msgID, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": ""}})
		for _, chunk := range clitest.SplitChunks(text, st.Chunks) {
			if !s.Sleep(st.ChunkDelay) {
				return http.StatusOK
			}
			event(map[string]any{"type": "response.output_text.delta", "output_index": out, "item_id": msgID, "content_index": 0, "delta": chunk})
		}
		if st.Hang {
			s.Sleep(time.Hour)
			return http.StatusOK
		}
		event(map[string]any{"type": "response.output_item.done", "output_index": out,
			"item": map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}})
		out++
	}
	if st.Tool != nil {
		args := "{}"
		if len(st.Tool.Arguments) > 0 {
			args = string(st.Tool.Arguments)
		}
		itemID := fmt.Sprintf("fc_fake%06d", n)
		event(map[string]any{"type": "response.output_item.added", "output_index": out,
			"item": map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": st.Tool.Name, "arguments": "", "status": "in_progress"}})
		event(map[string]any{"type": "response.function_call_arguments.delta", "output_index": out, "item_id": itemID, "delta": args})
		event(map[string]any{"type": "response.output_item.done", "output_index": out,
			"item": map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": st.Tool.Name, "arguments": args, "status": "completed"}})
	}
	event(map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID, "status": "completed",
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": max(1, len(text)/4), "total_tokens": 1000 + max(1, len(text)/4),
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}},
	}})
	return http.StatusOK
}

func (f *FakeAPI) writeError(w http.ResponseWriter, e APIError) int {
	f.http.Sleep(e.Delay)
	return writeError(w, e)
}

func writeError(w http.ResponseWriter, e APIError) int {
	e.fill()
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("x-request-id", "req_fake_error")
	var code any
	if e.Code != "" {
		code = e.Code
	}
	body := map[string]any{"message": e.Message, "type": e.Type, "param": nil, "code": code}
	if !e.ResetsAt.IsZero() {
		body["resets_at"] = e.ResetsAt.Unix()
	}
	return clitest.WriteJSON(w, e.Status, map[string]any{"error": body})
}
