package monitor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
	"github.com/system3-dev/system3/tmux"
)

func TestAnswerKeys(t *testing.T) {
	perm := api.Session{Agent: "claude", State: api.AwaitingInput, Options: []string{"Yes", "Yes, and don’t ask again for: ./deploy.sh *", "Yes, and switch to auto mode", "No"}}
	question := api.Session{Agent: "claude", State: api.AwaitingInput, Options: []string{"Postgres", "SQLite", "Redis", "Type something.", "Chat about this"}}
	trust := api.Session{Agent: "claude", State: api.AwaitingInput, Options: []string{"No, exit", "Yes, I trust this folder"}}
	codex := api.Session{Agent: "codex", State: api.AwaitingInput, Options: []string{"Yes, proceed (y)", "Yes, and don't ask again for this command (a)", "No, and tell Codex what to do differently (esc)"}}
	codexQuestion := api.Session{Agent: "codex", State: api.AwaitingInput, Kind: "question", Options: []string{"Postgres (Recommended)", "SQLite", "None of the above"}}
	codexTrust := api.Session{Agent: "codex", State: api.AwaitingInput, Kind: "trust", Options: []string{"Trust and continue", "Back to Agent Command Center"}}
	gem := api.Session{Agent: "gemini", State: api.AwaitingInput, Options: []string{"Allow once", "Deny"}}
	gemNo := api.Session{Agent: "gemini", State: api.AwaitingInput, Options: []string{"Yes, allow once", "No"}}
	// Gemini CLI 0.61.0's shell approval (monitor/testdata/captures/gemini/permission_shell.txt).
	gemShell := api.Session{Agent: "gemini", State: api.AwaitingInput, Options: []string{"Allow once", "Allow for this session", "No, suggest changes (esc)"}}
	aider := api.Session{Agent: "aider", State: api.AwaitingInput, Options: []string{"Yes", "No", "All", "Skip all", "Don't ask again"}}
	bare := api.Session{Agent: "claude", State: api.AwaitingInput}
	// Cline 3.0.65 (monitor/testdata/captures/cline/permission_exec.txt, question.txt).
	clinePerm := api.Session{Agent: "cline", State: api.AwaitingInput, Kind: "permission", Options: []string{"Approve", "Deny"}}
	clineQuestion := api.Session{Agent: "cline", State: api.AwaitingInput, Kind: "question", Options: []string{"Postgres", "SQLite", "Type a response..."}}
	// GitHub Copilot CLI 1.0.102 (monitor/testdata/captures/copilot/permission_exec.txt, question.txt).
	copilotPerm := api.Session{Agent: "copilot", State: api.AwaitingInput, Kind: "permission",
		Options: []string{"Yes", "Yes, and don't ask again for `./deploy.sh` in this directory (~/project)", "No, and tell Copilot what to do differently (Esc to stop)"}}
	copilotQuestion := api.Session{Agent: "copilot", State: api.AwaitingInput, Kind: "question", Options: []string{"Postgres", "SQLite", "Other (type your answer)"}}
	cases := []struct {
		name   string
		sess   api.Session
		answer string
		option string
		keys   []string
		err    error
	}{
		{"yes is the first Yes", perm, "yes", "Yes", []string{"1"}, nil},
		{"y", perm, " Y ", "Yes", []string{"1"}, nil},
		{"number", perm, "2", perm.Options[1], []string{"2"}, nil},
		{"label prefix", perm, "yes, and switch", perm.Options[2], []string{"3"}, nil},
		{"label substring", perm, "don’t ask", perm.Options[1], []string{"2"}, nil},
		{"claude declines with Escape", perm, "no", "No", []string{"Escape"}, nil},
		{"out of range", perm, "5", "", nil, api.ErrBadAnswer},
		{"zero", perm, "0", "", nil, api.ErrBadAnswer},
		{"ambiguous label", perm, "yes, and", "", nil, api.ErrBadAnswer},
		{"empty", perm, "  ", "", nil, api.ErrBadAnswer},
		{"unknown label", perm, "maybe", "", nil, api.ErrBadAnswer},
		{"question label", question, "sqlite", "SQLite", []string{"2"}, nil},
		{"question has no yes", question, "yes", "", nil, api.ErrBadAnswer},
		{"question no is Escape", question, "n", "Escape", []string{"Escape"}, nil},
		{"trust yes skips No, exit", trust, "yes", "Yes, I trust this folder", []string{"2"}, nil},
		{"codex no says esc", codex, "no", codex.Options[2], []string{"Escape"}, nil},
		{"codex yes", codex, "yes", codex.Options[0], []string{"1"}, nil},
		{"codex number", codex, "2", codex.Options[1], []string{"2"}, nil},
		{"codex question label", codexQuestion, "sqlite", "SQLite", []string{"2"}, nil},
		{"codex question no is Escape", codexQuestion, "no", "Escape", []string{"Escape"}, nil},
		{"codex trust first is Enter", codexTrust, "1", codexTrust.Options[0], []string{"Enter"}, nil},
		{"codex trust second is Down Enter", codexTrust, "2", codexTrust.Options[1], []string{"Down", "Enter"}, nil},
		{"gemini without a No option", gem, "no", "Escape", []string{"Escape"}, nil},
		{"gemini No option", gemNo, "no", "No", []string{"2"}, nil},
		{"gemini label", gem, "deny", "Deny", []string{"2"}, nil},
		{"gemini 1 allows once", gemShell, "1", "Allow once", []string{"1"}, nil},
		{"gemini yes allows once", gemShell, "yes", "Allow once", []string{"1"}, nil},
		{"gemini no is Escape", gemShell, "no", "No, suggest changes (esc)", []string{"Escape"}, nil},
		{"gemini session label", gemShell, "for this session", "Allow for this session", []string{"2"}, nil},
		{"aider letter and Enter", aider, "yes", "Yes", []string{"y", "Enter"}, nil},
		{"aider no", aider, "no", "No", []string{"n", "Enter"}, nil},
		{"aider by number", aider, "2", "No", []string{"n", "Enter"}, nil},
		{"aider option without an allowed key", aider, "skip all", "", nil, api.ErrBadAnswer},
		{"cline yes approves with y", clinePerm, "yes", "Approve", []string{"y"}, nil},
		{"cline 1 approves with y", clinePerm, "1", "Approve", []string{"y"}, nil},
		{"cline no denies with n", clinePerm, "no", "Deny", []string{"n"}, nil},
		{"cline question first is Enter", clineQuestion, "1", "Postgres", []string{"Enter"}, nil},
		{"cline question label is Down Enter", clineQuestion, "sqlite", "SQLite", []string{"Down", "Enter"}, nil},
		{"cline question no is Escape", clineQuestion, "no", "Escape", []string{"Escape"}, nil},
		{"copilot yes is 1", copilotPerm, "yes", "Yes", []string{"1"}, nil},
		{"copilot no is Escape (its No is a text field)", copilotPerm, "no", "No, and tell Copilot what to do differently (Esc to stop)", []string{"Escape"}, nil},
		{"copilot question label is Down Enter", copilotQuestion, "sqlite", "SQLite", []string{"Down", "Enter"}, nil},
		{"no options: a digit is sent blind", bare, "3", "", []string{"3"}, nil},
		{"no options: 10 has no key", bare, "10", "", nil, api.ErrBadAnswer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			option, keys, err := agents.AnswerKeys(c.sess, c.answer)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				if !strings.Contains(err.Error(), "option") && !strings.Contains(err.Error(), "empty") {
					t.Errorf("error %q does not say what the options are", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, k := range keys {
				names = append(names, string(k))
			}
			if option != c.option || !slices.Equal(names, c.keys) {
				t.Errorf("AnswerKeys(%q) = %q %q, want %q %q", c.answer, option, names, c.option, c.keys)
			}
		})
	}
}

func TestResolveTarget(t *testing.T) {
	ss := []api.Session{
		{Pane: "%1", Session: "orch-a", SessionID: "$1", Target: "orch-a:0.0", Agent: "claude"},
		{Pane: "%2", Session: "orch-a", SessionID: "$1", Target: "orch-a:0.1", Agent: "shell"},
		{Pane: "%3", Session: "two", SessionID: "$2", Target: "two:0.0", Agent: "claude"},
		{Pane: "%4", Session: "two", SessionID: "$2", Target: "two:1.0", Agent: "codex"},
		{Pane: "%5", Session: "logs", SessionID: "$3", Target: "logs:0.0", Agent: "shell"},
		{Pane: "%6", Session: "logs", SessionID: "$3", Target: "logs:0.1", Agent: "shell"},
	}
	cases := []struct {
		t    api.Target
		pane string
		err  error
	}{
		{api.Target{Session: "orch-a"}, "%1", nil}, // the agent pane of the session
		{api.Target{Session: "$1"}, "%1", nil},
		{api.Target{Session: "orch-a:0.1"}, "%2", nil},
		{api.Target{Pane: "%2"}, "%2", nil},
		{api.Target{Session: "%3"}, "%3", nil},
		{api.Target{Session: "two"}, "", api.ErrAmbiguousTarget},
		{api.Target{Session: "logs"}, "", api.ErrAmbiguousTarget},
		{api.Target{Session: "nope"}, "", api.ErrUnknownTarget},
		{api.Target{Pane: "%9"}, "", api.ErrUnknownTarget},
		{api.Target{}, "", api.ErrBadRequest},
	}
	for _, c := range cases {
		got, err := api.ResolveTarget(c.t, ss, "test server")
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%v: err = %v, want %v", c.t, err, c.err)
			}
			continue
		}
		if err != nil || got.Pane != c.pane {
			t.Errorf("%v: got %s, %v; want %s", c.t, got.Pane, err, c.pane)
		}
	}
	_, err := api.ResolveTarget(api.Target{Session: "two"}, ss, "x")
	if err == nil || !strings.Contains(err.Error(), "two:0.0 (%3, claude)") || !strings.Contains(err.Error(), "two:1.0 (%4, codex)") {
		t.Errorf("ambiguous error does not list the panes: %v", err)
	}
}

