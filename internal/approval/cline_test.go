package approval

import (
	"encoding/json"
	"testing"
)

// cline is a tool call as the Cline CLI's PreToolUse hook delivers it
// (3.0.65).
func cline(name string, input map[string]any) Request {
	in, _ := json.Marshal(input)
	return Request{Agent: "cline", Session: "work", Cwd: "/w", Tool: name, Input: in}
}

// Cline's tools take the names the policy knows them by, their inputs the
// fields it reads (one command of one line per command Cline runs, the
// file as file_path), and the rules written for Claude Code decide them:
// a deny of any of the commands denies the call.
func TestFromCline(t *testing.T) {
	p := loadExample(t)
	tests := []struct {
		name           string
		req            Request
		wantTool, orig string
		summary        string
		want           Decision
		rule           string
	}{
		{"one command allowed", cline("run_commands", map[string]any{"commands": []string{"go test ./..."}}),
			"Bash", "run_commands", "go test ./...", Allow, "tests"},
		{"a second command denied", cline("run_commands", map[string]any{"commands": []string{"go vet ./...", "rm -rf build"}}),
			"Bash", "run_commands", "go vet ./...\nrm -rf build", Deny, "no-rm-rf"},
		{"commands as one string", cline("run_commands", map[string]any{"commands": "rm -rf build"}),
			"Bash", "run_commands", "rm -rf build", Deny, "no-rm-rf"},
		{"an edit outside", cline("editor", map[string]any{"path": "/etc/hosts", "old_text": "a", "new_text": "b"}),
			"Edit", "editor", "/etc/hosts", Deny, "edit-outside"},
		{"no commands", cline("run_commands", map[string]any{"commands": []string{}}),
			"run_commands", "", `{"commands":[]}`, None, ""},
		{"a tool the policy has no name for", cline("read_files", map[string]any{"file_paths": []string{"/w/a"}}),
			"read_files", "", `{"file_paths":["/w/a"]}`, None, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := FromCline(tt.req)
			if req.Tool != tt.wantTool || req.AgentTool != tt.orig || req.Summary() != tt.summary {
				t.Fatalf("FromCline = tool %q (agent's %q), summary %q", req.Tool, req.AgentTool, req.Summary())
			}
			if v := p.Decide(req); v.Decision != tt.want || v.Rule != tt.rule {
				t.Fatalf("Decide = %+v, want %s by %q", v, tt.want, tt.rule)
			}
		})
	}
}
