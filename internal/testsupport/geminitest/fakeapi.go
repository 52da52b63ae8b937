package geminitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/clitest"
)

// FakeAPI is a scripted stand-in for the Gemini API (generativelanguage,
// v1beta), served on 127.0.0.1 at a random port. Point the CLI at URL with
// GOOGLE_GEMINI_BASE_URL.
//
// Every main conversation request (streamGenerateContent with tools) is
// answered, in order of precedence, by a pending FailNext error, by the rule
// whose function call the request answers, by the first Rule whose Contains
// occurs in the latest user turn, or by the default steps ("OK."). Side
// requests (the model router's and other generateContent calls asking for
// JSON, countTokens) get answers of their own and never consume a rule's
// steps. Every request is recorded.
type FakeAPI struct {
	// URL is the base URL, e.g. "http://127.0.0.1:40123", without a trailing slash.
	URL string

	http *clitest.HTTPFake[Request]

	mu       sync.Mutex
	rules    []*ruleState
	def      ruleState
	failNext []APIError
	callRule map[string]*ruleState // function name+args -> the rule that issued it
}

// Rule scripts the fake's answers to prompts that contain a keyword.
type Rule struct {
	// Name identifies the rule in recorded Requests; Contains is used when empty.
	Name string
	// Contains selects the rule: a substring of the latest user turn.
	Contains string
	// Steps are served one per matching main request, in order; the last
	// repeats. A request that carries the response to a function call this
	// rule issued also matches the rule: [call, final text] is a tool loop.
	Steps []Step
}

// Step is one scripted answer to a main request: an HTTP error, or a model
// turn made of optional text followed by an optional function call.
type Step struct {
	// Text is the model's text. Empty with a nil Call means "OK.".
	Text string
	// Chunks splits Text into this many SSE events (at least 1), each
	// preceded by ChunkDelay: a slow stream keeps the CLI busy.
	Chunks     int
	ChunkDelay time.Duration
	// Call, when set, follows the text as a functionCall part.
	Call *FunctionCall
	// Err, when set, answers with this HTTP error instead.
	Err *APIError
	// Repeat serves the step this many times (0 and 1 mean once).
	Repeat int
}

// FunctionCall is a functionCall part; Args must marshal to a JSON object.
type FunctionCall struct {
	Name string
	Args any
}

// APIError is an error answer in Google's shape:
// {"error":{"code":Status,"message":Message,"status":Reason}}.
type APIError struct {
	Status  int    // HTTP status: 500, 429, 400...
	Reason  string // google.rpc status, e.g. "INTERNAL"; filled from Status when empty
	Message string
	// Details is the error's "details" array, e.g. the ErrorInfo of a bad key.
	Details []any
	// Delay holds the answer back, like a slow upstream.
	Delay time.Duration
}

// RequestKind tells main conversation requests from the rest.
type RequestKind string

const (
	// KindMain is a streamGenerateContent request for the next model turn.
	KindMain RequestKind = "main"
	// KindSide is a generateContent call (the model router, checks) answered
	// with JSON fitting its schema; it never consumes rule steps.
	KindSide RequestKind = "side"
	// KindCount is a countTokens call.
	KindCount RequestKind = "count"
	// KindOther is any other endpoint, answered 404.
	KindOther RequestKind = "other"
)

// Request is one request the fake received.
type Request struct {
	Time   time.Time
	Method string
	Path   string // URL path, e.g. /v1beta/models/gemini-x:streamGenerateContent
	Query  string
	Header http.Header
	Body   []byte
	Kind   RequestKind
	// Prompt is the text of the latest user turn, or the function
	// responses it carries as "name: {json}".
	Prompt string
	// Rule names the rule that answered a main request ("" for the default
	// steps, "FailNext" for an injected failure).
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
	f.http = clitest.NewHTTPFake[Request](t, "fake Gemini API", http.HandlerFunc(f.serve), f.Summary)
	f.URL = f.http.URL
	return f
}

// UnreachableURL returns a 127.0.0.1 URL where nothing listens.
func UnreachableURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// Summary lists the requests received, one line each.
func (f *FakeAPI) Summary() string {
	return clitest.Summary(f.Requests(), func(r Request) clitest.RequestLine {
		return clitest.RequestLine{Time: r.Time, Method: r.Method, Path: r.Path, Status: r.Status, Kind: string(r.Kind), Rule: r.Rule, Prompt: r.Prompt}
	})
}

// Close stops the server, cutting off streams still being sent.
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

// SetDefault sets the steps served when no rule matches (initially "OK.").
func (f *FakeAPI) SetDefault(steps ...Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = ruleState{rule: Rule{Steps: steps}}
}

// FailNext makes the next n main requests fail with e before any rule is
// consulted; the CLI's retries count. It replaces pending failures, so
// FailNext(0, APIError{}) cancels them.
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

