package fakeagent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// scriptDef is one scenario: a summary for --help and the code that plays
// it. Scripts run until ctx ends, the person quits, or they crash.
type scriptDef struct {
	summary string
	run     func(ctx context.Context, a *agent) error
}

var scriptOrder = []string{"working", "permission", "migrate", "question", "errorloop", "idle", "crash", "stream"}

var scripts = map[string]*scriptDef{
	"working": {
		summary: "works without end: spinner, tool calls with streaming output, tasks completed one by one",
		run:     runWorking,
	},
	"permission": {
		summary: "works a few seconds, then asks to run a Bash command (1 or 2 runs it and finishes the turn; 3 or Escape declines)",
		run:     runPermission,
	},
	"migrate": {
		summary: "asks to run a migration on staging and, once answered, at once the same question about production with --drop-all-tables: two prompts in a row that differ only in their command (3 or Escape declines either)",
		run:     runMigrate,
	},
	"question": {
		summary: "asks \"Which database should we use?\" (Postgres, SQLite, Redis); a digit answers and it carries on",
		run:     runQuestion,
	},
	"errorloop": {
		summary: "every API request fails: retry after retry, then the same prompt is resent and fails again",
		run:     runErrorLoop,
	},
	"idle": {
		summary: "a finished turn waiting at the prompt; a typed prompt gets a short reply",
		run:     runIdle,
	},
	"crash": {
		summary: "works a few seconds, then prints a stack trace and exits with status 1",
		run:     runCrash,
	},
	"stream": {
		summary: "works without end, a command printing 20 lines a second; with --prompt-every, a permission prompt at random times (for system3 bench)",
		run:     runStream,
	},
}

func (a *agent) play(ctx context.Context, s *scriptDef) error { return s.run(ctx, a) }

// plannedTask is a task a script creates.
type plannedTask struct{ subject, description, activeForm string }

// act is one step of work: a tool call with its output, or text.
type act struct {
	say   string
	tool  string
	out   []string
	think time.Duration // before a tool call shows (default 1.2s)
}