// recordingSender records what would be typed.
type recordingSender struct {
	mu    sync.Mutex
	sent  []string
	fail  error
	calls []string
}

func (r *recordingSender) SendText(ctx context.Context, pane, text string, opt tmux.SendOptions) (tmux.SendResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "text "+pane+" "+text)
	if r.fail != nil {
		return tmux.SendResult{Pane: pane}, r.fail
	}
	return tmux.SendResult{Pane: pane, Delivered: true, Verified: !opt.NoEnter, Method: "send-keys"}, nil
}

func (r *recordingSender) SendKeys(ctx context.Context, pane string, keys ...tmux.Key) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, k := range keys {
		names = append(names, string(k))
	}
	r.calls = append(r.calls, "keys "+pane+" "+strings.Join(names, ","))
	return r.fail
}

func TestActionsAreSentAndAudited(t *testing.T) {
	dir := t.TempDir()
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) { c.Send = snd; c.Audit = audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.tm.show(t, "%2", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	ctx := context.Background()

	res, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Answer: "yes", Origin: "tui"})
	if err != nil || res.Option != "Yes" || !slices.Equal(res.Keys, []string{"1"}) || !res.Delivered || res.Pane != "%1" {
		t.Fatalf("Answer = %+v, %v", res, err)
	}
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%2"}, Answer: "1", Origin: "cli"}); !errors.Is(err, api.ErrNotAwaiting) {
		t.Fatalf("Answer on a working pane: %v, want ErrNotAwaiting", err)
	}
	res, err = h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%2"}, Text: "stop and run the tests\nthen report", Urgent: true, Origin: "mcp:claude-code"})
	if err != nil || !res.Verified || !slices.Equal(res.Keys, []string{"Escape"}) {
		t.Fatalf("Inject = %+v, %v", res, err)
	}
	if _, err := h.sup.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Session: "orch-2"}, Origin: "tui"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sup.SendKeys(ctx, api.KeysRequest{Target: api.Target{Pane: "%1"}, Keys: []string{"rm -rf"}, Origin: "cli"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("SendKeys with a non-key: %v, want ErrBadRequest", err)
	}
	if _, err := h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%2"}, Origin: "cli"}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("Inject without text: %v", err)
	}
	want := []string{"keys %1 1", "keys %2 Escape", "text %2 stop and run the tests\nthen report", "keys %2 Escape"}
	if !slices.Equal(snd.calls, want) {
		t.Fatalf("sent %q, want %q", snd.calls, want)
	}

	snd.fail = tmux.ErrPaneDead
	res, err = h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%2"}, Text: "hello", Origin: "cli"})
	if !errors.Is(err, tmux.ErrPaneDead) || res.Delivered {
		t.Fatalf("Inject into a dead pane = %+v, %v", res, err)
	}

	entries, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Origin+" "+e.Action+" "+e.Pane+" "+strings.Join(e.Keys, ",")+" "+e.Text+" "+e.Error)
	}
	wantAudit := []string{
		"tui answer %1 1  ",
		"cli answer %2   " + api.ErrNotAwaiting.Error() + ": orch-2:0.0 is working, not awaiting_input; use inject to send text",
		"mcp:claude-code inject %2 Escape stop and run the tests\nthen report ",
		"tui interrupt %2 Escape  ",
		`cli keys  rm -rf  invalid request: key not allowed: "rm -rf" (allowed: ` + strings.Join(keyNames(), ", ") + ")",
		"cli inject    invalid request: the text is empty",
		"cli inject %2  hello inject orch-2:0.0: " + tmux.ErrPaneDead.Error(),
	}
	if !slices.Equal(got, wantAudit) {
		t.Fatalf("audit:\n%q\nwant\n%q", got, wantAudit)
	}
	phases := ""
	for _, e := range entries {
		phases += e.Phase + " "
	}
	if !entries[2].Sent || !entries[2].Checked || entries[6].Sent || phases != "result refused result result refused refused result " {
		t.Errorf("audit delivered/verified flags or phases (%s) wrong: %+v", phases, entries)
	}
}

