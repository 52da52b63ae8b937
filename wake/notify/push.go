package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Paths of the web page that push messages link to (served by mcpserver/web).
const (
	PagePath   = "/web/"
	ActionPath = "/web/act"
)

// sendTimeout bounds one HTTP delivery.
const sendTimeout = 15 * time.Second

// Links makes the URLs a push message carries: the web page, and one
// signed action link per option of a prompt.
type Links struct {
	// Base is where the phone reaches system3 (notify.ntfy.actions_url),
	// e.g. https://box.tailnet.ts.net:8889; empty: no links.
	Base   string
	Signer *Signer
	// TTL is how long action links answer (default DefaultActionTTL).
	TTL   time.Duration
	Clock func() time.Time
}

// Page is the web page's URL, or "".
func (l *Links) Page() string {
	if l == nil || l.Base == "" {
		return ""
	}
	return strings.TrimRight(l.Base, "/") + PagePath
}

// Action is the URL that answers option (1-based) of ev, or "" when links
// are off.
func (l *Links) Action(ev api.Wake, option int) string {
	if l == nil || l.Base == "" || l.Signer == nil || ev.ID == "" {
		return ""
	}
	ttl, now := l.TTL, time.Now
	if ttl <= 0 {
		ttl = DefaultActionTTL
	}
	if l.Clock != nil {
		now = l.Clock
	}
	return strings.TrimRight(l.Base, "/") + ActionPath + "?t=" + url.QueryEscape(l.Signer.Sign(ev.ID, option, ev.Prompt, now().Add(ttl)))
}

// KeepEnds picks which of n options get one of slots buttons: all when
// they fit, else the first ones and the last (the usual Yes … No), the
// options in the middle dropped. The message's body lists every option.
func KeepEnds(n, slots int) []int {
	if slots <= 0 || n <= 0 {
		return nil
	}
	out := make([]int, 0, min(n, slots))
	if n <= slots {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	for i := range slots - 1 {
		out = append(out, i)
	}
	return append(out, n-1)
}

// Ntfy publishes to an ntfy topic (https://ntfy.sh or a self-hosted
// server) with its JSON publishing API.
type Ntfy struct {
	// URL is the topic URL, e.g. https://ntfy.sh/my-system3-topic.
	URL   string
	Token string // access token (tk_...) or empty
	// Priority per reason (1..5); missing reasons use DefaultPriority.
	Priority map[api.Reason]int
	Links    *Links
	Client   *http.Client
}

// ntfyMaxActions is ntfy's limit of action buttons per message.
const ntfyMaxActions = 3

// DefaultPriority is the ntfy priority of each reason unless configured:
// its row's (api.ReasonInfo.Priority).
func DefaultPriority(r api.Reason) int { return r.Info().Priority }

// NtfyAction is one action button of an ntfy message.
type NtfyAction struct {
	Action  string            `json:"action"` // view, http
	Label   string            `json:"label"`
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Clear   bool              `json:"clear,omitempty"`
}

// NtfyMessage is ntfy's JSON publishing body.
type NtfyMessage struct {
	Topic    string       `json:"topic"`
	Title    string       `json:"title,omitempty"`
	Message  string       `json:"message"`
	Tags     []string     `json:"tags,omitempty"`
	Priority int          `json:"priority,omitempty"`
	Click    string       `json:"click,omitempty"`
	Actions  []NtfyAction `json:"actions,omitempty"`
}

// Name is "ntfy".
func (n *Ntfy) Name() string { return "ntfy" }

// Build makes the JSON body of m: each option of a prompt is an http
// action that answers it. ntfy shows at most three buttons: with more
// options, the first and the last keep theirs (KeepEnds) beside "Open
// system3", and the body lists them all.
func (n *Ntfy) Build(m Message) (base string, msg NtfyMessage, err error) {
	u, err := url.Parse(n.URL)
	if err != nil || u.Scheme == "" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
		return "", msg, fmt.Errorf("notify.ntfy.url %q is not a topic URL (like https://ntfy.sh/my-topic)", n.URL)
	}
	topic := strings.Trim(u.Path, "/")
	if i := strings.LastIndex(topic, "/"); i >= 0 {
		u.Path, topic = "/"+topic[:i], topic[i+1:]
	} else {
		u.Path = "/"
	}
	ev := m.Wake()
	msg = NtfyMessage{Topic: topic, Title: m.Title, Message: m.Body, Tags: []string{"system3", string(ev.Reason)}, Priority: n.priority(m)}
	if m.Body == "" {
		msg.Message = m.Title
	}
	msg.Click = n.Links.Page()
	if !m.Digest() && ev.Reason == api.ReasonAwaitingInput {
		slots := ntfyMaxActions
		if len(ev.Options) > slots && msg.Click != "" {
			slots-- // room for "Open system3", where every option is
		}
		for _, i := range KeepEnds(len(ev.Options), slots) {
			a := n.Links.Action(ev, i+1)
			if a == "" {
				break
			}
			msg.Actions = append(msg.Actions, NtfyAction{Action: "http", Label: Clean(ev.Options[i], 40), URL: a, Method: http.MethodPost, Clear: true})
		}
	}
	if p := n.Links.Page(); p != "" && len(msg.Actions) < ntfyMaxActions {
		msg.Actions = append(msg.Actions, NtfyAction{Action: "view", Label: "Open system3", URL: p})
	}
	return u.String(), msg, nil
}

