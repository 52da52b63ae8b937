package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tmux"
)

// chromium finds the Chromium binary: Debian's chromium, which README.md's
// prerequisites install, else the same browser under another
// distribution's name.
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		for _, name := range []string{"chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
	}
	return testkit.LookPath(t, "chromium")
}

// signInLink runs `system3 web --url base` and returns the one-time
// sign-in link it printed, and all it printed.
func signInLink(t *testing.T, env map[string]string, base string) (link, out string) {
	t.Helper()
	code, out, errOut := invoke(t, env, "web", "--url", base)
	if code != 0 {
		t.Fatalf("system3 web: %d %s", code, errOut)
	}
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, base+"/web/signin?code=") {
			link = f
		}
	}
	return link, out
}

// browser starts headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first Run starts Chromium, tied to ctx itself (a shorter-lived
	// context would end the browser with it); on a loaded machine that
	// takes a while.
	started := make(chan error, 1)
	go func() { started <- chromedp.Run(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start Chromium: %v", err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("Chromium did not start within 2 minutes")
	}
	return ctx
}

func run2(t *testing.T, ctx context.Context, what string, timeout time.Duration, actions ...chromedp.Action) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := chromedp.Run(c, actions...)
	// A navigation the page made itself (the sign-in page's refresh) can
	// replace the JavaScript context between chromedp choosing it and
	// evaluating in it: nothing ran, so running again in the new one is
	// safe.
	for try := 0; err != nil && strings.Contains(err.Error(), "Cannot find context with specified id") && try < 3 && c.Err() == nil; try++ {
		time.Sleep(100 * time.Millisecond)
		err = chromedp.Run(c, actions...)
	}
	if err != nil {
		var html string
		hc, hcancel := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Run(hc, chromedp.OuterHTML("body", &html))
		hcancel()
		t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

// The web page in real headless Chromium: sign in with the one-time link,
// see the demo's awaiting sessions, tap an option and see the pane
// answered, send guidance; requests without the cookie or from another
// origin are refused; screenshots for docs/.
func TestWebPageInChromium(t *testing.T) {
	srv := agentServer(t)
	tasksDir := filepath.Join(t.TempDir(), "tasks")
	var sessions []demoSession
	for _, ds := range demoSessions {
		if ds.Name == "orch-billing" || ds.Name == "orch-search" || ds.Name == "orch-docs" || ds.Name == "orch-auth" {
			sessions = append(sessions, ds)
		}
	}
	panes := startTestAgents(t, srv, tasksDir, sessions...)
	addr := freeAddr(t)
	base := "http://" + addr
	state := testkit.ShortDir(t)
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": tasksDir, "SYSTEM3_TMUX_SOCKET_PATH": srv.Path}
	startServeAt(t, env, addr)
	awaitStatus(t, env, srv, 60*time.Second, map[string]func(statusPane) string{
		"orch-billing": expectScript("permission", true), "orch-search": expectScript("question", true), "orch-docs": expectScript("idle", true)})

	// Nothing without signing in.
	resp, err := http.Get(base + "/web/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /web/ without a cookie: %d", resp.StatusCode)
	}

	link, out := signInLink(t, env, base)
	if link == "" || !strings.Contains(out, "▀") {
		t.Fatalf("system3 web printed no link or QR code:\n%s", out)
	}

	ctx := browser(t)
	phone := chromedp.Tasks{emulation.SetDeviceMetricsOverride(390, 844, 2, true), emulation.SetTouchEmulationEnabled(true)}
	billing := `#need .card[data-session="orch-billing"]`
	search := `#need .card[data-session="orch-search"]`
	run2(t, ctx, "sign in", 90*time.Second, phone, chromedp.Navigate(link))
	// The sign-in page moves on to /web/ by itself.
	waitLocation(t, ctx, base+"/web/")
	run2(t, ctx, "the awaiting sessions", 90*time.Second, present(billing), present(search), present(`#live.on`))
	var billingText, searchText, csrf string
	run2(t, ctx, "read the page", 30*time.Second,
		text(billing, &billingText), text(search, &searchText),
		chromedp.Evaluate(`document.querySelector('meta[name=csrf]').content`, &csrf))
	for _, want := range []string{"Do you want to proceed?", "1. Yes", "3. No"} {
		if !strings.Contains(billingText, want) {
			t.Errorf("orch-billing card lacks %q: %q", want, billingText)
		}
	}
	if !strings.Contains(searchText, "Which database should we use?") || !strings.Contains(searchText, "1. Postgres") {
		t.Errorf("orch-search card = %q", searchText)
	}
	// The link was for one use only.
	if resp, err := http.Get(link); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the sign-in link worked twice: %v %v", resp.StatusCode, err)
	}
	var cookies []*network.Cookie
	run2(t, ctx, "cookies", 10*time.Second, chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{base + "/web/"}).Do(ctx)
		return err
	}))
	var session *network.Cookie
	for _, c := range cookies {
		if c.Name == "system3_session" {
			session = c
		}
	}
	if session == nil || !session.HTTPOnly || session.SameSite != network.CookieSameSiteStrict || session.Path != "/web/" {
		t.Fatalf("session cookie = %+v", session)
	}
	screenshot(t, ctx, "web-phone.png")

	// Refusals, with the real cookie and CSRF token: another Origin, no
	// CSRF token, no cookie.
	form := url.Values{"pane": {panes["orch-search"]}, "answer": {"1"}, "csrf": {csrf}}
	for _, tc := range []struct {
		name   string
		origin string
		cookie bool
		form   url.Values
		want   int
	}{
		{"foreign origin", "http://evil.example", true, form, http.StatusForbidden},
		{"same host, other port", "http://127.0.0.1:1", true, form, http.StatusForbidden},
		{"no CSRF token", base, true, url.Values{"pane": {panes["orch-search"]}, "answer": {"1"}}, http.StatusForbidden},
		{"no cookie", base, false, form, http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodPost, base+"/web/answer", strings.NewReader(tc.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", tc.origin)
		if tc.cookie {
			req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.want)
		}
	}
	if p, _ := paneOf(statusNow(t, env), "orch-search"); p.State != "awaiting_input" {
		t.Fatalf("a refused request answered orch-search: %+v", p)
	}

	// Tap "1. Yes" on orch-billing: the pane gets the key, the agent runs
	// the command, the card leaves "Needs you" by itself.
	run2(t, ctx, "tap an option", 60*time.Second,
		tap(billing+` button.opt[value="1"]`),
		poll(`!document.querySelector('`+billing+`')`))
	c := tmux.NewClient(srv)
	waitScreenLong(t, c, panes["orch-billing"], "Bash(npm run migrate -- --env staging)")

	// Guidance to orch-docs (idle, under "Other sessions").
	docs := `#others .card[data-session="orch-docs"]`
	run2(t, ctx, "send guidance", 60*time.Second,
		tap(docs+` summary`),
		present(docs+` textarea`),
		poll(`(function(){var t=document.querySelector('`+docs+` textarea'); t.focus(); return document.activeElement===t;})()`),
		// Typed as keys into the focused box, as a person would.
		chromedp.KeyEvent("please update the changelog too"),
		tap(docs+` button.primary`),
		poll(`document.getElementById('toast').style.display==='block' && document.getElementById('toast').textContent.indexOf('guidance sent')>=0`))
	var toast string
	run2(t, ctx, "toast", 10*time.Second, text(`#toast`, &toast))
	if !strings.Contains(toast, "guidance sent to orch-docs") {
		t.Errorf("toast after guidance = %q", toast)
	}
	waitScreenLong(t, c, panes["orch-docs"], "please update the changelog too")
	audit, _ := os.ReadFile(filepath.Join(state, "audit.jsonl"))
	if strings.Count(string(audit), `"origin":"web"`) < 2 {
		t.Errorf("the audit log lacks the page's actions:\n%s", audit)
	}

	run2(t, ctx, "desktop size", 30*time.Second, emulation.SetDeviceMetricsOverride(1280, 900, 1, false),
		present(search))
	screenshot(t, ctx, "web-desktop.png")

	// Signing out revokes the cookie on the server.
	run2(t, ctx, "sign out", 30*time.Second, tap(`header form button`))
	waitLocation(t, ctx, base+"/web/signout")
	var signedOut string
	run2(t, ctx, "signed out", 10*time.Second, text(`body`, &signedOut))
	if !strings.Contains(signedOut, "Signed out.") {
		t.Errorf("after signing out the page says %q", signedOut)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/web/", nil)
	req.AddCookie(&http.Cookie{Name: session.Name, Value: session.Value})
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the cookie still works after signing out: %v %v", resp.StatusCode, err)
	}
}

