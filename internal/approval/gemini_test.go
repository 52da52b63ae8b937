package approval

import (
	"encoding/json"
	"testing"
)

// gemini is a tool call as the Gemini CLI's BeforeTool hook delivers it.
func gemini(name string, input map[string]any) Request {
	in, _ := json.Marshal(input)
	return Request{Agent: "gemini", Session: "work", Cwd: "/w", Tool: name, Input: in}
}

// The Gemini CLI's tools take the names the policy knows them by, their
// inputs keep what the agent sent (a fetch gains the URLs of its prompt),
// and the rules written for Claude Code decide them.
func TestFromGemini(t *testing.T) {
	p := loadExample(t)
	tests := []struct {
		name           string
		req            Request
		server, tool   string
		wantTool, orig string
		summary        string
		want           Decision
		rule           string
	}{
		{"shell command allowed", gemini("run_shell_command", map[string]any{"command": "go test ./...", "description": "Run the tests", "dir_path": "pkg"}), "", "",
			"Bash", "run_shell_command", "go test ./...", Allow, "tests"},
		{"shell command denied by a part", gemini("run_shell_command", map[string]any{"command": "go vet ./... && rm -rf build"}), "", "",
			"Bash", "run_shell_command", "go vet ./... && rm -rf build", Deny, "no-rm-rf"},
		{"write inside the worktree", gemini("write_file", map[string]any{"file_path": "/w/main.go", "content": "package main"}), "", "",
			"Write", "write_file", "/w/main.go", Allow, "edit-inside"},
		{"edit outside", gemini("replace", map[string]any{"file_path": "/etc/hosts", "old_string": "a", "new_string": "b", "instruction": "x"}), "", "",
			"Edit", "replace", "/etc/hosts", Deny, "edit-outside"},
		{"a secret read", gemini("read_file", map[string]any{"file_path": "/w/.env"}), "", "",
			"Read", "read_file", "/w/.env", Deny, "secrets"},
		{"a fetch", gemini("web_fetch", map[string]any{"prompt": "Summarise https://go.dev/doc/effective_go please"}), "", "",
			"WebFetch", "web_fetch", "https://go.dev/doc/effective_go", Deny, "no-fetch"},
		{"a search", gemini("google_web_search", map[string]any{"query": "golang"}), "", "",
			"WebSearch", "google_web_search", `{"query":"golang"}`, Deny, "no-fetch"},
		{"an MCP tool", gemini("mcp_github_get_issue", map[string]any{"number": 7}), "github", "get_issue",
			"mcp__github__get_issue", "mcp_github_get_issue", `{"number":7}`, Allow, "github-read"},
		{"an MCP server with _ in its name", gemini("mcp_my_srv_list_x", map[string]any{}), "my_srv", "list_x",
			"mcp__my_srv__list_x", "mcp_my_srv_list_x", `{}`, None, ""},
		{"a tool the policy has no name for", gemini("activate_skill", map[string]any{"name": "pdf"}), "", "",
			"activate_skill", "", `{"name":"pdf"}`, None, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := FromGemini(tt.req, tt.server, tt.tool)
			if req.Tool != tt.wantTool || req.AgentTool != tt.orig || req.Summary() != tt.summary {
				t.Fatalf("FromGemini = tool %q (agent's %q), summary %q", req.Tool, req.AgentTool, req.Summary())
			}
			if v := p.Decide(req); v.Decision != tt.want || v.Rule != tt.rule {
				t.Fatalf("Decide = %+v, want %s by %q", v, tt.want, tt.rule)
			}
		})
	}
}

// A Gemini web_fetch may name several URLs in its prompt: each is
// decided, as the parts of a shell command are. A deny or an ask of one
// decides the fetch; it is allowed only when every URL is.
func TestGeminiFetchOfSeveralURLs(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`
rules:
  - id: docs
    hosts: ["go.dev", "*.go.dev"]
    decision: allow
  - id: mirrors
    hosts: ["proxy.golang.org"]
    decision: allow
  - id: evil
    hosts: ["evil.example"]
    decision: deny
    message: Not there.
  - id: ask-gh
    hosts: ["github.com"]
    decision: ask
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prompt string
		want   Decision
		rule   string
		why    string
	}{
		{"read https://go.dev/a and https://pkg.go.dev/b", Allow, "docs", ""},
		{"read https://go.dev/a and https://proxy.golang.org/b", Allow, "docs, mirrors", ""},
		{"read https://go.dev/a and https://evil.example/x", Deny, "evil", ""},
		{"read https://github.com/a https://evil.example/x https://go.dev", Deny, "evil", ""},
		{"read https://go.dev/a and https://github.com/x", Ask, "ask-gh", ""},
		{"read https://go.dev/a and https://other.example/x", None, "", `no allow rule covers "https://other.example/x"`},
		{"read https://go.dev/a and ftp://x/y", Allow, "docs", ""}, // Gemini fetches http and https only
		// Go cannot read it; a browser's reader takes evil.example as its host.
		{`read https://go.dev/a and https://evil.example\@go.dev/`, None, "", `no allow rule covers "https://evil.example\\@go.dev/"`},
	}
	for _, tt := range tests {
		req := FromGemini(gemini("web_fetch", map[string]any{"prompt": tt.prompt}), "", "")
		if v := p.Decide(req); v.Decision != tt.want || v.Rule != tt.rule || v.Why != tt.why {
			t.Errorf("%q: %+v, want %s by %q (%s)", tt.prompt, v, tt.want, tt.rule, tt.why)
		}
	}
	req := FromGemini(gemini("web_fetch", map[string]any{"prompt": "compare https://go.dev/a with https://evil.example/x"}), "", "")
	if got := req.Summary(); got != "https://go.dev/a https://evil.example/x" {
		t.Fatalf("summary %q", got)
	}
}
