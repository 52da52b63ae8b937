package claudetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sseEvent is one server-sent event as the CLI would read it.
type sseEvent struct {
	Name string
	Data map[string]any
}

type testClient struct {
	t   *testing.T
	api *FakeAPI
	hc  *http.Client
}

func newTestClient(t *testing.T, rules ...Rule) *testClient {
	api := NewFakeAPI(t, rules...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &testClient{t: t, api: api, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// post sends a Messages API request and returns the response and its body.
func (c *testClient) post(path string, body any) (*http.Response, []byte) {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.hc.Post(c.api.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp, out
}

// stream sends a streaming request and parses the events.
func (c *testClient) stream(messages ...map[string]any) []sseEvent {
	c.t.Helper()
	resp, body := c.post("/v1/messages?beta=true", request(true, messages...))
	if resp.StatusCode != 200 {
		c.t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.t.Fatalf("Content-Type = %q", ct)
	}
	return parseSSE(c.t, body)
}

func request(stream bool, messages ...map[string]any) map[string]any {
	return map[string]any{
		"model":      "claude-test",
		"max_tokens": 1024,
		"stream":     stream,
		"messages":   messages,
		"tools":      []map[string]any{{"name": "Bash", "input_schema": map[string]any{"type": "object"}}},
	}
}

func userText(s string) map[string]any { return map[string]any{"role": "user", "content": s} }

func toolResult(id, text string, isErr bool) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{{
		"type": "tool_result", "tool_use_id": id, "is_error": isErr,
		"content": []map[string]any{{"type": "text", "text": text}},
	}}}
}

// parseSSE checks the framing (event line, data line, blank line) strictly.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		ev, ok := strings.CutPrefix(sc.Text(), "event: ")
		if !ok {
			t.Fatalf("want an event line, got %q", sc.Text())
		}
		if !sc.Scan() {
			t.Fatalf("event %s has no data line", ev)
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			t.Fatalf("want a data line, got %q", sc.Text())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %s: bad JSON %q: %v", ev, data, err)
		}
		if m["type"] != ev {
			t.Fatalf("event %s carries type %v", ev, m["type"])
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %s is not followed by a blank line", ev)
		}
		out = append(out, sseEvent{ev, m})
	}
	return out
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

// deltas concatenates the text_delta or input_json_delta payloads.
func deltas(evs []sseEvent, kind, field string) string {
	var b strings.Builder
	for _, e := range evs {
		if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == kind {
			b.WriteString(d[field].(string))
		}
	}
	return b.String()
}

func stopReason(evs []sseEvent) any {
	for _, e := range evs {
		if e.Name == "message_delta" {
			return e.Data["delta"].(map[string]any)["stop_reason"]
		}
	}
	return nil
}

func TestFakeAPIStreamsTextInChunks(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "slow", Steps: []Step{{Text: "héllo wörld, slowly", Chunks: 4, ChunkDelay: 10 * time.Millisecond}}})
	evs := c.stream(userText("answer slow please"))
	want := []string{"message_start", "content_block_start",
		"content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if got := deltas(evs, "text_delta", "text"); got != "héllo wörld, slowly" {
		t.Errorf("text = %q", got)
	}
	if got := stopReason(evs); got != "end_turn" {
		t.Errorf("stop_reason = %v", got)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if msg["model"] != "claude-test" || msg["role"] != "assistant" {
		t.Errorf("message_start = %v", msg)
	}
}

