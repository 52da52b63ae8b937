package wakebrief

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

func TestBriefForEveryReason(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, r := range api.Reasons() {
		ev := api.Wake{ID: "w0000000007-abc", Seq: 7, Reason: r, Session: "orch-a", Pane: "%4", Agent: "codex", Time: now.Add(-3 * time.Second), Details: "boom\nsecond line"}
		out := Write(ev, Options{Now: now, More: 2, Next: "system3 wait --for-agent --since 7"})
		for _, want := range []string{"system3 wake w0000000007-abc: " + string(r) + " in orch-a %4 (2 more wakes wait after it)", "Raised 3s ago; open.", UntrustedLine, "system3 ack w0000000007-abc", "  system3 wait --for-agent --since 7"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: brief lacks %q:\n%s", r, want, out)
			}
		}
		if r != api.ReasonAwaitingInput && !strings.Contains(out, "details:\n  │ boom\n  │ second line\n") {
			t.Errorf("%s: the details are not quoted:\n%s", r, out)
		}
		if strings.Contains(out, "leave it to a person") != r.NeedsPerson() {
			t.Errorf("%s: 'leave it to a person' offered for information, or missing for what needs a person:\n%s", r, out)
		}
	}
}

// A wake of another host names HOST:%PANE and HOST:ID; a resolved prompt
// offers no answer; with no next wait, the brief says system3 types the
// next one; a wake a remote daemon sent with hostile fields stays text.
func TestBriefHostsAndResolved(t *testing.T) {
	ev := api.Wake{ID: "w0000000009-abc", Reason: api.ReasonAwaitingInput, Session: "orch-b", Pane: "%2", Agent: "claude", Kind: "permission",
		Question: "Proceed?", Options: []string{"Yes", "No"}, Prompt: "p1", Time: time.Now()}
	out := Write(ev, Options{Now: time.Now(), Host: "web1", More: -1, Program: "/opt/s3/system3"})
	for _, want := range []string{"in web1:orch-b %2", "/opt/s3/system3 answer --wake web1:w0000000009-abc 1-2|yes|no", "/opt/s3/system3 inject --pane web1:%2 'TEXT'", "system3 types the next wake here once you are idle"} {
		if !strings.Contains(out, want) {
			t.Errorf("brief lacks %q:\n%s", want, out)
		}
	}
	ev.Resolved, ev.Resolution = true, "answered by tui: Yes"
	if out := Write(ev, Options{Now: time.Now()}); strings.Contains(out, "answer --wake") || !strings.Contains(out, "resolved (answered by tui: Yes)") {
		t.Errorf("a resolved wake's brief:\n%s", out)
	}
	ev.Reason = "x\x1b]0;pwned\x07"
	ev.ID = "w1'; rm -rf ~; '"
	out = Write(ev, Options{Now: time.Now()})
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `'w1'\''; rm -rf ~; '\'''`) {
		t.Errorf("hostile fields:\n%q", out)
	}
}
