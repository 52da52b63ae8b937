package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tmux"
)

// typingPath types text into a pane one way a client can: it returns
// whether the text was delivered and, if not, the error a caller sees.
type typingPath struct {
	name, origin string
	json         bool // the text travels as a JSON string, which holds only Unicode
	inject       func(t *testing.T, pane, text string, submit, visible bool) (bool, string)
}

// TestHostileTextOnEveryPath sends every hostile text of issue 13 through
// every path that types into a pane (the in-process service, the socket,
// the CLI, MCP over Streamable HTTP and over stdio) into a real pane
// running `cat -v` in raw mode and a real bash. Each is refused with the
// byte and its offset, or typed as visible text when asked; `cat -v`
// shows that nothing else ever arrived, bash never runs the payload that
// ends a bracketed paste, and the audit log holds every attempt as sent.
func TestHostileTextOnEveryPath(t *testing.T) {
	srv := tmuxtest.NewServer(t, "sleep", "600")
	tc := tmux.NewClient(srv)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	out, ready := filepath.Join(dir, "out"), filepath.Join(dir, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, s := range []struct{ name, cmd string }{
		{"catv", fmt.Sprintf("stty raw -echo -iexten && touch %s && exec cat -v > %s", ready, out)},
		{"shell", fmt.Sprintf("exec env HOME=%s PS1='$ ' bash --norc --noprofile", home)},
	} {
		if _, err := tc.NewSession(ctx, tmux.NewSessionOptions{Name: s.name, Width: 200, Height: 50, Command: []string{"sh", "-c", s.cmd}}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 30*time.Second, "the cat -v pane to be ready", func() bool { _, err := os.Stat(ready); return err == nil })

	state := testkit.ShortDir(t)
	// Every path sends a few dozen texts to one pane: no rate limit here
	// (the policy tests hold it).
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  inject_per_minute: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state, "SYSTEM3_TASKS_DIR": t.TempDir(), "SYSTEM3_TMUX_SOCKET_PATH": srv.Path,
		"SYSTEM3_CONFIG": cfg}
	svc := startTestMonitors(t, env)
	panes := map[string]string{}
	testkit.WaitFor(t, 30*time.Second, "both sessions in the snapshot", func() bool {
		snap, err := svc.Snapshot(ctx)
		if err != nil {
			return false
		}
		for _, s := range snap.Sessions {
			panes[s.Session] = s.Pane
		}
		return panes["catv"] != "" && panes["shell"] != ""
	})
	sock := dialDaemon(t, state)

	ms, err := mcpserver.New(svc, mcpserver.Options{Version: "v0.0.0-text"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(ms.Handler())
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close(); ms.Close() })
	httpc, err := client.NewStreamableHttpClient(ts.URL + mcpserver.EndpointPath)
	if err != nil {
		t.Fatal(err)
	}
	mcpStart(t, httpc, "text-http")
	t.Cleanup(func() { httpc.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, stopStdio := context.WithCancel(context.Background())
	stdioDone := make(chan error, 1)
	go func() { stdioDone <- ms.ServeStdio(sctx, inR, outW); outW.Close() }()
	stdioc := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	mcpStart(t, stdioc, "text-stdio")
	t.Cleanup(func() { stdioc.Close(); inW.Close(); stopStdio(); <-stdioDone })

	service := func(c api.Service) func(*testing.T, string, string, bool, bool) (bool, string) {
		return func(t *testing.T, pane, text string, submit, visible bool) (bool, string) {
			res, err := c.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: pane}, Text: text, NoEnter: !submit, VisibleControls: visible, Origin: "test"})
			if err != nil {
				return false, err.Error()
			}
			return res.Delivered, ""
		}
	}
	viaMCP := func(c *client.Client) func(*testing.T, string, string, bool, bool) (bool, string) {
		return func(t *testing.T, pane, text string, submit, visible bool) (bool, string) {
			req := mcp.CallToolRequest{}
			req.Params.Name = "inject_guidance"
			req.Params.Arguments = map[string]any{"pane": pane, "message": text, "submit": submit, "visible_controls": visible}
			res, err := c.CallTool(ctx, req)
			if err != nil {
				return false, err.Error()
			}
			msg := ""
			for _, c := range res.Content {
				if tc, ok := c.(mcp.TextContent); ok {
					msg += tc.Text
				}
			}
			return !res.IsError && strings.Contains(msg, `"delivered":true`), msg
		}
	}
	paths := []typingPath{
		{"service", "test", false, service(svc)},
		{"socket", "test", false, service(sock)},
		{"cli", "cli", false, func(t *testing.T, pane, text string, submit, visible bool) (bool, string) {
			args := []string{"inject", "--pane", pane}
			if !submit {
				args = append(args, "--no-enter")
			}
			if visible {
				args = append(args, "--visible-controls")
			}
			var o, e bytes.Buffer
			code := run(ctx, append(args, "-"), strings.NewReader(text), &o, &e, func(k string) string { return env[k] })
			return code == 0, e.String()
		}},
		{"mcp-http", "mcp:text-http", true, viaMCP(httpc)},
		{"mcp-stdio", "mcp:text-stdio", true, viaMCP(stdioc)},
	}

	type hostile struct {
		name, text, why, visible string
	}
	hostiles := []hostile{
		{"ctrl-c", "\u0003", "byte 0x03 (a control character) at byte offset 0", "^C"},
		{"shift-tab", "\x1b[Z", "byte 0x1b (escape) at byte offset 0", "^[[Z"},
		{"bracketed paste start", "\x1b[200~x", "byte 0x1b (escape) at byte offset 0", "^[[200~x"},
		{"nul", "abc\x00def", "byte 0x00 (NUL) at byte offset 3", "abc^@def"},
		{"invalid utf-8", "ok \xff\xfe", "byte 0xff (not valid UTF-8) at byte offset 3", `ok \xff\xfe`},
		{"c1 csi", "x\u009b201~", "character U+009B (a C1 control character) at byte offset 1", `x\u009b201~`},
		{"del", "x\x7fy", "byte 0x7f (delete) at byte offset 1", "x^?y"},
		{"1 MB", strings.Repeat("x", 1<<20), "", ""},
		{"tmux key names", "C-c Enter Escape BTab", "", "C-c Enter Escape BTab"},
	}
	pwned := "echo a\necho b\x1b[201~\rtouch $HOME/PWNED\r"

	var wantOut strings.Builder
	for _, p := range paths {
		for _, h := range hostiles {
			for _, visible := range []bool{false, true} {
				text, expect := h.text, h.visible
				if p.json && !strings.HasPrefix(h.name, "1 MB") && strings.ToValidUTF8(text, "\ufffd") != text {
					// A JSON string holds only Unicode: the client's encoder
					// turned each invalid byte into U+FFFD before sending,
					// and U+FFFD is text, typed and audited as such.
					text = strings.ToValidUTF8(text, "\ufffd\ufffd")
					h.why, expect = "", text
				}
				ok, msg := p.inject(t, panes["catv"], text, false, visible)
				switch {
				case h.name == "1 MB":
					// Over the limit: refused whatever the path (the MCP
					// transports refuse it before the tool).
					if ok || msg == "" {
						t.Errorf("%s %s (visible %v): delivered %v, %q; want it refused", p.name, h.name, visible, ok, msg)
					}
					if !p.json && !strings.Contains(msg, "over the limit of 262144 bytes") {
						t.Errorf("%s %s: %q does not state the limit", p.name, h.name, msg)
					}
				case h.why != "" && !visible:
					if ok || !strings.Contains(msg, h.why) {
						t.Errorf("%s %s: delivered %v, %q; want a refusal naming %q", p.name, h.name, ok, msg, h.why)
					}
				default:
					if !ok {
						t.Errorf("%s %s (visible %v): not delivered: %s", p.name, h.name, visible, msg)
					}
					wantOut.WriteString(catV(expect))
				}
			}
		}
		// The payload that ends a bracketed paste and runs a command.
		for _, visible := range []bool{false, true} {
			ok, msg := p.inject(t, panes["shell"], pwned, false, visible)
			if ok != visible || !visible && !strings.Contains(msg, "byte 0x1b (escape) at byte offset 13") {
				t.Errorf("%s PWNED payload (visible %v): delivered %v, %q", p.name, visible, ok, msg)
			}
		}
	}

	// cat -v shows exactly the visible texts, in order: no control byte
	// of a refused text arrived (a ^C or ^[ would show), nothing was cut.
	want := wantOut.String()
	var got []byte
	testkit.Poll(30*time.Second, func() bool {
		got, _ = os.ReadFile(out)
		return len(got) >= len(want)
	})
	if string(got) != want {
		t.Fatalf("cat -v shows\n%q\nwant\n%q", got, want)
	}

	// bash runs the whole line it holds once submitted: every echo, then
	// the marker; never the touch of PWNED.
	done := filepath.Join(home, "DONE")
	if _, err := svc.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: panes["shell"]}, Text: " ; touch $HOME/DONE", Origin: "test"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "bash to run the submitted line", func() bool { _, err := os.Stat(done); return err == nil })
	if _, err := os.Stat(filepath.Join(home, "PWNED")); err == nil {
		t.Fatal("the bracketed-paste payload ran: PWNED exists")
	}

	// The audit log: every refusal with its exact bytes and why, every
	// delivery with exactly the text typed.
	entries, err := audit.Read(filepath.Join(state, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		if e.Action != "inject" {
			continue
		}
		// Over the socket the daemon records the peer, then quotes what
		// the client says it acts for: count those by the claim.
		origin := e.Origin
		if strings.HasPrefix(origin, "socket:") {
			if _, claim, ok := strings.Cut(origin, ` claims "`); ok {
				origin = "socket>" + strings.TrimSuffix(claim, `"`)
			}
		}
		count[origin+" "+e.Phase]++
		if e.Phase == audit.PhaseRefused && origin == "socket>cli" && strings.Contains(e.Error, "0xff") && e.Text != "ok \xff\xfe" {
			t.Errorf("audit of the refused invalid UTF-8 holds %q", e.Text)
		}
		if e.Phase == audit.PhaseResult && e.Sent && e.Pane == panes["catv"] && !strings.Contains(want, catV(e.Text)) {
			t.Errorf("audit says %q was delivered; cat -v never showed it", e.Text)
		}
	}
	// Per path: 7 refusals, 2 of the 1 MB text and the PWNED payload; over
	// MCP invalid UTF-8 arrives as U+FFFD and the 1 MB text is refused
	// by the transport before any tool runs. The in-process service also
	// typed the marker.
	if count["test refused"] != 10 || count["socket>test refused"] != 10 || count["socket>cli refused"] != 10 ||
		count["mcp:text-http refused"] != 7 || count["mcp:text-stdio refused"] != 7 ||
		count["test result"] != 10+1 || count["socket>test result"] != 10 || count["socket>cli result"] != 10 ||
		count["mcp:text-http result"] != 11 || count["mcp:text-stdio result"] != 11 {
		t.Errorf("audit counts %v", count)
	}
}

// catV is what `cat -v` prints for s.
func catV(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			b.WriteString("M-")
			c -= 0x80
		}
		switch {
		case c == 0x7f:
			b.WriteString("^?")
		case c < 0x20 && c != '\n' && c != '\t':
			b.WriteByte('^')
			b.WriteByte(c + 0x40)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