func TestFakeAPIRuleRunsAToolLoop(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "deploy", Steps: []Step{
		{Text: "Deploying.", Tool: Bash("make deploy", "Deploy")},
		{Text: "Done."},
	}})

	evs := c.stream(userText("please deploy"))
	if got := stopReason(evs); got != "tool_use" {
		t.Fatalf("stop_reason = %v", got)
	}
	var id string
	for _, e := range evs {
		if cb, ok := e.Data["content_block"].(map[string]any); ok && cb["type"] == "tool_use" {
			id, _ = cb["id"].(string)
			if cb["name"] != "Bash" {
				t.Errorf("tool name = %v", cb["name"])
			}
		}
	}
	if id == "" {
		t.Fatal("no tool_use block")
	}
	var input struct{ Command, Description string }
	if err := json.Unmarshal([]byte(deltas(evs, "input_json_delta", "partial_json")), &input); err != nil {
		t.Fatal(err)
	}
	if input.Command != "make deploy" {
		t.Errorf("input = %+v", input)
	}
	if got := deltas(evs, "text_delta", "text"); got != "Deploying." {
		t.Errorf("text = %q", got)
	}

	// The tool result carries no keyword, yet continues the rule.
	evs = c.stream(userText("please deploy"), map[string]any{"role": "assistant", "content": "…"},
		toolResult(id, "Exit code 2", true))
	if got := deltas(evs, "text_delta", "text"); got != "Done." {
		t.Errorf("after the tool result: text = %q", got)
	}
	// The last step repeats.
	evs = c.stream(userText("deploy again"))
	if got := deltas(evs, "text_delta", "text"); got != "Done." {
		t.Errorf("repeat: text = %q", got)
	}
	// Anything else gets the default.
	evs = c.stream(userText("hello"))
	if got := deltas(evs, "text_delta", "text"); got != "OK." {
		t.Errorf("default: text = %q", got)
	}

	var rules []string
	for _, r := range c.api.Requests() {
		rules = append(rules, r.Rule)
	}
	if want := []string{"deploy", "deploy", "deploy", ""}; !reflect.DeepEqual(rules, want) {
		t.Errorf("rules = %q, want %q", rules, want)
	}
	if got, want := c.api.MainPrompts(), []string{"please deploy", "Exit code 2", "deploy again", "hello"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MainPrompts = %q, want %q", got, want)
	}
}

// An EachPrompt rule plays its turn again for every prompt, and two turns
// under way at once each go on with their own steps.
func TestFakeAPIEachPromptRule(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "deploy", EachPrompt: true, Steps: []Step{
		{Text: "Deploying.", Tool: Bash("make deploy", "Deploy")},
		{Text: "Checking.", Tool: Bash("make check", "Check")},
		{Text: "Done."},
	}})
	toolUse := func(evs []sseEvent) (id, command string) {
		t.Helper()
		for _, e := range evs {
			if cb, ok := e.Data["content_block"].(map[string]any); ok && cb["type"] == "tool_use" {
				id, _ = cb["id"].(string)
			}
		}
		var in struct{ Command string }
		if id == "" || json.Unmarshal([]byte(deltas(evs, "input_json_delta", "partial_json")), &in) != nil {
			t.Fatalf("no tool_use in %v", names(evs))
		}
		return id, in.Command
	}
	a, cmd := toolUse(c.stream(userText("deploy from a")))
	if cmd != "make deploy" {
		t.Fatalf("a's first step runs %q", cmd)
	}
	// b asks while a's turn is under way: b starts from the first step.
	b, cmd := toolUse(c.stream(userText("deploy from b")))
	if cmd != "make deploy" {
		t.Fatalf("b's first step runs %q, want make deploy", cmd)
	}
	a, cmd = toolUse(c.stream(userText("deploy from a"), toolResult(a, "deployed", false)))
	if cmd != "make check" {
		t.Fatalf("a's second step runs %q", cmd)
	}
	if got := deltas(c.stream(userText("deploy from a"), toolResult(a, "checked", false)), "text_delta", "text"); got != "Done." {
		t.Errorf("a's last step = %q", got)
	}
	if _, cmd = toolUse(c.stream(userText("deploy from b"), toolResult(b, "deployed", false))); cmd != "make check" {
		t.Errorf("b's second step runs %q", cmd)
	}
	// Asked again once done, the rule plays its turn again.
	if _, cmd = toolUse(c.stream(userText("deploy again"))); cmd != "make deploy" {
		t.Errorf("asked again: %q, want make deploy", cmd)
	}
}

