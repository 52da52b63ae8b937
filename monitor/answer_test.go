package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
)

// showScreen puts a screen on a pane, as the agent drew it, and says the
// pane printed.
func (f *fakeTmux) showScreen(pane, screen string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.screens[pane] = screen
	for i := range f.panes {
		if f.panes[i].ID == pane {
			f.panes[i].Activity = f.panes[i].Activity.Add(1e9)
		}
	}
}

func bashPrompt(t *testing.T, command string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "captures", "claude", "permission_bash.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "./deploy.sh --prod", command)
}

func answerHarness(t *testing.T) (*harness, *recordingSender) {
	t.Helper()
	snd := &recordingSender{}
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Send, c.Audit = snd, audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.tm.showScreen("%1", bashPrompt(t, "npm run migrate -- --env staging"))
	h.step()
	return h, snd
}

// The same question about another command is another prompt: a new wake,
// the first resolved, each naming the command that was on screen, even
// with no other state between them.
func TestChangedPromptIsANewWake(t *testing.T) {
	h, _ := answerHarness(t)
	first := h.unacked(api.ReasonAwaitingInput)
	if len(first) != 1 || !strings.Contains(first[0].Details, "--env staging") || first[0].Prompt == "" {
		t.Fatalf("first wake = %+v", first)
	}
	h.tm.showScreen("%1", bashPrompt(t, "npm run migrate -- --env production --drop-all-tables"))
	h.step()
	all := h.allWakes(api.ReasonAwaitingInput)
	if len(all) != 2 {
		t.Fatalf("%d awaiting_input wakes, want 2: %+v", len(all), all)
	}
	if !all[0].Resolved || all[0].Resolution != "the prompt changed" {
		t.Fatalf("the first wake = %+v, want resolved: the prompt changed", all[0])
	}
	if all[1].Resolved || !strings.Contains(all[1].Details, "--drop-all-tables") || all[1].Prompt == first[0].Prompt || all[1].Question != first[0].Question {
		t.Fatalf("the second wake = %+v", all[1])
	}
	if s := h.session("%1"); s.Prompt != all[1].Prompt {
		t.Fatalf("the session's prompt %q is not the open wake's %q", s.Prompt, all[1].Prompt)
	}
}

// Two answers to one prompt: the first types and resolves the wake,
// saying who answered; the second, however soon, is refused and types
// nothing, although the registry has not seen the screen change.
func TestSecondAnswerIsRefused(t *testing.T) {
	h, snd := answerHarness(t)
	ctx := context.Background()
	res, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Answer: "2", Origin: "cli"})
	if err != nil || !res.Delivered {
		t.Fatalf("first answer: %+v, %v", res, err)
	}
	w := h.allWakes(api.ReasonAwaitingInput)
	if len(w) != 1 || !w[0].Resolved || !strings.HasPrefix(w[0].Resolution, "answered by cli: Yes, and don") {
		t.Fatalf("wake after the answer = %+v", w)
	}
	_, err = h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Answer: "1", Origin: "mcp:claude"})
	if !errors.Is(err, api.ErrPromptChanged) || !strings.Contains(err.Error(), "answered already") {
		t.Fatalf("second answer: %v", err)
	}
	if len(snd.calls) != 1 {
		t.Fatalf("sent %q, want only the first answer's keys", snd.calls)
	}
	// The agent moves on and asks again at once: an answer that names no
	// prompt, right after the first, may be meant for the first, and is
	// refused; one naming the new prompt, or one a moment later, types.
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.tm.showScreen("%1", bashPrompt(t, "npm run migrate -- --env staging"))
	h.step()
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Answer: "1", Origin: "tui"}); !errors.Is(err, api.ErrPromptChanged) || !strings.Contains(err.Error(), "names no prompt") {
		t.Fatalf("an unnamed answer right after another: %v", err)
	}
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Prompt: h.session("%1").Prompt, Answer: "1", Origin: "tui"}); err != nil {
		t.Fatalf("an answer naming the prompt asked again: %v", err)
	}
	if len(snd.calls) != 2 {
		t.Fatalf("sent %q", snd.calls)
	}
	h.tm.show(t, "%1", "claude", "claude/working_spinner.ansi.txt")
	h.step()
	h.tm.showScreen("%1", bashPrompt(t, "npm run migrate -- --env staging"))
	h.step()
	h.clock.Add(recentAnswer)
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Target: api.Target{Session: "orch-1"}, Answer: "1", Origin: "tui"}); err != nil {
		t.Fatalf("an unnamed answer a while after the last: %v", err)
	}
	if len(snd.calls) != 3 {
		t.Fatalf("sent %q", snd.calls)
	}
}

