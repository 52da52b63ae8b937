package notify

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

func TestKeepEnds(t *testing.T) {
	for _, tc := range []struct {
		n, slots int
		want     []int
	}{
		{0, 3, []int{}},
		{2, 3, []int{0, 1}},
		{3, 3, []int{0, 1, 2}},
		{4, 3, []int{0, 1, 3}},
		{4, 2, []int{0, 3}},
		{9, 2, []int{0, 8}},
		{5, 1, []int{4}},
		{3, 0, nil},
	} {
		if got := KeepEnds(tc.n, tc.slots); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("KeepEnds(%d, %d) = %v, want %v", tc.n, tc.slots, got, tc.want)
		}
	}
}

// A Claude Code permission prompt has four options; ntfy shows three
// buttons. The push keeps Yes and No (the first and the last), links the
// page for the rest, lists every option in its body and says what is
// being approved; each button's token names the wake's prompt.
func TestNtfyFourOptionsKeepYesAndNo(t *testing.T) {
	signer, err := NewSigner([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(2e9, 0)
	links := &Links{Base: "https://box:8889", Signer: signer, Clock: func() time.Time { return now }}
	ev := api.Wake{ID: "w0000000007-abc", Reason: api.ReasonAwaitingInput, Session: "orch-db", Pane: "%4",
		Question: "Do you want to proceed?", Details: "npm run migrate -- --env production --drop-all-tables",
		Options: []string{"Yes", "Yes, and don't ask again for npm run commands", "Yes, auto mode", "No"}, Prompt: "p00112233"}
	n := &Ntfy{URL: "https://ntfy.sh/topic", Links: links}
	_, msg, err := n.Build(ForWake(ev))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, a := range msg.Actions {
		labels = append(labels, a.Label)
		if a.Action != "http" {
			continue
		}
		u, _ := url.Parse(a.URL)
		act, err := signer.Verify(u.Query().Get("t"), now)
		if err != nil || act.Wake != ev.ID || act.Prompt != ev.Prompt {
			t.Fatalf("button %q token = %+v, %v", a.Label, act, err)
		}
		if want := slices.Index(ev.Options, a.Label) + 1; act.Option != want {
			t.Fatalf("button %q answers option %d, want %d", a.Label, act.Option, want)
		}
	}
	if want := []string{"Yes", "No", "Open system3"}; !slices.Equal(labels, want) {
		t.Fatalf("buttons %v, want %v", labels, want)
	}
	for _, o := range ev.Options {
		if !strings.Contains(msg.Message, o) {
			t.Fatalf("body does not list %q:\n%s", o, msg.Message)
		}
	}
	if !strings.Contains(msg.Message, "About: npm run migrate -- --env production --drop-all-tables") {
		t.Fatalf("body does not say what is approved:\n%s", msg.Message)
	}
}

// An agent's question reaches Slack and Mattermost as text: no channel
// ping, no link disguised as system3's page.
func TestWebhookEscapesMarkup(t *testing.T) {
	ev := api.Wake{ID: "w1", Reason: api.ReasonAwaitingInput, Session: "orch-x", Pane: "%1",
		Question: "<!channel> URGENT @here approve at <https://evil.example/sso|https://127.0.0.1:8889/web/> & now",
		Options:  []string{"Yes", "No"}}
	b := (&Webhook{}).Build(ForWake(ev))
	for _, bad := range []string{"<!channel>", "<https://", "@here", " & "} {
		if strings.Contains(b.Text, bad) {
			t.Errorf("webhook text keeps %q: %s", bad, b.Text)
		}
	}
	for _, want := range []string{"&lt;!channel&gt;", "&lt;https://evil.example/sso|https://127.0.0.1:8889/web/&gt;", "@\u200bhere", "&amp; now"} {
		if !strings.Contains(b.Text, want) {
			t.Errorf("webhook text lacks %q: %s", want, b.Text)
		}
	}
	if b.Wake == nil || b.Wake.Question != ev.Question {
		t.Errorf("the wake in the body is not the wake as raised: %+v", b.Wake)
	}
}