func TestFakeAPIStepRepeatAndErrors(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "flaky", Steps: []Step{
		{Err: &APIError{Status: 529}, Repeat: 2},
		{Text: "Recovered."},
	}})
	for i := range 2 {
		resp, body := c.post("/v1/messages", request(true, userText("flaky call")))
		if resp.StatusCode != 529 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != "error" || e.Error.Type != "overloaded_error" || e.Error.Message != "Overloaded" {
			t.Errorf("request %d: body %s", i, body)
		}
	}
	if got := deltas(c.stream(userText("flaky call")), "text_delta", "text"); got != "Recovered." {
		t.Errorf("text = %q", got)
	}
}

func TestFakeAPIFailNext(t *testing.T) {
	c := newTestClient(t)
	c.api.FailNext(5, ErrorStatus(500))
	c.api.FailNext(2, APIError{Status: 429, Header: http.Header{"Retry-After": {"7"}}}) // replaces the 500s
	for i := range 2 {
		resp, body := c.post("/v1/messages?beta=true", request(true, userText("hi")))
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("request %d: status %d, headers %v", i, resp.StatusCode, resp.Header)
		}
		if !strings.Contains(string(body), `"rate_limit_error"`) {
			t.Errorf("request %d: body %s", i, body)
		}
	}
	if got := deltas(c.stream(userText("hi")), "text_delta", "text"); got != "OK." {
		t.Errorf("after the failures: text = %q", got)
	}
}

func TestFakeAPINonStreaming(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "run", Steps: []Step{{Text: "Running.", Tool: Bash("ls", "")}}})
	resp, body := c.post("/v1/messages", request(false, userText("run ls")))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var m struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, ID, Name string
			Input                map[string]string
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.StopReason != "tool_use" || len(m.Content) != 2 || m.Content[0].Text != "Running." ||
		m.Content[1].Name != "Bash" || m.Content[1].Input["command"] != "ls" || m.Content[1].ID == "" {
		t.Errorf("message = %s", body)
	}
}

func TestFakeAPISideRequestsKeepRuleSteps(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "Tasks", Steps: []Step{{Text: "first"}, {Text: "second"}}})

	// A call without tools is auxiliary.
	aux := request(false, userText("Tasks: give this session a title"))
	delete(aux, "tools")
	if _, body := c.post("/v1/messages", aux); !strings.Contains(string(body), AuxText) {
		t.Errorf("aux answer = %s", body)
	}
	// Compaction mentions "Pending Tasks" but must not match the rule.
	c.api.SetCompactReply(Step{Text: "<summary>short</summary>"})
	evs := c.stream(userText("Your task is to create a detailed summary of the conversation so far.\n7. Pending Tasks"))
	if got := deltas(evs, "text_delta", "text"); got != "<summary>short</summary>" {
		t.Errorf("compact answer = %q", got)
	}
	if got := deltas(c.stream(userText("Tasks please")), "text_delta", "text"); got != "first" {
		t.Errorf("rule answer = %q, want the rule's first step", got)
	}
	var kinds []RequestKind
	for _, r := range c.api.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if want := []RequestKind{KindAux, KindCompact, KindMain}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
}

func TestFakeAPIOtherEndpoints(t *testing.T) {
	c := newTestClient(t)
	resp, body := c.post("/v1/messages/count_tokens", request(false, userText("x")))
	if resp.StatusCode != 200 || !strings.Contains(string(body), "input_tokens") {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, body)
	}
	resp, body = c.post("/api/unknown", map[string]any{})
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"not_found_error"`) {
		t.Errorf("unknown path: %d %s", resp.StatusCode, body)
	}
	reqs := c.api.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/api/unknown" || reqs[1].Kind != KindOther || reqs[1].Status != 404 {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestFakeAPICloseCutsSlowStreams(t *testing.T) {
	c := newTestClient(t, Rule{Contains: "slow", Steps: []Step{{Text: "very slow text", Chunks: 10, ChunkDelay: time.Hour}}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.hc.Post(c.api.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"slow"}]}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for len(c.api.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	c.api.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a slow stream")
	}
}
