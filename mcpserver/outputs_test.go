package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

// outputChecks caches each client's compiled output schemas, and counts
// the results validated per tool.
var outputChecks = struct {
	sync.Mutex
	schemas map[*client.Client]map[string]*jsonschema.Schema
	checked map[string]int
}{schemas: map[*client.Client]map[string]*jsonschema.Schema{}, checked: map[string]int{}}

// checkOutput validates a successful result against the output schema the
// server declares for tool (as the client lists it): its structured
// content, and its text, which is the same JSON.
func checkOutput(t *testing.T, c *client.Client, tool string, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		return
	}
	sch := outputSchemaOf(t, c, tool)
	if sch == nil {
		t.Errorf("%s declares no outputSchema but answers structured content", tool)
		return
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	for what, doc := range map[string][]byte{"structured content": raw, "text": []byte(text(res))} {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			t.Errorf("%s %s is not JSON: %v", tool, what, err)
			continue
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s %s does not match its outputSchema: %v\n%s", tool, what, err, doc)
		}
	}
	outputChecks.Lock()
	outputChecks.checked[tool]++
	outputChecks.Unlock()
}

func outputSchemaOf(t *testing.T, c *client.Client, tool string) *jsonschema.Schema {
	t.Helper()
	outputChecks.Lock()
	defer outputChecks.Unlock()
	if m, ok := outputChecks.schemas[c]; ok {
		return m[tool]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	m := map[string]*jsonschema.Schema{}
	for _, tl := range list.Tools {
		if tl.OutputSchema.Type == "" {
			continue
		}
		doc, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		comp := jsonschema.NewCompiler()
		url := "mem:///" + tl.Name + ".json"
		if err := comp.AddResource(url, v); err != nil {
			t.Fatal(err)
		}
		sch, err := comp.Compile(url)
		if err != nil {
			t.Fatalf("%s outputSchema does not compile: %v", tl.Name, err)
		}
		m[tl.Name] = sch
	}
	outputChecks.schemas[c] = m
	return m[tool]
}

// TestOutputSchemas: every tool declares an outputSchema (all answer a
// JSON object), and one call of each, with arguments that succeed against
// the fixture, answers what its schema says. The other tests validate
// every result they see the same way (see call).
func TestOutputSchemas(t *testing.T) {
	f := fixture(t)
	raise(t, f, "%1", "orch-auth", "awaiting_input")
	lc := &facadetest.Orchestrators{}
	lc.SetStop(api.StopResult{Status: "stopped", Session: "orch-db"})
	lc.SetFinish(api.FinishResult{Name: "db", Branch: "db", Base: "main", Steps: []string{"diff"}})
	s := newServer(t, f, Options{}, backend.Parts{Learn: learnStore(t), Coach: coachFixture(t, f), Orchestrators: lc})
	for _, d := range s.AllTools() {
		if d.Tool.OutputSchema.Type != "object" || len(d.Tool.OutputSchema.Properties) == 0 {
			t.Errorf("%s declares no outputSchema", d.Tool.Name)
		}
	}
	c := inProcess(t, s, "schemas")
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"status", nil},
		{"list_sessions", map[string]any{"include_shells": true}},
		{"get_session", map[string]any{"session": "orch-auth"}},
		{"list_wakes", map[string]any{"include_acked": true}},
		{"list_tasks", nil},
		{"list_tasks", map[string]any{"list": "PRD-AUTH"}},
		{"wait_for_wake", map[string]any{"max_wait_seconds": 0}},
		{"capability_check", nil},
		{"reflect", map[string]any{"query": "fix the login tests"}},
		{"query_pattern_history", nil},
		{"inject_guidance", map[string]any{"session": "orch-db", "message": "rebase on main"}},
		{"answer_prompt", map[string]any{"session": "orch-auth", "answer": "1"}},
		{"interrupt", map[string]any{"session": "orch-db"}},
		{"link_task_list", map[string]any{"session": "orch-db", "task_list": "PRD-AUTH"}},
		{"stop_orchestrator", map[string]any{"name": "orch-db"}},
		{"spawn_orchestrator", map[string]any{"initiative": "auth", "goal": "Add login", "repo": "/repo"}},
		{"report_outcome", map[string]any{"initiative": "add login", "outcome": "success", "reasoning_path": testReasoning, "domain": "auth"}},
		{"request_intervention", map[string]any{"session": "orch-db", "pattern": "formatter_loop", "send": false}},
		{"report_intervention", map[string]any{"pattern_id": "formatter_loop", "intervention_id": "run-the-formatter", "worked": true}},
		{"ack_wake", map[string]any{"all": true}},
		{"restore_orchestrators", map[string]any{"names": []string{"db"}}},
		{"finish_orchestrator", map[string]any{"name": "db"}},
	}
	for _, cl := range calls {
		res, err := callErr(c, cl.tool, cl.args)
		if err != nil || res.IsError {
			t.Errorf("%s %v: %v %s", cl.tool, cl.args, err, text(res))
			continue
		}
		checkOutput(t, c, cl.tool, res)
	}
	outputChecks.Lock()
	defer outputChecks.Unlock()
	for _, d := range s.AllTools() {
		if outputChecks.checked[d.Tool.Name] == 0 {
			t.Errorf("no result of %s was checked against its schema", d.Tool.Name)
		}
	}
}
