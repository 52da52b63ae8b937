package claude

import "testing"

func TestEncodeProjectDir(t *testing.T) {
	if got := EncodeProjectDir("/tmp/system3-captures/tool_errors/project.v2"); got != "-tmp-system3-captures-tool-errors-project-v2" {
		t.Fatalf("encoded = %q", got)
	}
}

func TestTranscriptDir(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		cwd  string
		want string
	}{
		{map[string]string{"CLAUDE_CONFIG_DIR": "/c", "HOME": "/h"}, "/src/app", "/c/projects/-src-app"},
		{map[string]string{"HOME": "/h"}, "/src/app", "/h/.claude/projects/-src-app"},
		{map[string]string{}, "/src/app", ""},
		{map[string]string{"HOME": "/h"}, "", ""},
	} {
		if got := TranscriptDir(tt.env, tt.cwd); got != tt.want {
			t.Errorf("TranscriptDir(%v, %q) = %q, want %q", tt.env, tt.cwd, got, tt.want)
		}
	}
}