// screenshot saves the page into docs/ when SYSTEM3_UPDATE_SCREENSHOTS is
// set, else into the test's temp dir (so CI does not rewrite docs/).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	run2(t, ctx, "screenshot "+name, 30*time.Second, chromedp.Evaluate(`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`, nil),
		chromedp.CaptureScreenshot(&png))
	dir := t.TempDir()
	if os.Getenv("SYSTEM3_UPDATE_SCREENSHOTS") != "" {
		dir = filepath.Join("..", "..", "docs")
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot %s is %d bytes", name, len(png))
	}
}

// waitScreenLong waits for want on the pane's screen, long enough for a
// loaded machine.
func waitScreenLong(t *testing.T, c *tmux.Client, pane, want string) {
	t.Helper()
	testkit.WaitForValue(t, 60*time.Second, fmt.Sprintf("pane %s to show %q", pane, want), func() (string, bool) {
		screen, _ := c.Capture(context.Background(), pane, tmux.CaptureOptions{})
		return screen, strings.Contains(screen, want)
	})
}

// poll waits until the JavaScript expression is true. The page replaces
// its main part on every live update, so waits look the elements up again
// each time instead of holding on to nodes.
func poll(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond))
}

// present waits until an element matching sel is shown.
func present(sel string) chromedp.Action {
	return poll(`(function(){var e=document.querySelector('` + sel + `'); return !!e && e.getClientRects().length > 0;})()`)
}

// text reads the shown text of the element matching sel as found at that
// moment. chromedp.Text finds the node first and reads it in a second call;
// a live update in between detaches the node, and a detached node reads as
// "".
func text(sel string, out *string) chromedp.Action {
	return chromedp.Evaluate(`(function(){var e=document.querySelector('`+sel+`'); if (!e) throw new Error('nothing matches the selector'); return e.innerText;})()`, out)
}

// tap clicks the element matching sel as found at that moment.
func tap(sel string) chromedp.Action {
	return chromedp.Evaluate(`document.querySelector('`+sel+`').click()`, nil)
}

// waitLocation waits until the browser shows url, fully loaded (across
// navigations, which end the page's JavaScript context).
func waitLocation(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	testkit.WaitForValue(t, 60*time.Second, "the browser to get to "+url+" (where it is)", func() (string, bool) {
		var loc, ready string
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := chromedp.Run(c, chromedp.Location(&loc), chromedp.Evaluate(`document.readyState`, &ready))
		cancel()
		return fmt.Sprintf("%q, %s (%v)", loc, ready, err), err == nil && loc == url && ready == "complete"
	})
}
