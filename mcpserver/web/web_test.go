package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/wake/notify"
)

var promptSession = func() api.Session {
	s := api.Session{Pane: "%3", Session: "orch-billing", Target: "orch-billing:0.0", Agent: "claude",
		State: api.AwaitingInput, Kind: "permission", Question: "Do you want to proceed?", Detail: "npm run migrate -- --env staging", Options: []string{"Yes", "No"}}
	s.Prompt = api.PromptIdentity(s.Agent, s.Kind, s.Question, s.Detail, s.Options)
	return s
}()

func setup(t *testing.T) (*monitortest.Service, *Handler, *notify.Signer, *httptest.Server) {
	t.Helper()
	svc := monitortest.NewService(t, nil)
	svc.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{promptSession}})
	signer, err := notify.NewSigner([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(svc, Options{StateDir: testkit.StateDir(t), Signer: signer, Token: "bearer-token"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return svc, h, signer, srv
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The signed action links: each answers exactly its option of its wake,
// once, while the prompt is unchanged; nothing else gets through.
func TestActionLinks(t *testing.T) {
	svc, _, signer, srv := setup(t)
	ev := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%3", Session: "orch-billing", Pane: "%3",
		Question: promptSession.Question, Options: promptSession.Options, Details: promptSession.Detail, Prompt: promptSession.Prompt})
	other := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%9", Session: "x", Pane: "%9", Question: "Other?", Options: []string{"Yes"}, Prompt: "pother"})
	p := ev.Prompt
	now := time.Now()
	post := func(tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+notify.ActionPath+"?t="+url.QueryEscape(tok), nil)
		return do(t, req)
	}
	for _, tc := range []struct {
		name string
		tok  string
		want int
	}{
		{"no token", "", http.StatusForbidden},
		{"another key", mustSigner(t, "o").Sign(ev.ID, 1, p, now.Add(time.Hour)), http.StatusForbidden},
		{"expired", signer.Sign(ev.ID, 1, p, now.Add(-time.Minute)), http.StatusForbidden},
		{"no such wake", signer.Sign("w9", 1, p, now.Add(time.Hour)), http.StatusNotFound},
		{"option out of range", signer.Sign(ev.ID, 3, p, now.Add(time.Hour)), http.StatusBadRequest},
		{"the prompt is no longer on screen", signer.Sign(other.ID, 1, other.Prompt, now.Add(time.Hour)), http.StatusConflict},
		{"a link signed for another prompt of the wake", signer.Sign(ev.ID, 1, "panother", now.Add(time.Hour)), http.StatusConflict},
		{"a link without a prompt (an older system3's)", signer.Sign(ev.ID, 1, "", now.Add(time.Hour)), http.StatusConflict},
	} {
		if code, body := post(tc.tok); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	if n := len(svc.Calls()); n != 0 {
		t.Fatalf("refused links made %d calls", n)
	}
	code, body := post(signer.Sign(ev.ID, 2, p, now.Add(time.Hour)))
	if code != http.StatusOK || !strings.Contains(body, "answered “No”") {
		t.Fatalf("action: %d %s", code, body)
	}
	calls := svc.Calls()
	if len(calls) != 1 || calls[0].Answer != "2" || calls[0].Target.Pane != "%3" || calls[0].Origin != ActionOrigin || calls[0].Prompt != p {
		t.Fatalf("calls = %+v", calls)
	}
	// The wake is acknowledged: a second tap does nothing.
	if code, body := post(signer.Sign(ev.ID, 1, p, now.Add(time.Hour))); code != http.StatusConflict {
		t.Fatalf("second tap: %d %s", code, body)
	}
	if len(svc.Calls()) != 1 {
		t.Fatal("a second tap answered again")
	}
	// A resolved wake's link is refused, and the page it opens says so.
	next := svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%3", Session: "orch-billing", Pane: "%3", Prompt: p, Options: []string{"Yes", "No"}})
	if err := svc.Store.Resolve(next.Key, "answered by cli: Yes"); err != nil {
		t.Fatal(err)
	}
	if code, body := post(signer.Sign(next.ID, 1, p, now.Add(time.Hour))); code != http.StatusConflict || !strings.Contains(body, "resolved (answered by cli: Yes)") {
		t.Fatalf("a resolved wake's link: %d %s", code, body)
	}
	if len(svc.Calls()) != 1 {
		t.Fatal("a resolved wake's link answered")
	}
}

func mustSigner(t *testing.T, c string) *notify.Signer {
	s, err := notify.NewSigner([]byte(strings.Repeat(c, 32)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Sign-in codes work once and expire; the page needs the cookie or the
// bearer token; forms need the CSRF token and the page's own origin.
func TestSignInAndWriteChecks(t *testing.T) {
	svc, h, _, srv := setup(t)
	get := func(path string, mod func(*http.Request)) (int, string, *http.Response) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if mod != nil {
			mod(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	if code, _, _ := get("/web/", nil); code != http.StatusUnauthorized {
		t.Fatalf("page without cookie: %d", code)
	}
	if code, body, _ := get("/web/", func(r *http.Request) { r.Header.Set("Authorization", "Bearer bearer-token") }); code != http.StatusOK || !strings.Contains(body, "Do you want to proceed?") {
		t.Fatalf("page with the bearer token: %d", code)
	}
	expired, err := NewSignInCode(h.opts.StateDir, time.Now().Add(-CodeTTL-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := get("/web/signin?code="+expired, nil); code != http.StatusUnauthorized {
		t.Fatalf("expired code: %d", code)
	}
	c, _ := NewSignInCode(h.opts.StateDir, time.Now())
	code, _, resp := get("/web/signin?code="+c, nil)
	if code != http.StatusOK || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in: %d %v", code, resp.Cookies())
	}
	cookie := resp.Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != Prefix {
		t.Fatalf("cookie = %+v", cookie)
	}
	if code, _, _ := get("/web/signin?code="+c, nil); code != http.StatusUnauthorized {
		t.Fatalf("code used twice: %d", code)
	}
	code, page, _ := get("/web/", func(r *http.Request) { r.AddCookie(cookie) })
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	_, rest, _ := strings.Cut(page, `name="csrf" content="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	post := func(origin, token string, withCookie bool) int {
		form := url.Values{"pane": {"%3"}, "answer": {"1"}}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/web/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("X-CSRF-Token", token)
		}
		if withCookie {
			req.AddCookie(cookie)
		}
		code, _ := do(t, req)
		return code
	}
	for _, tc := range []struct {
		name   string
		origin string
		token  string
		cookie bool
		want   int
	}{
		{"foreign origin", "https://evil.example", csrf, true, http.StatusForbidden},
		{"no origin or referer", "", csrf, true, http.StatusForbidden},
		{"wrong CSRF token", srv.URL, "nope", true, http.StatusForbidden},
		{"no cookie", srv.URL, csrf, false, http.StatusUnauthorized},
	} {
		if got := post(tc.origin, tc.token, tc.cookie); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if len(svc.Calls()) != 0 {
		t.Fatalf("refused posts made calls: %+v", svc.Calls())
	}
	if got := post(srv.URL, csrf, true); got != http.StatusOK {
		t.Fatalf("a good post: %d", got)
	}
	if calls := svc.Calls(); len(calls) != 1 || calls[0].Origin != Origin || calls[0].Answer != "1" {
		t.Fatalf("calls = %+v", calls)
	}
	// Revoking ends the session.
	if n, err := RevokeAll(h.opts.StateDir); err != nil || n != 1 {
		t.Fatalf("revoke: %d %v", n, err)
	}
	if code, _, _ := get("/web/", func(r *http.Request) { r.AddCookie(cookie) }); code != http.StatusUnauthorized {
		t.Fatalf("revoked cookie: %d", code)
	}
}

// An approval policy's ask (a permission request held at the agent's
// hook) shows on its session's card with the tool and its exact input,
// and its buttons answer the ask's wake, the way MCP's answer_prompt
// does; a push's action link answers it too, though it names no screen.
func TestPolicyAskOnThePage(t *testing.T) {
	svc, h, signer, srv := setup(t)
	working := api.Session{Pane: "%4", Session: "orch-deploy", Target: "orch-deploy:0.0", Agent: "claude", State: api.Working}
	svc.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{promptSession, working}})
	ask := func(pane, session, command string) api.Wake {
		return svc.Raise(t, api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/" + pane + "/policy/1", Session: session, Pane: pane,
			Kind: "permission", Evidence: api.Evidence{Source: api.PolicySource, Rule: "policy.prod-asks"},
			Question: "May claude use Bash? Bash command: " + command, Details: "Bash command: " + command, Options: []string{"Yes", "No"}})
	}
	// One held while the dialog is on screen, one before it is drawn.
	billing := ask("%3", "orch-billing", "./deploy.sh --prod eu &&\n  echo <done>")
	deploy := ask("%4", "orch-deploy", "./deploy.sh --prod us")

	c, _ := NewSignInCode(h.opts.StateDir, time.Now())
	resp, err := http.Get(srv.URL + "/web/signin?code=" + c)
	if err != nil || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in: %v", err)
	}
	resp.Body.Close()
	cookie := resp.Cookies()[0]
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/web/", nil)
	req.AddCookie(cookie)
	code, page := do(t, req)
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	_, rest, _ := strings.Cut(page, `name="csrf" content="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	_, need, _ := strings.Cut(page, `id="need"`)
	need, _, _ = strings.Cut(need, `id="wakes"`)
	for _, want := range []string{
		`data-ask="` + billing.ID + `"`, `data-ask="` + deploy.ID + `"`,
		"May claude use Bash? Bash command: ./deploy.sh --prod eu &amp;&amp;\n  echo &lt;done&gt;",
		`name="wake" value="` + billing.ID + `"`, "Yes, allow it", "No, refuse it", "policy.prod-asks",
	} {
		if !strings.Contains(need, want) {
			t.Errorf("the cards lack %q:\n%s", want, need)
		}
	}
	if strings.Contains(need, "1. Yes") {
		t.Errorf("a card with an ask offers the dialog's options too:\n%s", need)
	}
	post := func(form url.Values) (int, string) {
		form.Set("csrf", csrf)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/web/answer", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		req.Header.Set("X-CSRF-Token", csrf)
		req.AddCookie(cookie)
		return do(t, req)
	}
	if code, body := post(url.Values{"pane": {"%3"}, "wake": {billing.ID}, "answer": {"yes"}}); code != http.StatusOK {
		t.Fatalf("answer the ask: %d %s", code, body)
	}
	calls := svc.Calls()
	if len(calls) != 1 || calls[0].Wake != billing.ID || calls[0].Answer != "yes" || calls[0].Origin != Origin || calls[0].Prompt != "" {
		t.Fatalf("calls = %+v", calls)
	}
	// A push's link to an ask names no prompt: its wake is the request.
	svc.SetSnapshot(api.Snapshot{Running: true, Sessions: []api.Session{promptSession, func() api.Session {
		s := working
		s.State, s.Options = api.AwaitingInput, []string{"Yes", "No"}
		return s
	}()}})
	req, _ = http.NewRequest(http.MethodPost, srv.URL+notify.ActionPath+"?t="+url.QueryEscape(signer.Sign(deploy.ID, 2, "", time.Now().Add(time.Hour))), nil)
	if code, body := do(t, req); code != http.StatusOK {
		t.Fatalf("a push's action on an ask: %d %s", code, body)
	}
	if calls := svc.Calls(); len(calls) != 2 || calls[1].Wake != deploy.ID || calls[1].Answer != "2" || calls[1].Origin != ActionOrigin {
		t.Fatalf("calls = %+v", calls)
	}
}