func keyNames() []string {
	var out []string
	for _, k := range tmux.AllowedKeys() {
		out = append(out, string(k))
	}
	return out
}

// TestAuditFailureRefusesAction: when the audit log cannot be written,
// every action fails with that reason and nothing reaches the pane.
func TestAuditFailureRefusesAction(t *testing.T) {
	dir := t.TempDir()
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) { c.Send = snd; c.Audit = audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	// A directory where the log should be: every write fails.
	if err := os.Mkdir(filepath.Join(dir, audit.File), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%1"}, Text: "go on", Urgent: true, Origin: "tui"})
	if !errors.Is(err, api.ErrAuditUnwritable) || res.Delivered || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("Inject with a broken audit log = %+v, %v; want ErrAuditUnwritable", res, err)
	}
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: "%1"}, Answer: "1", Origin: "tui"}); !errors.Is(err, api.ErrAuditUnwritable) {
		t.Fatalf("Answer with a broken audit log: %v", err)
	}
	if _, err := h.sup.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: "%1"}, Origin: "tui"}); !errors.Is(err, api.ErrAuditUnwritable) {
		t.Fatalf("Interrupt with a broken audit log: %v", err)
	}
	if len(snd.calls) != 0 {
		t.Fatalf("sent %q with no audit log", snd.calls)
	}
	snap, _ := h.sup.Snapshot(ctx)
	if !strings.Contains(snap.Problem, "audit") {
		t.Fatalf("snapshot problem %q does not report the audit log", snap.Problem)
	}
}

