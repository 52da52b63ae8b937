package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// FakeAPI is a scripted stand-in for the OpenAI Chat Completions API, served
// on 127.0.0.1 at a random port; the CLIs reach it at URL + "/v1".
//
// Every main request (a POST /v1/chat/completions of the conversation: it
// offers the CLI's question tool, see questionTools) is
// answered, in order of precedence, by a pending FailNext error, by the rule
// that issued the tool call whose result the request carries, by the first
// Rule whose Contains occurs in the latest user turn, or by the default
// steps ("OK."). Side requests (titles, summaries) get a short title and
// never consume a rule's steps. Every request is recorded.
type FakeAPI struct {
	// URL is the base URL, e.g. "http://127.0.0.1:40123", without "/v1".
	URL string

	http *clitest.HTTPFake[Request]

	mu       sync.Mutex
	rules    []*ruleState
	def      ruleState
	failNext []APIError
	callRule map[string]*ruleState // tool call id -> the rule that issued it
	nextID   int
}

// Rule scripts the fake's answers to prompts that contain a keyword.
type Rule struct {
	// Name identifies the rule in recorded Requests; Contains is used when empty.
	Name string
	// Contains selects the rule: a substring of the latest user turn.
	Contains string
	// Steps are served one per matching main request, in order; the last
	// repeats. A request carrying the result of a tool call this rule issued
	// also matches it, so [tool call, final text] is a whole tool loop.
	Steps []Step
}

// Step is one scripted answer: an HTTP error, or an assistant message made
// of optional text followed by an optional tool call.
type Step struct {
	// Text is the assistant's text. Empty with a nil Tool means "OK.".
	Text string
	// Chunks splits Text into this many deltas (at least 1), each preceded
	// by ChunkDelay: a slow stream keeps the CLI busy.
	Chunks     int
	ChunkDelay time.Duration
	// Tool, when set, follows the text as a tool call.
	Tool *ToolCall
	// Err, when set, answers with this HTTP error instead.
	Err *APIError
	// Hang keeps the stream open after the text, never finishing it, until
	// the fake closes or the CLI goes away.
	Hang bool
	// Repeat serves the step this many times (0 and 1 mean once).
	Repeat int
}

// ToolCall is a function tool call; Args must marshal to a JSON object.
type ToolCall struct {
	Name string
	Args any
}

// APIError is an error answer in the OpenAI API's shape:
// {"error":{"message":Message,"type":Type,"code":Code}}.
type APIError struct {
	Status  int // HTTP status: 500, 429, 401...
	Type    string
	Code    string
	Message string
	// Header is added to the response, e.g. "retry-after".
	Header http.Header
}

// RequestKind tells the CLIs' requests apart.
type RequestKind string

const (
	// KindMain is a turn of the conversation.
	KindMain RequestKind = "main"
	// KindSide is a request of the CLI's own (a title, a summary).
	KindSide RequestKind = "side"
	// KindOther is any other request (model listing...).
	KindOther RequestKind = "other"
)

// Title answers side requests.
const Title = "Fake task"

// Request is one request the fake received.
type Request struct {
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Kind   RequestKind
	// Prompt is the latest user turn: the text of the last user message, or
	// the result of the tool call the last message carries (CallID names it).
	Prompt string
	CallID string
	// Tools are the names of the tools the request offered.
	Tools []string
	// Rule names the rule that answered a main request: "" for the default
	// steps, "FailNext" for an injected failure.
	Rule   string
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
	f.http = clitest.NewHTTPFake[Request](t, "fake Chat Completions API", http.HandlerFunc(f.serve), f.Summary)
	f.URL = f.http.URL
	return f
}

// Summary lists the requests received, one a line, for failure messages.
func (f *FakeAPI) Summary() string {
	return clitest.Summary(f.Requests(), func(r Request) clitest.RequestLine {
		return clitest.RequestLine{Time: r.Time, Method: r.Method, Path: r.Path, Status: r.Status, Kind: string(r.Kind), Rule: r.Rule, Prompt: r.Prompt}
	})
}

