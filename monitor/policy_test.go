package monitor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
)

func TestOperatorOrigin(t *testing.T) {
	for origin, want := range map[string]bool{
		"tui": true, "cli": true, "coach:auto": true, "coach:tui": true, "coach:cli": true, api.DeliveryOrigin: true, "mcp:" + api.DeliveryOrigin: false, api.ResumeOrigin: true, "mcp:" + api.ResumeOrigin: false,
		"mcp:claude-code": false, "coach:mcp:claude-code": false, "": false, "mcp": false, "tui2": false, "bench": false,
		// Over the socket the client's claim decides, never the peer part.
		`socket:pid=4242,exe=/usr/bin/system3 claims "cli"`:               true,
		`socket:pid=4242,exe=/usr/bin/system3 claims "mcp:claude-code"`:   false,
		`socket:pid=4242,exe=/usr/bin/system3`:                            false,
		`socket:pid=1,exe=/x claims "socket:pid=2,exe=/y claims \"cli\""`: false,
		`socket:pid=4242,exe=/tmp/cli claims "x"`:                         false,
		// A peer an agent CLI ran is that agent's, whatever it claims.
		`socket:pid=4242,agent=claude:987,exe=/usr/bin/system3 claims "cli"`: false,
		`socket:pid=4242,agent=codex:9,exe=/usr/bin/system3 claims "tui"`:    false,
	} {
		if got := api.OperatorOrigin(origin); got != want {
			t.Errorf("OperatorOrigin(%q) = %v, want %v", origin, got, want)
		}
	}
	// Only the daemon's part says an agent ran the peer, never the claim.
	if api.RunByAgent(`socket:pid=4242,exe=/usr/bin/system3 claims "x,agent=claude:1"`) || !api.RunByAgent(`socket:pid=1,agent=claude:2,exe=/x claims "cli"`) {
		t.Error("RunByAgent reads the claim, or misses the peer's agent")
	}
}