// TestAuditFullDiskRefusesAction runs itself again under a file size limit
// (ulimit -f, RLIMIT_FSIZE) smaller than the audit log, as a full disk
// would: appending fails with EFBIG (Go ignores SIGXFSZ), and the action
// fails with that reason without sending anything.
func TestAuditFullDiskRefusesAction(t *testing.T) {
	if dir := os.Getenv("SYSTEM3_TEST_FULL_AUDIT"); dir != "" {
		snd := &recordingSender{}
		h := newHarness(t, func(c *Config) { c.Send = snd; c.Audit = audit.Open(dir) })
		h.tm.show(t, "%1", "claude", "claude/idle.txt")
		h.step()
		res, err := h.sup.Inject(context.Background(), api.InjectRequest{Target: api.Target{Pane: "%1"}, Text: "go on", Origin: "tui"})
		if !errors.Is(err, api.ErrAuditUnwritable) || !strings.Contains(err.Error(), "file too large") || res.Delivered {
			t.Fatalf("Inject on a full disk = %+v, %v", res, err)
		}
		if len(snd.calls) != 0 {
			t.Fatalf("sent %q on a full disk", snd.calls)
		}
		t.Log("refused:", err)
		return
	}
	dir := t.TempDir()
	// 200 KB of earlier entries, over the 64-block limit below.
	if err := os.WriteFile(filepath.Join(dir, audit.File), []byte(strings.Repeat("{}\n", 70000)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `ulimit -f 64 && exec "$0" "$@"`, os.Args[0], "-test.run=^TestAuditFullDiskRefusesAction$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "SYSTEM3_TEST_FULL_AUDIT="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused:") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("under ulimit -f: %v\n%s", err, out)
	}
	if fi, _ := os.Stat(filepath.Join(dir, audit.File)); fi.Size() != 210000 {
		t.Fatalf("the audit log changed to %d bytes", fi.Size())
	}
}