// MainPrompts returns the Prompt of every main request, oldest first.
func (f *FakeAPI) MainPrompts() []string {
	var out []string
	for _, r := range f.Requests() {
		if r.Kind == KindMain {
			out = append(out, r.Prompt)
		}
	}
	return out
}

// CountMain returns how many main requests were received.
func (f *FakeAPI) CountMain() int { return len(f.MainPrompts()) }

// ErrorStatus returns the error the real API gives for status: 500
// INTERNAL, 503 UNAVAILABLE, 429 RESOURCE_EXHAUSTED, 400 INVALID_ARGUMENT
// with the API_KEY_INVALID reason (the real answer to a bad key), 401
// UNAUTHENTICATED, 403 PERMISSION_DENIED.
func ErrorStatus(status int) APIError {
	switch status {
	case 400:
		return APIError{Status: 400, Reason: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key.",
			Details: []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}}}
	case 401:
		return APIError{Status: 401, Reason: "UNAUTHENTICATED", Message: "Request had invalid authentication credentials."}
	case 403:
		return APIError{Status: 403, Reason: "PERMISSION_DENIED", Message: "Permission denied."}
	case 429:
		return APIError{Status: 429, Reason: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}
	case 503:
		return APIError{Status: 503, Reason: "UNAVAILABLE", Message: "The model is overloaded. Please try again later."}
	}
	return APIError{Status: status, Reason: "INTERNAL", Message: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"}
}

// QuotaRetry is a spent quota whose answer says when to try again: 429
// RESOURCE_EXHAUSTED with a RetryInfo of retry ("3600s"). Beyond five
// minutes the CLI gives up retrying and shows its usage-limit dialog, with
// when access resets.
func QuotaRetry(retry time.Duration) APIError {
	e := ErrorStatus(429)
	e.Details = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", int(retry/time.Second))}}
	return e
}

// DailyQuota is the free tier's answer once its requests per day are
// spent: 429 RESOURCE_EXHAUSTED with a QuotaFailure naming the per-day
// quota (and a RetryInfo, which the CLI does not read then): it shows its
// usage-limit dialog without a reset.
func DailyQuota() APIError {
	return APIError{Status: 429, Reason: "RESOURCE_EXHAUSTED",
		Message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
		Details: []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43200s"},
		}}
}

type ruleState struct {
	rule Rule
	step int // index into rule.Steps
	rep  int // times the current step was served
}

func (s *ruleState) next() Step {
	if len(s.rule.Steps) == 0 {
		return Step{}
	}
	if s.step >= len(s.rule.Steps) {
		return s.rule.Steps[len(s.rule.Steps)-1]
	}
	st := s.rule.Steps[s.step]
	s.rep++
	if s.rep >= max(st.Repeat, 1) {
		s.step, s.rep = s.step+1, 0
	}
	return st
}

// The request shapes the fake reads.
type genRequest struct {
	Contents         []genContent    `json:"contents"`
	Tools            json.RawMessage `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

type genContent struct {
	Role  string    `json:"role"`
	Parts []genPart `json:"parts"`
}

type genPart struct {
	Text         string `json:"text,omitempty"`
	Thought      bool   `json:"thought,omitempty"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

// latest returns the latest user turn's text, and the keys of the function
// calls whose responses it carries.
func latest(cs []genContent) (text string, answered []string) {
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		if c.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				texts = append(texts, p.FunctionResponse.Name+": "+string(p.FunctionResponse.Response))
			case p.Text != "":
				texts = append(texts, p.Text)
			}
		}
		// The model's own function calls are just before the responses.
		if i > 0 && cs[i-1].Role == "model" {
			for _, p := range cs[i-1].Parts {
				if p.FunctionCall != nil {
					answered = append(answered, callKey(p.FunctionCall.Name, p.FunctionCall.Args))
				}
			}
		}
		return strings.Join(texts, "\n"), answered
	}
	return "", nil
}

func callKey(name string, args json.RawMessage) string {
	var v any
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			return name + string(b)
		}
	}
	return name + string(args)
}

func (f *FakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	f.http.Answer(w, &rec, func(w http.ResponseWriter) { rec.Status = f.route(w, r, body, &rec) })
}

func (f *FakeAPI) route(w http.ResponseWriter, r *http.Request, body []byte, rec *Request) int {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":streamGenerateContent"):
		rec.Kind = KindMain
		return f.main(w, body, rec)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":generateContent"):
		rec.Kind = KindSide
		return f.side(w, body, rec)
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":countTokens"):
		rec.Kind = KindCount
		return clitest.WriteJSON(w, 200, map[string]any{"totalTokens": 1 + len(body)/4})
	}
	rec.Kind = KindOther
	return f.writeError(w, APIError{Status: 404, Reason: "NOT_FOUND", Message: "fake Gemini API: no such endpoint " + path})
}

