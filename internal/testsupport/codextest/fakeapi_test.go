package codextest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// post sends a Responses API request and returns the status and the SSE
// events' data, decoded.
func post(t *testing.T, f *FakeAPI, body string) (int, []map[string]any) {
	t.Helper()
	resp, err := http.Post(f.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("bad event %q: %v", data, err)
			}
			events = append(events, ev)
		}
	}
	return resp.StatusCode, events
}

func types(events []map[string]any) string {
	var out []string
	for _, e := range events {
		out = append(out, e["type"].(string))
	}
	return strings.Join(out, ",")
}

const userTurn = `{"model":"m","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[` +
	`{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},` +
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"deploy-now please"}]}]}`

func TestFakeAPIToolLoop(t *testing.T) {
	f := NewFakeAPI(t, Rule{Contains: "deploy-now", Steps: []Step{
		{Text: "Running it.", Chunks: 3, Tool: Exec("./deploy.sh", "Deploy?")},
		{Text: "Deployed."},
	}})
	status, events := post(t, f, userTurn)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := "response.created,response.output_item.added,response.content_part.added," +
		"response.output_text.delta,response.output_text.delta,response.output_text.delta,response.output_item.done," +
		"response.output_item.added,response.function_call_arguments.delta,response.output_item.done,response.completed"
	if got := types(events); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	call := events[9]["item"].(map[string]any)
	var args map[string]any
	if err := json.Unmarshal([]byte(call["arguments"].(string)), &args); err != nil {
		t.Fatal(err)
	}
	if call["type"] != "function_call" || call["name"] != "exec_command" || args["cmd"] != "./deploy.sh" || args["sandbox_permissions"] != "require_escalated" {
		t.Fatalf("call = %v", call)
	}
	if id := events[len(events)-1]["response"].(map[string]any)["id"]; id == "" {
		t.Fatal("response.completed without an id")
	}

	// The call's output goes to the rule that issued it, whatever it says.
	out := `{"model":"m","stream":true,"tools":[{}],"input":[{"type":"function_call","call_id":"` + call["call_id"].(string) +
		`"},{"type":"function_call_output","call_id":"` + call["call_id"].(string) + `","output":"deployed-ok"}]}`
	_, events = post(t, f, out)
	if done := events[len(events)-2]["item"].(map[string]any); done["content"].([]any)[0].(map[string]any)["text"] != "Deployed." {
		t.Fatalf("second step = %v", done)
	}
	reqs := f.Requests()
	if len(reqs) != 2 || reqs[0].Prompt != "deploy-now please" || reqs[0].Rule != "deploy-now" ||
		reqs[1].Prompt != "deployed-ok" || reqs[1].CallID != call["call_id"] || reqs[1].Kind != KindMain {
		t.Fatalf("requests = %+v", reqs)
	}
	if f.CountMain("deployed-ok") != 1 {
		t.Fatalf("CountMain = %d", f.CountMain("deployed-ok"))
	}
}

func TestFakeAPITitleAndFailures(t *testing.T) {
	f := NewFakeAPI(t)
	title := `{"model":"m","stream":true,"text":{"format":{"type":"json_schema"}},"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Generate a title"}]}]}`
	f.FailNext(2, ErrorStatus(429))
	_, events := post(t, f, title) // side requests never fail or consume
	if got := types(events); !strings.HasSuffix(got, "response.completed") {
		t.Fatalf("title events %s", got)
	}
	for _, want := range []int{429, 429, 200} {
		if status, _ := post(t, f, userTurn); status != want {
			t.Fatalf("status %d, want %d", status, want)
		}
	}
	reqs := f.Requests()
	if reqs[0].Kind != KindTitle || reqs[1].Rule != "FailNext" || reqs[3].Rule != "" {
		t.Fatalf("requests = %+v", reqs)
	}

	resp, err := http.Post(f.URL+"/v1/responses", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad JSON answered %d", resp.StatusCode)
	}
	for status, code := range map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded", 500: ""} {
		if e := ErrorStatus(status); e.Code != code || e.Message == "" {
			t.Errorf("ErrorStatus(%d) = %+v", status, e)
		}
	}
}