// TestInjectIntoRealPane types into a real pane running cat, through the
// real tmux client, and reads it back.
func TestInjectIntoRealPane(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "cat")
	client := tmux.NewClient(srv)
	dir := t.TempDir()
	eng, err := rules.New(agents.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil)
	sup, err := New(Config{Server: srv.String(), Tmux: client, Send: client, Rules: eng, Wakes: h.store, Audit: audit.Open(dir), HeartbeatEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sup.Refresh(ctx)
	text := "first line with $HOME and #{pane_id}\nsecond line; C-c Enter"
	res, err := sup.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "main"}, Text: text, Origin: "test"})
	if err != nil || !res.Delivered {
		t.Fatalf("Inject = %+v, %v", res, err)
	}
	var screen string
	testkit.Poll(5*time.Second, func() bool {
		p, err := sup.Preview(ctx, api.PreviewRequest{Target: api.Target{Session: "main"}})
		if err != nil {
			t.Fatal(err)
		}
		screen = strings.Join(p.Lines, "\n")
		// cat echoes each submitted line a second time.
		return strings.Count(screen, "second line; C-c Enter") == 2
	})
	if strings.Count(screen, "first line with $HOME and #{pane_id}") != 2 || strings.Count(screen, "second line; C-c Enter") != 2 {
		t.Fatalf("pane shows:\n%s", screen)
	}
	p, err := sup.Preview(ctx, api.PreviewRequest{Target: api.Target{Session: "main"}, Lines: 2})
	if err != nil || len(p.Lines) != 2 || p.Truncated != 2 {
		t.Fatalf("Preview with Lines 2 = %+v, %v", p, err)
	}
	if _, err := sup.Preview(ctx, api.PreviewRequest{Target: api.Target{Session: "gone"}}); !errors.Is(err, api.ErrUnknownTarget) {
		t.Fatalf("Preview of an unknown session: %v", err)
	}
}

// opencode's first Escape only arms its interrupt: Interrupt presses
// Escape twice, in two sends (two Escapes sent together interrupt nothing),
// and an urgent Inject does the same before it types.
func TestInterruptPressesOpencodesEscapeTwice(t *testing.T) {
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) { c.Send = snd })
	h.tm.show(t, "%1", "opencode", "opencode/working_streaming.txt")
	h.step()
	ctx := context.Background()
	res, err := h.sup.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: "%1"}, Origin: "tui"})
	if err != nil || !slices.Equal(res.Keys, []string{"Escape", "Escape"}) || !res.Delivered {
		t.Fatalf("Interrupt = %+v, %v", res, err)
	}
	res, err = h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%1"}, Text: "stop", Urgent: true, Origin: "tui"})
	if err != nil || !slices.Equal(res.Keys, []string{"Escape", "Escape"}) {
		t.Fatalf("urgent Inject = %+v, %v", res, err)
	}
	want := []string{"keys %1 Escape", "keys %1 Escape", "keys %1 Escape", "keys %1 Escape", "text %1 stop"}
	if !slices.Equal(snd.calls, want) {
		t.Fatalf("sent %q, want %q", snd.calls, want)
	}
}
