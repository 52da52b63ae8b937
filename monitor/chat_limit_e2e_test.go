package monitor

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/chattest"
)

var saveChatAfterLimit = flag.Bool("update-chat-after-limit-captures", false,
	"save the screens of GitHub Copilot CLI, Qwen Code, Cline and the Gemini CLI answering system3's continue after a usage limit to testdata/captures/<cli>/idle_after_limit.txt")

// chatResumeDelay is the monitors' ResumeDelay here: these screens name
// the reset to the second (a wait read when first seen, or a time with
// seconds), so a few seconds past it are past the reset.
const chatResumeDelay = 5 * time.Second

// TestRealChatResumeAfterLimit: GitHub Copilot CLI, Qwen Code and Cline end
// their turn at a usage limit whose reset the screen names, and wait at
// their prompt, never going on by themselves. With resume_after_limit on,
// once the reset has passed the monitors type "continue" at the prompt,
// once: the fake API sees that request after the reset, the CLI answers
// it, the audit log has the one continue under the resume origin, and the
// limit's wake says system3 continued it.
//
// The reset is near: Qwen Code's quota names it ("will reset at <time>
// UTC"), 40 s on; Copilot's provider names a wait of a minute in its
// message ("Please try again in 1m0s.") with a Retry-After beyond what
// Copilot waits out by itself (it waits out two minutes behind its
// Working footer, and gives up at once on five), so Copilot shows the
// limit at once. Cline shows the same message once its five retries
// (about a minute) are spent.
func TestRealChatResumeAfterLimit(t *testing.T) {
	for _, tc := range []struct {
		cli   chattest.CLI
		limit func(reset time.Time) chattest.APIError
		rule  string
		// wait bounds each wait for a state: Cline retries for a minute.
		wait time.Duration
	}{
		{chattest.Copilot, func(time.Time) chattest.APIError {
			e := chattest.UsageLimit(time.Minute)
			e.Header.Set("Retry-After", "3600")
			return e
		}, "copilot.usage_limit", 60 * time.Second},
		{chattest.Qwen, chattest.QuotaResets, "qwen.usage_limit", 60 * time.Second},
		{chattest.Cline, func(time.Time) chattest.APIError { return chattest.UsageLimit(time.Minute) }, "cline.usage_limit", 150 * time.Second},
	} {
		t.Run(string(tc.cli), func(t *testing.T) {
			t.Parallel()
			fake := chattest.NewFakeAPI(t, chattest.Rule{Contains: "continue", Steps: []chattest.Step{{Text: "Continued fine."}}},
				chattest.Rule{Contains: "hello there", Steps: []chattest.Step{{Text: "Hello."}}})
			cs := chattest.Start(t, tc.cli, chattest.Options{API: fake})
			dir := t.TempDir()
			m := watchLive(t, cs.Socket(), cs.Pane, cs.Capture, tc.wait, func(c *Config) {
				c.Cmdlines = ProcessCmdlines
				c.ResumeAfterLimit, c.ResumeDelay, c.Audit, c.Zone = true, chatResumeDelay, audit.Open(dir), PaneZone
			})
			m.waitState(api.Idle, "")
			reset := time.Now().Add(40 * time.Second).Truncate(time.Second)
			fake.FailNext(1000, tc.limit(reset))
			cs.Send("hello there")
			s := m.waitState(api.RateLimited, "")
			fake.FailNext(0, chattest.APIError{})
			limited := len(fake.Requests())
			if s.Evidence.Rule != tc.rule || s.ResetsAt.IsZero() || time.Until(s.ResetsAt) > 70*time.Second {
				t.Fatalf("at the limit: %+v", s)
			}
			if ev := m.waitWake(api.ReasonUsageLimit); !ev.ResetsAt.Equal(s.ResetsAt) || !strings.Contains(ev.SuggestedAction, `system3 types "continue" at its prompt`) {
				t.Fatalf("usage_limit wake = %+v", ev)
			}

			// The continue, after the reset.
			var cont chattest.Request
			cs.WaitFor("the continue's request", time.Until(s.ResetsAt)+chatResumeDelay+time.Minute, func(string) bool {
				for _, q := range fake.Requests()[limited:] {
					if q.Kind == chattest.KindMain && strings.Contains(q.Prompt, "continue") {
						cont = q
						return true
					}
				}
				return false
			})
			if cont.Time.Before(s.ResetsAt) {
				t.Fatalf("the continue was sent at %s, before the reset at %s", cont.Time.Format(time.TimeOnly), s.ResetsAt.Format(time.TimeOnly))
			}
			cs.WaitForText("Continued fine.", 60*time.Second)
			// Idle, the limit of the turn before still on screen.
			m.waitState(api.Idle, "")
			if *saveChatAfterLimit {
				screen := cs.WaitStable(time.Second, 10*time.Second)
				if err := os.WriteFile(filepath.Join("testdata", "captures", string(tc.cli), "idle_after_limit.txt"), []byte(screen), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			es, err := audit.Read(filepath.Join(dir, audit.File))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			es = slices.DeleteFunc(es, func(e api.AuditEntry) bool { return e.Origin != api.ResumeOrigin })
			if len(es) != 1 || es[0].Text != "continue" || !es[0].Sent || es[0].Pane != cs.Pane {
				t.Fatalf("audited continues = %+v", es)
			}
			w, err := m.store.List(api.WakeFilter{Reasons: []api.Reason{api.ReasonUsageLimit}, IncludeAcked: true, IncludeResolved: true})
			if err != nil || len(w) != 1 || w[0].Resolution != `continued by system3 after the reset (resume_after_limit): typed "continue"` {
				t.Fatalf("usage_limit wakes = %+v, %v", w, err)
			}
			mains := 0
			for _, q := range fake.Requests()[limited:] {
				if q.Kind == chattest.KindMain {
					mains++
				}
			}
			if mains != 1 {
				t.Fatalf("%d requests after the limit, want the continue alone:\n%s", mains, fake.Summary())
			}
			t.Logf("%s: reset %s, continue typed %s, its request %s", tc.cli, s.ResetsAt.Format(time.TimeOnly), es[0].Time.Format(time.TimeOnly), cont.Time.Format(time.TimeOnly))
		})
	}
}