// AddRule appends a rule; earlier rules win when several match.
func (f *FakeAPI) AddRule(r Rule) {
	if r.Name == "" {
		r.Name = r.Contains
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &ruleState{rule: r})
}

// FailNext makes the next n main requests fail with e before any rule is
// consulted; the CLI's retries count. It replaces failures still pending,
// so FailNext(0, APIError{}) cancels them.
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

// MainPrompts returns the latest user turn of every main request.
func (f *FakeAPI) MainPrompts() []string {
	var out []string
	for _, r := range f.Requests() {
		if r.Kind == KindMain {
			out = append(out, r.Prompt)
		}
	}
	return out
}

// Told reports whether a main request's latest user turn contained s:
// what the CLI told the model (a command's output, a refusal's message).
func (f *FakeAPI) Told(s string) bool { return f.CountMain(s) > 0 }

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
	step int
	used int
}

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

// ErrorStatus returns the usual OpenAI error for an HTTP status.
func ErrorStatus(status int) APIError {
	e := APIError{Status: status}
	e.fill()
	return e
}

// UsageLimit is OpenAI's answer when a daily allowance is spent: a 429
// whose message names the wait ("Rate limit reached for fake-model in
// organization org-fake on requests per day (RPD): Limit 200, Used 200,
// Requested 1. Please try again in 1h0m0s."), with the wait in its
// Retry-After and x-ratelimit-reset-requests headers.
func UsageLimit(wait time.Duration) APIError {
	secs := int(wait.Round(time.Second) / time.Second)
	return APIError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded",
		Message: fmt.Sprintf("Rate limit reached for %s in organization org-fake on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in %s.",
			Model, wait.Round(time.Second)),
		Header: http.Header{"Retry-After": {fmt.Sprint(secs)}, "X-Ratelimit-Limit-Requests": {"200"},
			"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {wait.Round(time.Second).String()}}}
}

// QuotaExceeded is OpenAI's answer when the account's quota is spent, which
// names no reset: "You exceeded your current quota, please check your plan
// and billing details."
func QuotaExceeded() APIError {
	return APIError{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota",
		Message: "You exceeded your current quota, please check your plan and billing details."}
}

// QuotaResets is a 429 whose message names when the quota resets, in the
// words Qwen Code looks for ("quota", "exhausted", "will reset"): "Quota
// exceeded: your daily quota has been exhausted and will reset at
// 2026-11-30 00:00:00 UTC."
func QuotaResets(at time.Time) APIError {
	return APIError{Status: http.StatusTooManyRequests, Type: "insufficient_quota", Code: "insufficient_quota",
		Message: "Quota exceeded: your daily quota has been exhausted and will reset at " + at.UTC().Format("2006-01-02 15:04:05") + " UTC."}
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
	default:
		e.Type = "server_error"
		e.Message = "The server had an error while processing your request. Sorry about that!"
	}
}

type chatRequest struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
}

// textOf returns the text of a message's content: a string, or parts with
// "text".
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

// latestUserTurn is the last message's text when it is a tool result (with
// its call id), else the last user message's.
func latestUserTurn(msgs []message) (text, callID string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch m := msgs[i]; m.Role {
		case "tool":
			return textOf(m.Content), m.ToolCallID
		case "user":
			return strings.TrimSpace(textOf(m.Content)), ""
		}
	}
	return "", ""
}

func (f *FakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Kind: KindOther}
	f.http.Answer(w, &rec, func(w http.ResponseWriter) { rec.Status = f.route(w, r, body, &rec) })
}

func (f *FakeAPI) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		return f.chat(w, r, body, rec)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		return clitest.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": Model, "object": "model", "created": 1700000000, "owned_by": "fake"},
		}})
	default:
		return writeError(w, APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Message: "Not found: " + r.URL.Path})
	}
}