func TestPolicyCheck(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	orch := api.Session{Pane: "%1", Session: "orch-auth"}
	rec := api.Session{Pane: "%2", Session: "rec"}
	victim := api.Session{Pane: "%3", Session: "victim2"}

	if _, err := api.NewPolicy(api.PolicyConfig{AllowSessions: []string{"orch-["}}, clock); err == nil || !strings.Contains(err.Error(), "mcp.allow_sessions") {
		t.Fatalf("bad glob: %v", err)
	}
	p, err := api.NewPolicy(api.PolicyConfig{AllowSessions: []string{"orch-*", "rec"}, PerMinute: 2}, clock)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(err error, want string) {
		t.Helper()
		if !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want ErrRefused with %q", err, want)
		}
	}
	// The allowlist: MCP origins, empty and unknown ones alike.
	for _, origin := range []string{"mcp:x", "", "coach:mcp:x", "something"} {
		refused(p.Check(origin, "stop", victim), `session "victim2" is not in mcp.allow_sessions (orch-*, rec), so MCP clients may not stop it`)
	}
	refused(p.Check("mcp:x", "inject", victim), "may not type into it")
	// The operator and system3's own reminders are not bound.
	for _, origin := range []string{"tui", "cli", "coach:auto"} {
		for range 5 {
			if err := p.Check(origin, "inject", victim); err != nil {
				t.Fatalf("%s: %v", origin, err)
			}
		}
	}
	// The rate, per pane: refusals do not count.
	for range 2 {
		if err := p.Check("mcp:a", "inject", orch); err != nil {
			t.Fatal(err)
		}
	}
	refused(p.Check("mcp:b", "answer", orch), "rate limit: 2 MCP actions on pane %1 in the last minute (mcp.inject_per_minute is 2); try again in 1m0s")
	if err := p.Check("mcp:a", "inject", rec); err != nil {
		t.Fatalf("another pane: %v", err)
	}
	now = now.Add(30 * time.Second)
	refused(p.Check("mcp:a", "inject", orch), "try again in 30s")
	now = now.Add(30 * time.Second)
	if err := p.Check("mcp:a", "inject", orch); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
	// An action on a whole session counts on the session.
	for range 2 {
		if err := p.Check("mcp:a", "spawn", api.Session{Session: "orch-new"}); err != nil {
			t.Fatal(err)
		}
	}
	refused(p.Check("mcp:a", "stop", api.Session{Session: "orch-new"}), "on session orch-new")

	// Read-only refuses every MCP action and acknowledgement.
	ro, err := api.NewPolicy(api.PolicyConfig{ReadOnly: true}, clock)
	if err != nil {
		t.Fatal(err)
	}
	refused(ro.Check("mcp:x", "link", orch), "read-only")
	refused(ro.CheckWrite("mcp:x", "acknowledge wakes"), "may not acknowledge wakes")
	if err := ro.CheckWrite("cli", "acknowledge wakes"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Check("tui", "interrupt", orch); err != nil {
		t.Fatal(err)
	}
	// The CLI an agent ran (a supervising Claude Code's `system3 answer`)
	// is bound like an MCP client, and the refusal says who it was.
	byAgent := `socket:pid=4242,agent=claude:987,exe=/usr/bin/system3 claims "cli"`
	refused(ro.Check(byAgent, "answer", orch), "so cli run by claude (pid 987) may not answer")
	refused(ro.CheckWrite(byAgent, "acknowledge wakes"), "run by claude (pid 987) may not acknowledge wakes")
	if err := ro.Check(`socket:pid=4242,exe=/usr/bin/system3 claims "cli"`, "answer", orch); err != nil {
		t.Fatalf("a person's CLI over the socket: %v", err)
	}
	if err := p.CheckWrite("mcp:x", "acknowledge wakes"); err != nil {
		t.Fatalf("ack without read-only: %v", err)
	}
	// The default caps at DefaultActionsPerMinute; negative is no cap.
	def, _ := api.NewPolicy(api.PolicyConfig{}, clock)
	if def.Config().PerMinute != api.DefaultActionsPerMinute {
		t.Fatalf("default rate %d", def.Config().PerMinute)
	}
	unl, _ := api.NewPolicy(api.PolicyConfig{PerMinute: -1}, clock)
	for range 100 {
		if err := unl.Check("mcp:x", "inject", orch); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServiceAppliesPolicy: every action of the service (inject, keys,
// answer, interrupt, link, and Allow for spawn and stop) goes through the
// policy after its target is resolved, and a refusal sends nothing.
func TestServiceAppliesPolicy(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, cfg api.PolicyConfig) (*harness, *recordingSender) {
		snd := &recordingSender{}
		dir := t.TempDir()
		var h *harness
		h = newHarness(t, func(c *Config) {
			p, err := api.NewPolicy(cfg, c.Clock)
			if err != nil {
				t.Fatal(err)
			}
			c.Policy, c.Send, c.Audit = p, snd, audit.Open(dir)
		})
		h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
		h.tm.show(t, "%2", "claude", "claude/working_spinner.ansi.txt")
		h.step()
		return h, snd
	}
	type action struct {
		name string
		do   func(h *harness, origin string, t api.Target) error
	}
	actions := []action{
		{"inject", func(h *harness, o string, t api.Target) error {
			_, err := h.sup.Inject(ctx, api.InjectRequest{Target: t, Text: "hi", Origin: o})
			return err
		}},
		{"keys", func(h *harness, o string, t api.Target) error {
			_, err := h.sup.SendKeys(ctx, api.KeysRequest{Target: t, Keys: []string{"Enter"}, Origin: o})
			return err
		}},
		{"answer", func(h *harness, o string, t api.Target) error {
			// Each answer is to a new prompt, a while after the last:
			// the agent moved on and asked again (a second answer to one
			// prompt, or one naming no prompt right after another, is
			// refused).
			h.clock.Add(recentAnswer)
			h.tm.show(h.t, "%1", "claude", "claude/idle.txt")
			h.step()
			h.tm.show(h.t, "%1", "claude", "claude/permission_bash.txt")
			h.step()
			_, err := h.sup.Answer(ctx, api.AnswerRequest{Target: t, Answer: "yes", Origin: o})
			return err
		}},
		{"interrupt", func(h *harness, o string, t api.Target) error {
			_, err := h.sup.Interrupt(ctx, api.InterruptRequest{Target: t, Origin: o})
			return err
		}},
		{"link", func(h *harness, o string, t api.Target) error {
			_, err := h.sup.Link(ctx, api.LinkRequest{Target: t, TaskList: "PRD-X", Origin: o})
			return err
		}},
		{"stop", func(h *harness, o string, t api.Target) error {
			return h.sup.Allow(ctx, api.AllowRequest{Action: "stop", Session: t.Session, Origin: o})
		}},
	}
	for _, a := range actions {
		t.Run(a.name, func(t *testing.T) {
			// Allowlist: orch-1 is outside it, by session name or pane id.
			h, snd := setup(t, api.PolicyConfig{AllowSessions: []string{"orch-2"}})
			for _, target := range []api.Target{{Session: "orch-1"}, {Pane: "%1"}, {Session: "orch-1:0.0"}} {
				if target.Session != "orch-1" && a.name == "stop" {
					continue // Allow takes the tmux session's name
				}
				err := a.do(h, "mcp:x", target)
				if !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), `session "orch-1" is not in mcp.allow_sessions (orch-2)`) {
					t.Fatalf("%v from MCP: %v", target, err)
				}
			}
			if len(snd.calls) != 0 || len(h.sup.Links()) != 0 {
				t.Fatalf("a refused action acted: sent %q, links %+v", snd.calls, h.sup.Links())
			}
			// The operator is not bound by the MCP allowlist.
			if err := a.do(h, "cli", api.Target{Session: "orch-1"}); err != nil {
				t.Fatalf("from the CLI: %v", err)
			}

			// Read-only.
			h, snd = setup(t, api.PolicyConfig{ReadOnly: true})
			if err := a.do(h, "mcp:x", api.Target{Session: "orch-1"}); !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), "read-only") {
				t.Fatalf("read-only: %v", err)
			}
			if len(snd.calls) != 0 {
				t.Fatalf("read-only sent %q", snd.calls)
			}
			if err := a.do(h, "tui", api.Target{Session: "orch-1"}); err != nil {
				t.Fatalf("from the dashboard: %v", err)
			}

			// Rate: one action per pane a minute.
			h, _ = setup(t, api.PolicyConfig{PerMinute: 1})
			if err := a.do(h, "mcp:x", api.Target{Session: "orch-1"}); err != nil {
				t.Fatal(err)
			}
			if err := a.do(h, "mcp:y", api.Target{Session: "orch-1"}); !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), "rate limit") {
				t.Fatalf("second action in a minute: %v", err)
			}
			if err := a.do(h, "cli", api.Target{Session: "orch-1"}); err != nil {
				t.Fatalf("the operator is not rate limited: %v", err)
			}
			h.clock.Add(time.Minute)
			if err := a.do(h, "mcp:y", api.Target{Session: "orch-1"}); err != nil {
				t.Fatalf("a minute later: %v", err)
			}
		})
	}

	// Refused attempts are audited with why.
	h, _ := setup(t, api.PolicyConfig{AllowSessions: []string{"orch-2"}})
	h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Session: "orch-1"}, Text: "x", Origin: "mcp:x"})
	entries, err := audit.Read(h.sup.cfg.Audit.Path())
	if err != nil || len(entries) != 1 || entries[0].Sent || !strings.Contains(entries[0].Error, "mcp.allow_sessions") || entries[0].Origin != "mcp:x" {
		t.Fatalf("audit = %+v, %v", entries, err)
	}

	// Removing the stale link of a session that is gone touches no pane: it
	// meets the allowlist but not the rate, so a stop's unlink after its
	// kill is not refused.
	h, _ = setup(t, api.PolicyConfig{AllowSessions: []string{"orch-gone"}, PerMinute: 1})
	for range 3 {
		if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "orch-gone"}, Origin: "mcp:x"}); err != nil {
			t.Fatalf("stale unlink: %v", err)
		}
	}
	if _, err := h.sup.Link(ctx, api.LinkRequest{Target: api.Target{Session: "other-gone"}, Origin: "mcp:x"}); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("stale unlink outside the allowlist: %v", err)
	}

	// Acknowledgements by MCP clients are refused when read-only.
	h, _ = setup(t, api.PolicyConfig{ReadOnly: true})
	if _, err := h.sup.AckAll(ctx, "mcp:x"); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("read-only ack all: %v", err)
	}
	if _, err := h.sup.Ack(ctx, "w1", "mcp:x"); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("read-only ack: %v", err)
	}
	if _, err := h.sup.Ack(ctx, "w-none", "cli"); !errors.Is(err, api.ErrUnknownWake) {
		t.Fatalf("operator ack of an unknown wake: %v", err)
	}
}
