package claudefake

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// FakeKey is the API key the CLI is given; WriteConfig pre-approves it.
const FakeKey = "sk-ant-api03-claudetest-0000000000000000000000000000000000000000"

// Env is the environment that points the CLI at the fake at url, with the
// fake key, and keeps it from calling anything else (telemetry, updates,
// error reports).
func Env(url string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=" + FakeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
	}
}

// WriteConfig writes the CLI's user config, home/.claude.json, so that it
// starts at its input box: onboarding done (as by version, when not ""),
// FakeKey approved and, if trusted, each of dirs' trust dialog already
// accepted.
func WriteConfig(home, version string, trusted bool, dirs ...string) error {
	projects := map[string]any{}
	for _, dir := range dirs {
		projects[dir] = map[string]any{
			"hasTrustDialogAccepted": trusted,
			"allowedTools":           []string{},
		}
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"numStartups":            1,
		"theme":                  "dark",
		"customApiKeyResponses": map[string]any{
			"approved": []string{FakeKey[len(FakeKey)-20:]},
			"rejected": []string{},
		},
		"projects": projects,
	}
	if version != "" {
		cfg["lastOnboardingVersion"] = version
	}
	// Keep what is there already (an MCP server a test registered first).
	path := filepath.Join(home, ".claude.json")
	if old, err := os.ReadFile(path); err == nil {
		prev := map[string]any{}
		if err := json.Unmarshal(old, &prev); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for k, v := range cfg {
			prev[k] = v
		}
		cfg = prev
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