func (a *agent) do(ctx context.Context, acts ...act) error {
	for _, x := range acts {
		var err error
		if x.say != "" {
			err = a.say(ctx, x.say)
		} else {
			think := x.think
			if think == 0 {
				think = 1200 * time.Millisecond
			}
			err = a.tool(ctx, x.tool, think, x.out...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// converse plays turns: the first prompt (none: start idle), then every
// prompt the person submits. An interrupted turn ends at the input box
// with Claude Code's "Interrupted" line.
func (a *agent) converse(ctx context.Context, first string, turn func(ctx context.Context, prompt string, n int) error) error {
	prompt := first
	if first != "" {
		a.m.add(&block{kind: bPrompt, text: first})
	}
	for n := 0; ; {
		if prompt != "" {
			err := turn(ctx, prompt, n)
			n++
			switch {
			case errors.Is(err, errInterrupted):
				a.interrupted()
			case err != nil:
				return err
			}
		}
		p, err := a.idle(ctx, 0)
		if err != nil {
			return err
		}
		prompt = p
	}
}

// nextOpen is the first task that is not completed, "" when none is.
func (a *agent) nextOpen() string {
	if a.list == nil {
		return ""
	}
	for _, t := range a.list.tasks {
		if t.Status != statusCompleted {
			return t.ID
		}
	}
	return ""
}

// ── working ─────────────────────────────────────────────────────────────

var authPlan = []plannedTask{
	{"Add OAuth provider config", "Google and GitHub client settings, loaded from the environment", "Adding OAuth provider config"},
	{"Implement the OAuth callback handler", "Exchange the code, check the state cookie, create the session", "Implementing the OAuth callback handler"},
	{"Store sessions in Redis", "Replace the in-memory session store", "Storing sessions in Redis"},
	{"Write integration tests", "End-to-end login against a fake provider", "Writing integration tests"},
	{"Update the auth docs", "Document the new settings in docs/auth.md", "Updating the auth docs"},
}

var authWork = [][]act{
	{
		{tool: "Read(internal/auth/config.go)", out: []string{"Read 86 lines"}},
		{say: "The config already loads the SMTP settings from the environment; I'll add the Google and GitHub client settings next to them."},
		{tool: "Update(internal/auth/config.go)", out: []string{"Updated internal/auth/config.go with 31 additions and 2 removals"}},
		{tool: "Bash(go build ./...)", out: []string{"(No content)"}},
	},
	{
		{tool: "Read(internal/auth/handlers.go)", out: []string{"Read 214 lines"}},
		{say: "Next the callback: exchange the code, verify the state cookie, then create the session."},
		{tool: "Write(internal/auth/callback.go)", out: []string{"Wrote 118 lines to internal/auth/callback.go"}},
		{tool: "Bash(go test ./internal/auth/...)", out: []string{
			"=== RUN   TestCallbackExchangesCode",
			"--- PASS: TestCallbackExchangesCode (0.02s)",
			"=== RUN   TestCallbackRejectsBadState",
			"--- PASS: TestCallbackRejectsBadState (0.00s)",
			"PASS",
			"ok      github.com/acme/shop/internal/auth      0.412s",
		}},
	},
	{
		{tool: "Read(internal/session/store.go)", out: []string{"Read 97 lines"}},
		{tool: "Update(internal/session/store.go)", out: []string{"Updated internal/session/store.go with 44 additions and 12 removals"}},
		{tool: "Bash(docker compose up -d redis)", out: []string{"Container shop-redis-1  Running"}},
		{tool: "Bash(go test ./internal/session/...)", out: []string{"ok      github.com/acme/shop/internal/session   1.208s"}},
	},
	{
		{say: "Now an end-to-end test that logs in through a fake provider."},
		{tool: "Write(internal/auth/oauth_e2e_test.go)", out: []string{"Wrote 164 lines to internal/auth/oauth_e2e_test.go"}},
		{tool: "Bash(go test -run E2E ./internal/auth/...)", out: []string{
			"=== RUN   TestOAuthE2E",
			"=== RUN   TestOAuthE2E/google",
			"=== RUN   TestOAuthE2E/github",
			"--- PASS: TestOAuthE2E (0.31s)",
			"    --- PASS: TestOAuthE2E/google (0.14s)",
			"    --- PASS: TestOAuthE2E/github (0.12s)",
			"ok      github.com/acme/shop/internal/auth      0.587s",
		}},
	},
	{
		{tool: "Read(docs/auth.md)", out: []string{"Read 58 lines"}},
		{tool: "Update(docs/auth.md)", out: []string{"Updated docs/auth.md with 27 additions"}},
	},
}

// authPolish is what the working agent keeps doing once its tasks are
// done: it never stops.
var authPolish = [][]act{
	{
		{tool: "Bash(go test -race ./...)", think: 2 * time.Second, out: []string{
			"ok      github.com/acme/shop/internal/api       2.114s",
			"ok      github.com/acme/shop/internal/auth      1.902s",
			"ok      github.com/acme/shop/internal/billing   0.871s",
			"ok      github.com/acme/shop/internal/session   1.377s",
			"?       github.com/acme/shop/cmd/shop   [no test files]",
		}},
	},
	{
		{tool: "Bash(golangci-lint run ./...)", think: 2 * time.Second, out: []string{"0 issues."}},
		{say: "Tests and lint are clean. Tightening the error handling in the callback while the change waits for review."},
	},
	{
		{tool: "Read(internal/auth/callback.go)", out: []string{"Read 118 lines"}},
		{tool: "Update(internal/auth/callback.go)", out: []string{"Updated internal/auth/callback.go with 6 additions and 3 removals"}},
	},
}

func runWorking(ctx context.Context, a *agent) error {
	a.createTasks(authPlan)
	first := "Implement OAuth login for PRD-AUTH: Google and GitHub providers, sessions in Redis, tests green"
	polish := 0
	return a.converse(ctx, first, func(ctx context.Context, prompt string, n int) error {
		a.work("")
		if n > 0 {
			if err := a.say(ctx, "Understood, I'll fold that in and carry on."); err != nil {
				return err
			}
		}
		for {
			// Guidance typed while it works is acknowledged between steps.
			for len(a.queued) > 0 {
				a.queued = a.queued[1:]
				if err := a.say(ctx, "Understood, I'll take that into account as I go."); err != nil {
					return err
				}
			}
			if id := a.nextOpen(); id != "" {
				a.setTask(id, statusInProgress)
				a.work(a.activeForm())
				i := 0
				fmt.Sscan(id, &i)
				if err := a.do(ctx, authWork[(i-1)%len(authWork)]...); err != nil {
					return err
				}
				a.setTask(id, statusCompleted)
				continue
			}
			a.work("")
			if err := a.do(ctx, authPolish[polish%len(authPolish)]...); err != nil {
				return err
			}
			polish++
		}
	})
}

// ── errorloop ───────────────────────────────────────────────────────────

var paymentsPlan = []plannedTask{
	{"Fetch yesterday's payouts", "Payouts from the PSP export for yesterday", "Fetching yesterday's payouts"},
	{"Match payouts to ledger entries", "Join on payout id, then amount and date", "Matching payouts to ledger entries"},
	{"Report mismatches", "A table of unmatched payouts and entries", "Reporting mismatches"},
}

// retryDelays are the waits before each retry, growing as Claude Code's
// backoff does (capped lower, so the demo keeps moving).
var retryDelays = []time.Duration{1, 2, 3, 5, 8, 10, 10, 10, 10, 10}

const maxRetries = 10

const apiError500 = "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check status.anthropic.com."

// resendAfter is how long the errorloop agent sits on its final API error
// before the same prompt is sent again, as an orchestrating script would.
const resendAfter = 10 * time.Second

func runErrorLoop(ctx context.Context, a *agent) error {
	a.createTasks(paymentsPlan)
	prompt := "Reconcile yesterday's payouts against the ledger for PRD-PAY and list the mismatches"
	a.m.add(&block{kind: bPrompt, text: prompt})
	for {
		err := a.failingTurn(ctx)
		after := resendAfter
		switch {
		case errors.Is(err, errInterrupted):
			a.interrupted()
			after = 0 // stopped by a person: wait for one
		case err != nil:
			return err
		}
		p, err := a.idle(ctx, after)
		if err != nil {
			return err
		}
		a.m.placeholder = ""
		if p == "" {
			a.m.add(&block{kind: bPrompt, text: prompt})
		}
	}
}

// failingTurn is a turn whose every API request fails: Claude Code's
// retries, then the final error.
func (a *agent) failingTurn(ctx context.Context) error {
	if a.taskStatus("1") == statusPending {
		a.setTask("1", statusInProgress)
	}
	a.work("")
	if err := a.pause(ctx, a.jitter(1500*time.Millisecond)); err != nil {
		return err
	}
	for attempt := 1; attempt <= maxRetries; attempt++ {
		text := "API error"
		if attempt > 2 {
			text = "500 Internal server error"
		}
		if err := a.retrying(ctx, text, attempt, maxRetries, retryDelays[attempt-1]*time.Second); err != nil {
			return err
		}
	}
	a.m.add(&block{kind: bAPIError, text: apiError500})
	a.m.mode, a.m.panel, a.m.placeholder = modeIdle, false, "Resend your message to try again"
	return nil
}

// ── idle ────────────────────────────────────────────────────────────────

var docsPlan = []plannedTask{
	{"Document the new CLI flags", "--tmux-socket-path, --tasks-dir and --state-dir in the README", "Documenting the new CLI flags"},
	{"Add examples for each flag", "One runnable example per flag", "Adding examples for each flag"},
	{"Lint the README", "markdownlint clean", "Linting the README"},
}

func runIdle(ctx context.Context, a *agent) error {
	a.createTasks(docsPlan)
	for _, t := range a.listIDs() {
		a.setTask(t, statusCompleted)
	}
	a.m.add(&block{kind: bPrompt, text: "Update the README for the new CLI flags (PRD-DOCS)"})
	a.m.add(&block{kind: bTool, text: "Read(README.md)", output: []string{"Read 212 lines"}})
	a.m.add(&block{kind: bTool, text: "Update(README.md)", output: []string{"Updated README.md with 24 additions and 6 removals"}})
	a.m.add(&block{kind: bTool, text: "Bash(npx markdownlint-cli2 README.md)", output: []string{"Summary: 0 error(s)"}})
	a.m.add(&block{kind: bSay, text: "The README now documents --tmux-socket-path, --tasks-dir and --state-dir, each with an example."})
	a.m.add(&block{kind: bDone, text: "Worked for 1m 12s · done " + a.now().Add(-3*time.Minute).Format("3:04 PM")})
	a.m.panel = true
	return a.converse(ctx, "", func(ctx context.Context, prompt string, n int) error {
		start := a.now()
		a.work("")
		if err := a.pause(ctx, a.jitter(1500*time.Millisecond)); err != nil {
			return err
		}
		shown := prompt
		if r := []rune(shown); len(r) > 160 {
			shown = string(r[:159]) + "…"
		}
		if err := a.say(ctx, "Noted: “"+shown+"”. The README work for PRD-DOCS is done; I'll apply that to the next change."); err != nil {
			return err
		}
		a.finish(start)
		return nil
	})
}

func (a *agent) listIDs() []string {
	if a.list == nil {
		return nil
	}
	ids := make([]string, len(a.list.tasks))
	for i, t := range a.list.tasks {
		ids[i] = t.ID
	}
	return ids
}

// ── crash ───────────────────────────────────────────────────────────────

var legacyPlan = []plannedTask{
	{"Port the CSV exporter", "legacy/exporter/csv.js onto the v2 invoices API", "Porting the CSV exporter"},
	{"Port the PDF exporter", "legacy/exporter/pdf.js onto the v2 invoices API", "Porting the PDF exporter"},
	{"Remove the v1 client", "Delete legacy/api/v1 once nothing imports it", "Removing the v1 client"},
}

// crashTrace is what the crash script leaves on screen.
const crashTrace = `
file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:2743
        const lines = result.stdout.split("\n");
                                    ^

TypeError: Cannot read properties of undefined (reading 'split')
    at formatToolOutput (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:2743:37)
    at BashTool.renderResult (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:2911:12)
    at async Promise.all (index 0)
    at async runToolUse (file:///usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js:3377:5)

Node.js v22.12.0
`

func runCrash(ctx context.Context, a *agent) error {
	a.createTasks(legacyPlan)
	first := "Port the legacy invoice exporter to the v2 API (PRD-LEGACY)"
	return a.converse(ctx, first, func(ctx context.Context, prompt string, n int) error {
		if id := a.nextOpen(); id != "" {
			a.setTask(id, statusInProgress)
		}
		a.work(a.activeForm())
		if err := a.do(ctx,
			act{tool: "Read(legacy/exporter/csv.js)", think: 800 * time.Millisecond, out: []string{"Read 412 lines"}},
			act{say: "I'll port the exporter module by module, starting with CSV."},
		); err != nil {
			return err
		}
		b := a.m.add(&block{kind: bTool, text: "Bash(node legacy/exporter/csv.js --dry-run)", output: []string{"Running…"}})
		if err := a.pause(ctx, a.jitter(900*time.Millisecond)); err != nil {
			return err
		}
		b.output = []string{"exporting invoices 2024-01 … 2024-06"}
		if err := a.pause(ctx, a.jitter(600*time.Millisecond)); err != nil {
			return err
		}
		b.output = append(b.output, "1,204 rows")
		if err := a.pause(ctx, a.jitter(600*time.Millisecond)); err != nil {
			return err
		}
		a.m.mode = modeGone
		a.draw()
		return &CrashError{Msg: "TypeError: Cannot read properties of undefined (reading 'split')"}
	})
}

// Words Claude Code shows while working and when a turn is done.
var (
	workingVerbs = []string{"Brewing", "Cogitating", "Noodling", "Percolating", "Pondering", "Simmering", "Orbiting", "Spelunking", "Tinkering", "Clauding"}
	doneVerbs    = []string{"Baked", "Brewed", "Churned", "Cogitated", "Cooked", "Crunched", "Sautéed", "Worked"}
	tips         = []string{
		"Start small, ask Claude for a plan, and check its edits",
		"Use /memory to view and manage Claude memory",
		"Press Shift+Tab to cycle between permission modes",
		"Run /clear between unrelated tasks to keep the context small",
	}
)