func (n *Ntfy) priority(m Message) int {
	best := 0
	for _, ev := range m.Wakes {
		p, ok := n.Priority[ev.Reason]
		if !ok {
			p = DefaultPriority(ev.Reason)
		}
		best = max(best, p)
	}
	if best == 0 {
		best = 3
	}
	return best
}

// Send publishes m.
func (n *Ntfy) Send(ctx context.Context, m Message) error {
	base, msg, err := n.Build(m)
	if err != nil {
		return err
	}
	hdr := map[string]string{}
	if n.Token != "" {
		hdr["Authorization"] = "Bearer " + n.Token
	}
	return postJSON(ctx, n.Client, base, hdr, msg)
}

// Webhook posts JSON a Slack or Mattermost incoming webhook accepts
// ("text"), with the whole wake (or the digest's wakes) beside it.
type Webhook struct {
	URL    string
	Links  *Links
	Client *http.Client
}

// WebhookBody is what Webhook posts.
type WebhookBody struct {
	Text  string     `json:"text"`
	Title string     `json:"title"`
	Body  string     `json:"body"`
	URL   string     `json:"url,omitempty"` // the web page
	Wake  *api.Wake  `json:"wake,omitempty"`
	Wakes []api.Wake `json:"wakes"`
	Test  bool       `json:"test,omitempty"`
}

// Name is "webhook".
func (w *Webhook) Name() string { return "webhook" }

// Build makes the JSON body of m. Its text is for Slack and Mattermost,
// which read markup in it: the title and body (an agent's question, file
// names, commands) are escaped so they show as written and can neither
// ping a channel nor disguise a link.
func (w *Webhook) Build(m Message) WebhookBody {
	text := "*" + chatEscape(m.Title) + "*"
	if m.Body != "" {
		text += "\n" + chatEscape(m.Body)
	}
	b := WebhookBody{Title: m.Title, Body: m.Body, URL: w.Links.Page(), Wakes: m.Wakes, Test: m.Test}
	if p := b.URL; p != "" {
		text += "\n" + p
	}
	b.Text = text
	if len(m.Wakes) == 1 {
		ev := m.Wakes[0]
		b.Wake = &ev
	}
	return b
}

// Send posts m.
func (w *Webhook) Send(ctx context.Context, m Message) error {
	if _, err := url.Parse(w.URL); err != nil || !strings.HasPrefix(w.URL, "http") {
		return fmt.Errorf("notify.webhook.url %q is not an http(s) URL", w.URL)
	}
	return postJSON(ctx, w.Client, w.URL, nil, w.Build(m))
}

// chatEscaper escapes what Slack's and Mattermost's message text read as
// markup: &, < and > (links, <!channel> and <@user> mentions), and breaks
// the @channel, @here, @all and @everyone mentions with a zero-width space.
var chatEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;",
	"@channel", "@\u200bchannel", "@here", "@\u200bhere", "@all", "@\u200ball", "@everyone", "@\u200beveryone")

func chatEscape(s string) string { return chatEscaper.Replace(s) }

func postJSON(ctx context.Context, c *http.Client, u string, hdr map[string]string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s: %s", req.URL.Host, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}