// questionTools are the CLIs' tools that ask the user a question: the
// requests of a conversation offer one (opencode's question, Qwen Code's
// ask_user_question, Cline's ask_question, Copilot's ask_user); side
// requests (titles, Qwen Code's memory extraction) offer none.
var questionTools = []string{"question", "ask_user_question", "ask_question", "ask_user"}

// Model is the model the fake serves.
const Model = "fake-model"

func (f *FakeAPI) chat(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return writeError(w, APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "bad JSON: " + err.Error()})
	}
	rec.Prompt, rec.CallID = latestUserTurn(req.Messages)
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	if !slices.ContainsFunc(rec.Tools, func(name string) bool { return slices.Contains(questionTools, name) }) {
		rec.Kind = KindSide
		return f.reply(w, r, req.Stream, Step{Text: Title}, "")
	}
	rec.Kind = KindMain
	f.mu.Lock()
	if len(f.failNext) > 0 {
		e := f.failNext[0]
		f.failNext = f.failNext[1:]
		f.mu.Unlock()
		rec.Rule = "FailNext"
		return writeError(w, e)
	}
	rs := f.pick(rec.Prompt, rec.CallID)
	st := rs.next()
	rec.Rule = rs.rule.Name
	var callID string
	if st.Err == nil && st.Tool != nil {
		f.nextID++
		callID = fmt.Sprintf("call_fake%06d", f.nextID)
		f.callRule[callID] = rs
	}
	f.mu.Unlock()
	if st.Err != nil {
		return writeError(w, *st.Err)
	}
	return f.reply(w, r, req.Stream, st, callID)
}

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

// reply answers with st: streamed as chat.completion.chunk events ending
// in [DONE], or as one chat.completion when the CLI did not ask to stream.
func (f *FakeAPI) reply(w http.ResponseWriter, r *http.Request, stream bool, st Step, callID string) int {
	text := st.Text
	if text == "" && st.Tool == nil {
		text = "OK."
	}
	var args string
	if st.Tool != nil {
		b, err := json.Marshal(st.Tool.Args)
		if err != nil {
			return writeError(w, APIError{Status: 500, Message: err.Error()})
		}
		args = string(b)
	}
	f.mu.Lock()
	f.nextID++
	id := fmt.Sprintf("chatcmpl-fake%06d", f.nextID)
	f.mu.Unlock()
	finish := "stop"
	if st.Tool != nil {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 1000, "completion_tokens": max(1, len(text)/4), "total_tokens": 1000 + max(1, len(text)/4)}
	if !stream {
		msg := map[string]any{"role": "assistant", "content": text}
		if st.Tool != nil {
			msg["tool_calls"] = []any{map[string]any{"id": callID, "type": "function", "function": map[string]any{"name": st.Tool.Name, "arguments": args}}}
		}
		return clitest.WriteJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage,
		})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := clitest.SSE{W: w, Closed: f.http.Closed(), Gone: r.Context().Done()}
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if text != "" {
		for _, c := range clitest.SplitChunks(text, st.Chunks) {
			if !s.Sleep(st.ChunkDelay) {
				return http.StatusOK
			}
			chunk(map[string]any{"content": c}, nil, nil)
		}
	}
	if st.Hang {
		s.Sleep(time.Hour)
		return http.StatusOK
	}
	if st.Tool != nil {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": st.Tool.Name, "arguments": args}}}}, nil, nil)
	}
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	return http.StatusOK
}

func writeError(w http.ResponseWriter, e APIError) int {
	e.fill()
	for k, vs := range e.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	var code any
	if e.Code != "" {
		code = e.Code
	}
	return clitest.WriteJSON(w, e.Status, map[string]any{
		"error": map[string]any{"message": e.Message, "type": e.Type, "param": nil, "code": code},
	})
}
