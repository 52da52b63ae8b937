package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tui"
	"github.com/system3-dev/system3/wake/notify"
)

// One truth for a wake, from the prompt to its answer, through a real
// system3 serve on a fake agent that asks two Bash prompts in a row, the
// same question about two commands (staging, then production with
// --drop-all-tables):
//   - each prompt is its own wake and its own push, naming its command;
//   - a second answer from the CLI, or from MCP, right after the first,
//     types nothing;
//   - the first push's "Yes", tapped once the second prompt is on screen,
//     is refused and says why;
//   - status --json, MCP status, the dashboard's header and the web page
//     show one count of wakes that need a person;
//   - once the last prompt is answered, wait blocks instead of returning a
//     resolved wake, and --include-resolved says it is resolved.
func TestWakeTruthAcrossViews(t *testing.T) {
	srv := agentServer(t)
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	s := agentSession("migrate")
	pane := startTestAgents(t, srv, tasksDir, s)[s.Name]

	rec := newNtfyRecorder(t)
	addr := freeAddr(t)
	base := "http://" + addr
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("notify:\n  ntfy:\n    url: "+rec.URL+"/system3-test\n    actions_url: "+base+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state := testkit.ShortDir(t)
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir,
		"SYSTEM3_TMUX_SOCKET_PATH": srv.Path, "SYSTEM3_CONFIG": cfg}
	startServeAt(t, env, addr)

	push := func(n int) notify.NtfyMessage { t.Helper(); return rec.nth(t, n, nil) }
	first := push(1)
	if !strings.Contains(first.Message, "npm run migrate -- --env staging") || strings.Contains(first.Message, "production") {
		t.Fatalf("the first push does not name the staging command:\n%s", first.Message)
	}

	// The operator answers from the CLI, and, a moment later, again.
	if code, out, errOut := invoke(t, env, "answer", "--session", s.Name, "yes"); code != 0 {
		t.Fatalf("answer: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut := invoke(t, env, "answer", "--session", s.Name, "yes")
	if code == 0 || !strings.Contains(errOut, "the prompt changed since") {
		t.Fatalf("a second answer right after the first: exit %d, %s %s", code, out, errOut)
	}

	// The next prompt has the same question and options: a new wake and
	// a new push, naming production.
	second := push(2)
	if !strings.Contains(second.Message, "--env production --drop-all-tables") {
		t.Fatalf("the second push does not name the production command:\n%s", second.Message)
	}
	evs := wakesJSON(t, env, "--all")
	if len(evs) != 2 || !evs[0].Resolved || !strings.HasPrefix(evs[0].Resolution, "answered by cli (pid ") || !strings.HasSuffix(evs[0].Resolution, "): Yes") || evs[1].Resolved ||
		!strings.Contains(evs[0].Details, "--env staging") || !strings.Contains(evs[1].Details, "--drop-all-tables") || evs[0].Question != evs[1].Question {
		t.Fatalf("wakes = %+v", evs)
	}

	// The first push's Yes, tapped now, approves nothing.
	if code, body := tapAction(t, first.Actions[0].URL); code != http.StatusConflict || !strings.Contains(body, "resolved (answered by cli (pid ") {
		t.Fatalf("the stale push action: %d %s", code, body)
	}
	if screen := capturePane(t, srv, pane); !strings.Contains(screen, "--drop-all-tables") || !strings.Contains(screen, "Do you want to proceed?") {
		t.Fatalf("the production prompt is gone after a stale tap:\n%s", screen)
	}

	// One count, every view: the production prompt needs a person.
	const one = "1 wake needs a person"
	doc := statusNow(t, env)
	if doc.NeedsPerson != 1 {
		t.Fatalf("status --json needs_person = %d", doc.NeedsPerson)
	}
	if code, out, _ := invoke(t, env, "status"); code != 0 || !strings.Contains(out, one) {
		t.Fatalf("status: %s", out)
	}
	mc := mcpHTTP(t, base+"/mcp", "wake-truth")
	statusText, isErr := callTool(t, mc, "status", nil)
	var mcpDoc struct {
		NeedsPerson int `json:"needs_person"`
	}
	if isErr || json.Unmarshal([]byte(statusText), &mcpDoc) != nil || mcpDoc.NeedsPerson != 1 {
		t.Fatalf("MCP status: %s", statusText)
	}
	tm := teatest.NewTestModel(t, tui.New(dialDaemon(t, state), tui.Options{NoColor: true}), teatest.WithInitialTermSize(160, 40))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return strings.Contains(string(b), one) },
		teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if page := webPage(t, env, base); !strings.Contains(page, one) || !strings.Contains(page, "--drop-all-tables") {
		t.Fatalf("the web page does not show the count and the command:\n%s", page)
	}

	// Declined from MCP, naming the wake; the same call again a moment
	// later types nothing. Then nothing is left to answer, and wait waits.
	for i, wantErr := range []bool{false, true} {
		text, isErr := callTool(t, mc, "answer_prompt", map[string]any{"session": s.Name, "answer": "no", "wake": evs[1].ID})
		if isErr != wantErr || (wantErr && !strings.Contains(text, "the prompt changed since")) {
			t.Fatalf("MCP answer_prompt %d: error %v: %s", i+1, isErr, text)
		}
	}
	testkit.WaitFor(t, 20*time.Second, "the declined prompt to go", func() bool {
		return !strings.Contains(capturePane(t, srv, pane), "Do you want to proceed?")
	})
	if screen := capturePane(t, srv, pane); strings.Contains(screen, "❯ no") {
		t.Fatalf("after declining, the refused answer was typed:\n%s", screen)
	}
	if code, out, _ := invoke(t, env, "wait", "--session", s.Name, "--reason", "awaiting_input", "--timeout", "2s"); code != 2 {
		t.Fatalf("wait after the answers: exit %d, printed\n%s", code, out)
	}
	code, out, _ = invoke(t, env, "wait", "--session", s.Name, "--reason", "awaiting_input", "--include-resolved")
	if code != 0 || !strings.Contains(out, "status     resolved (answered by cli (pid ") {
		t.Fatalf("wait --include-resolved: exit %d\n%q", code, out)
	}
	if doc := statusNow(t, env); doc.NeedsPerson != 0 {
		t.Fatalf("needs_person after the answers = %d", doc.NeedsPerson)
	}
}

// wakesJSON is `system3 wakes --json` with args.
func wakesJSON(t *testing.T, env map[string]string, args ...string) []api.Wake {
	t.Helper()
	code, out, errOut := invoke(t, env, append([]string{"wakes", "--json"}, args...)...)
	var evs []api.Wake
	if code != 0 || json.Unmarshal([]byte(out), &evs) != nil {
		t.Fatalf("wakes --json: exit %d %s %s", code, out, errOut)
	}
	return evs
}

// webPage signs in with a `system3 web` link and returns the page's HTML.
func webPage(t *testing.T, env map[string]string, base string) (page string) {
	t.Helper()
	link, _ := signInLink(t, env, base)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	for _, u := range []string{link, base + "/web/"} {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
		}
		page = string(b)
	}
	return page
}

// capturePane is the pane's screen now.
func capturePane(t *testing.T, srv tmux.Server, pane string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	screen, err := tmux.NewClient(srv).Capture(ctx, pane, tmux.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return screen
}
