package approval

import "testing"

// cline is a tool call as the Cline CLI's PreToolUse hook delivers it
// (3.0.65).
func cline(name string, input map[string]any) Request { return agentCall("cline", name, input) }

// Cline's tools take the names the policy knows them by, their inputs the
// fields it reads (one command of one line per command Cline runs, the
// file as file_path), and the rules written for Claude Code decide them:
// a deny of any of the commands denies the call.
func TestFromCline(t *testing.T) {
	checkFrom(t, "FromCline", FromCline, []fromCase{
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
	})
}