func (f *FakeAPI) main(w http.ResponseWriter, body []byte, rec *Request) int {
	var req genRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return f.writeError(w, APIError{Status: 400, Reason: "INVALID_ARGUMENT", Message: "fake Gemini API: bad JSON: " + err.Error()})
	}
	prompt, answered := latest(req.Contents)
	rec.Prompt = prompt
	f.mu.Lock()
	if len(f.failNext) > 0 {
		e := f.failNext[0]
		f.failNext = f.failNext[1:]
		f.mu.Unlock()
		rec.Rule = "FailNext"
		return f.writeError(w, e)
	}
	rs := f.pick(prompt, answered)
	st := rs.next()
	rec.Rule = rs.rule.Name
	if st.Call != nil {
		args, _ := json.Marshal(st.Call.Args)
		f.callRule[callKey(st.Call.Name, args)] = rs
	}
	f.mu.Unlock()
	if st.Err != nil {
		return f.writeError(w, *st.Err)
	}
	return f.stream(w, st)
}

// pick returns the rule for a request; f.mu is held.
func (f *FakeAPI) pick(prompt string, answered []string) *ruleState {
	for _, k := range answered {
		if rs, ok := f.callRule[k]; ok {
			return rs
		}
	}
	for _, rs := range f.rules {
		if rs.rule.Contains != "" && strings.Contains(prompt, rs.rule.Contains) {
			return rs
		}
	}
	return &f.def
}

func usage(out int) map[string]any {
	return map[string]any{"promptTokenCount": 100, "candidatesTokenCount": out, "totalTokenCount": 100 + out}
}

const modelVersion = "gemini-fake"

// stream answers with SSE: the text in chunks, then the function call, the
// last event carrying finishReason STOP.
func (f *FakeAPI) stream(w http.ResponseWriter, st Step) int {
	text := st.Text
	if text == "" && st.Call == nil {
		text = "OK."
	}
	var chunks []string
	if text != "" {
		chunks = clitest.SplitChunks(text, st.Chunks)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	event := func(parts []map[string]any, last bool) {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if last {
			cand["finishReason"] = "STOP"
		}
		b, _ := json.Marshal(map[string]any{"candidates": []any{cand}, "usageMetadata": usage(len(text) / 4), "modelVersion": modelVersion})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	for i, c := range chunks {
		if st.ChunkDelay > 0 && !f.http.Sleep(st.ChunkDelay) {
			return 200
		}
		event([]map[string]any{{"text": c}}, i == len(chunks)-1 && st.Call == nil)
	}
	if st.Call != nil {
		event([]map[string]any{{"functionCall": map[string]any{"name": st.Call.Name, "args": st.Call.Args}}}, true)
	}
	return 200
}

// side answers a generateContent call: JSON fitting the requested schema
// (the model router gets a low complexity score, so it picks its flash
// model), or "OK." when no JSON is asked for.
func (f *FakeAPI) side(w http.ResponseWriter, body []byte, rec *Request) int {
	var req genRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return f.writeError(w, APIError{Status: 400, Reason: "INVALID_ARGUMENT", Message: "fake Gemini API: bad JSON: " + err.Error()})
	}
	rec.Prompt, _ = latest(req.Contents)
	text := "OK."
	schema := req.GenerationConfig.ResponseJSONSchema
	if len(schema) == 0 {
		schema = req.GenerationConfig.ResponseSchema
	}
	if len(schema) > 0 || req.GenerationConfig.ResponseMimeType == "application/json" {
		var s jsonSchema
		_ = json.Unmarshal(schema, &s)
		b, _ := json.Marshal(s.example())
		text = string(b)
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}
	return clitest.WriteJSON(w, 200, map[string]any{"candidates": []any{cand}, "usageMetadata": usage(len(text) / 4), "modelVersion": modelVersion})
}

// jsonSchema is the part of a JSON schema the fake fills in.
type jsonSchema struct {
	Type       string                `json:"type"`
	Properties map[string]jsonSchema `json:"properties"`
	Items      *jsonSchema           `json:"items"`
	Enum       []any                 `json:"enum"`
}

// example returns a value of the schema: the first enum value, a low
// number (a complexity score of 10 routes to the small model), false, "fake".
func (s jsonSchema) example() any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	switch strings.ToLower(s.Type) {
	case "object", "":
		o := map[string]any{}
		for k, p := range s.Properties {
			o[k] = p.example()
		}
		return o
	case "array":
		if s.Items != nil {
			return []any{s.Items.example()}
		}
		return []any{}
	case "integer", "number":
		return 10
	case "boolean":
		return false
	}
	return "fake"
}

func (f *FakeAPI) writeError(w http.ResponseWriter, e APIError) int {
	if e.Reason == "" {
		e.Reason = ErrorStatus(e.Status).Reason
	}
	if e.Message == "" {
		e.Message = ErrorStatus(e.Status).Message
	}
	if e.Delay > 0 && !f.http.Sleep(e.Delay) {
		return e.Status
	}
	body := map[string]any{"code": e.Status, "message": e.Message, "status": e.Reason}
	if e.Details != nil {
		body["details"] = e.Details
	}
	return clitest.WriteJSON(w, e.Status, map[string]any{"error": body})
}