// An answer for a prompt that is no longer on screen is refused: the
// registry still shows the old prompt, but the pane, read right before
// typing, shows another; a wake's id and a prompt identity name it too.
func TestAnswerWhilePromptReplaced(t *testing.T) {
	h, snd := answerHarness(t)
	ctx := context.Background()
	ev := h.unacked(api.ReasonAwaitingInput)[0]
	// The pane changes; the monitors have not captured it yet.
	h.tm.showScreen("%1", bashPrompt(t, "rm -rf /srv/data"))
	for _, req := range []api.AnswerRequest{
		{Target: api.Target{Session: "orch-1"}, Answer: "yes", Origin: "cli"},
		{Wake: ev.ID, Answer: "yes", Origin: "web:action"},
		{Target: api.Target{Pane: "%1"}, Prompt: ev.Prompt, Answer: "1", Origin: "mcp:claude"},
	} {
		_, err := h.sup.Answer(ctx, req)
		if !errors.Is(err, api.ErrPromptChanged) || !strings.Contains(err.Error(), "rm -rf /srv/data") {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	if len(snd.calls) != 0 {
		t.Fatalf("a stale answer typed %q", snd.calls)
	}
	// The wake raised for the new prompt answers; the old wake's id is
	// refused as resolved.
	h.step()
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Wake: ev.ID, Answer: "yes", Origin: "web:action"}); !errors.Is(err, api.ErrPromptChanged) || !strings.Contains(err.Error(), "resolved (the prompt changed)") {
		t.Fatalf("the old wake's answer: %v", err)
	}
	cur := h.unacked(api.ReasonAwaitingInput)
	if len(cur) != 1 || cur[0].ID == ev.ID {
		t.Fatalf("open wakes = %+v", cur)
	}
	if _, err := h.sup.Answer(ctx, api.AnswerRequest{Wake: cur[0].ID, Answer: "no", Origin: "web:action"}); err != nil {
		t.Fatalf("the new wake's answer: %v", err)
	}
	if s := h.session("%1"); s.State != api.AwaitingInput || len(snd.calls) != 1 {
		t.Fatalf("session %+v, sent %q", s, snd.calls)
	}
}

// An acknowledgement passes the policy and is audited under the origin
// the policy judged; a refused one too.
func TestAckIsAudited(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) {
		p, err := api.NewPolicy(api.PolicyConfig{ReadOnly: true}, c.Clock)
		if err != nil {
			t.Fatal(err)
		}
		c.Policy, c.Audit = p, audit.Open(dir)
	})
	h.tm.show(t, "%1", "claude", "claude/permission_bash.txt")
	h.step()
	ev := h.unacked(api.ReasonAwaitingInput)[0]
	if _, err := h.sup.Ack(context.Background(), ev.ID, "mcp:x"); !errors.Is(err, api.ErrRefused) {
		t.Fatalf("a read-only MCP client acked: %v", err)
	}
	if _, err := h.sup.Ack(context.Background(), ev.ID, "tui"); err != nil {
		t.Fatal(err)
	}
	entries, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Action == "ack" {
			got = append(got, fmt.Sprintf("%s %s %s sent=%v", e.Origin, e.Target, e.Phase, e.Sent))
		}
	}
	if want := []string{"mcp:x " + ev.ID + " refused sent=false", "tui " + ev.ID + "  sent=true"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ack entries %q, want %q", got, want)
	}
}

// A pane awaiting input by a hook's word, with no prompt on its screen,
// has no keys to choose: an answer types nothing.
func TestAnswerNeedsAPromptOnScreen(t *testing.T) {
	snd := &recordingSender{}
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Send, c.Audit = snd, audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	h.hook(api.HookEvent{Name: api.PermissionRequest, Pane: "%1", ToolName: "Bash"})
	h.sup.flush(context.Background())
	if s := h.session("%1"); s.State != api.AwaitingInput || s.Prompt != "" {
		t.Fatalf("after the hook: %+v", s)
	}
	if _, err := h.sup.Answer(context.Background(), api.AnswerRequest{Target: api.Target{Pane: "%1"}, Answer: "1", Origin: "cli"}); !errors.Is(err, api.ErrNotAwaiting) {
		t.Fatalf("answer with no prompt on screen: %v", err)
	}
	if len(snd.calls) != 0 {
		t.Fatalf("typed %q", snd.calls)
	}
}

// An agent that redraws what an option covers (Claude Code works out the
// scope of "don't ask again" after its dialog appears) shows the same
// prompt: no second wake. An answer choosing the redrawn option is
// refused, since it would grant what its answerer never saw; one choosing
// an option that reads as it did types.
func TestRedrawnOptionScopeIsTheSamePrompt(t *testing.T) {
	h, snd := answerHarness(t)
	ctx := context.Background()
	screen := func(scope string) string {
		return strings.ReplaceAll(bashPrompt(t, "./migrate.sh --env staging"), "for: ./deploy.sh *", "for: "+scope)
	}
	h.tm.showScreen("%1", screen("./migrate.sh --env staging"))
	h.step()
	open := h.unacked(api.ReasonAwaitingInput)
	if len(open) != 1 || !strings.Contains(open[0].Options[1], "for: ./migrate.sh --env staging") {
		t.Fatalf("open wakes = %+v", open)
	}
	ev := open[0]
	h.tm.showScreen("%1", screen("./migrate.sh *"))
	h.step()
	// The harness's first prompt was another command's: its wake, then
	// this one's, and no third.
	if all := h.allWakes(api.ReasonAwaitingInput); len(all) != 2 || all[1].ID != ev.ID || all[1].Resolved {
		t.Fatalf("after the redraw, awaiting_input wakes = %+v, want the last %s, open", all, ev.ID)
	}
	if s := h.session("%1"); s.Prompt != ev.Prompt || !strings.Contains(s.Options[1], "./migrate.sh *") {
		t.Fatalf("session after the redraw = %+v", s)
	}
	_, err := h.sup.Answer(ctx, api.AnswerRequest{Wake: ev.ID, Answer: "2", Origin: "web:action"})
	if !errors.Is(err, api.ErrPromptChanged) || !strings.Contains(err.Error(), "reads differently") {
		t.Fatalf("choosing the redrawn option: %v", err)
	}
	if len(snd.calls) != 0 {
		t.Fatalf("typed %q", snd.calls)
	}
	if res, err := h.sup.Answer(ctx, api.AnswerRequest{Wake: ev.ID, Answer: "yes", Origin: "web:action"}); err != nil || !res.Delivered {
		t.Fatalf("choosing Yes, which reads as it did: %+v, %v", res, err)
	}
	if len(snd.calls) != 1 {
		t.Fatalf("typed %q", snd.calls)
	}
}
