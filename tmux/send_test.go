package tmux_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// bigText is 8 KB of multi-line text with everything that tends to break:
// tmux syntax, shell syntax, key names, tabs, wide characters.
func bigText() string {
	var b strings.Builder
	for i := 0; b.Len() < 8192; i++ {
		fmt.Fprintf(&b, "line %04d: a;b $HOME 'q' \"dq\" \\ Enter C-c \t#{pane_id} ~ 中文🎉\n", i)
		if i%10 == 0 {
			b.WriteString("\t\ttabbed line\n")
		}
	}
	return b.String()
}

// maxText is MaxText bytes of multi-line text, ending without a newline.
func maxText() string {
	var b strings.Builder
	for i := 0; b.Len() < tmux.MaxText; i++ {
		fmt.Fprintf(&b, "%06d the quick brown fox $HOME 'q' \\ #{pane_id} tab\there\n", i)
	}
	return b.String()[:tmux.MaxText-1] + "."
}

func TestSendTextByteExact(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	c.EnterDelay = 20 * time.Millisecond
	c.VerifyTimeout = 200 * time.Millisecond // the sink never echoes: do not wait long for it
	ctx := ctxFor(t, 40*time.Second)

	tests := []struct {
		name, text, method string
	}{
		{"separators and shell", `echo a; rm -rf / ; $HOME $(id) ` + "`x`", "send-keys"},
		{"quotes and backslashes", `'single' "double" \back\slash\\ \' \"`, "send-keys"},
		{"key names", "Enter C-c Escape Tab BSpace", "send-keys"},
		{"tabs", "a\tb\tc", "send-keys"},
		{"unicode", "héllo 中文 🎉 ☃", "send-keys"},
		{"leading dash", "-n -- --help -t %1", "send-keys"},
		{"formats and tilde", "#{pane_id} #(date) ~ ~/x #[fg=red]", "send-keys"},
		{"long single line", strings.Repeat("0123456789;'\"\\", 50), "paste-buffer"},
		{"multi-line 8KB", bigText(), "paste-buffer"},
		{"text of MaxText bytes", maxText(), "paste-buffer"},
	}
	for _, tt := range tests {
		pane, read := sink(t, c)
		res, err := c.SendText(ctx, pane, tt.text, tmux.SendOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if res.Method != tt.method || !res.Delivered || res.Attempts != 1 || res.Verified {
			// Verified is false: the sink does not echo, so there is nothing to check.
			t.Errorf("%s: result %+v", tt.name, res)
		}
		// Enter arrives as its own CR after the text. No \e[200~ markers:
		// cat never asked for bracketed paste.
		t.Run(tt.name, func(t *testing.T) { waitBytes(t, read, []byte(tt.text+"\r")) })
	}

	// Text that is not text is refused before anything is sent: the sink
	// gets only the marker sent after the refusals.
	pane, read := sink(t, c)
	for _, bad := range []string{"a\x1bb", "\x03", "x\x00y", "bytes \xff\xfe end", "a\r\nb", "\x1b[201~\rtouch x\r", "\u009b201~", strings.Repeat("y", tmux.MaxText+1)} {
		_, err := c.SendText(ctx, pane, bad, tmux.SendOptions{NoVerify: true})
		if !errors.Is(err, tmux.ErrNotText) && !errors.Is(err, tmux.ErrTextTooLong) {
			t.Fatalf("SendText(%q) = %v, want a refusal", clip([]byte(bad)), err)
		}
	}
	if _, err := c.SendText(ctx, pane, "marker", tmux.SendOptions{NoEnter: true}); err != nil {
		t.Fatal(err)
	}
	waitBytes(t, read, []byte("marker"))

	// NoEnter delivers the text alone.
	pane, read = sink(t, c)
	if res, err := c.SendText(ctx, pane, "no enter", tmux.SendOptions{NoEnter: true}); err != nil || res.Attempts != 0 {
		t.Fatalf("NoEnter: %+v %v", res, err)
	}
	waitBytes(t, read, []byte("no enter"))
}

func TestSendTextConcurrentSamePane(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	c.EnterDelay = 10 * time.Millisecond
	ctx := ctxFor(t, 30*time.Second)
	pane, read := sink(t, c)
	// Sends to one pane are serialised: each text and its Enter stay
	// together, in some order.
	texts := []string{"first one", "second\nmulti", "third: " + strings.Repeat("x", 600)}
	var wg sync.WaitGroup
	for _, text := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.SendText(ctx, pane, text, tmux.SendOptions{NoVerify: true}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, text := range texts {
		total += len(text) + 1
	}
	testkit.WaitFor(t, 5*time.Second, "all texts", func() bool { return len(read()) >= total })
	got := string(read())
	for _, text := range texts {
		if !strings.Contains(got, text+"\r") {
			t.Errorf("%q did not arrive whole, followed by its Enter: %q", text, got)
		}
	}
}

func TestSendTextLeavesCopyMode(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	c.VerifyTimeout = 200 * time.Millisecond // the sink never echoes: do not wait long for it
	ctx := ctxFor(t, 20*time.Second)
	pane, read := sink(t, c)
	tmuxRun(t, srv, "copy-mode", "-t", pane)
	if p, _ := c.PaneInfo(ctx, pane); !p.InMode {
		t.Fatal("pane is not in copy mode")
	}
	if _, err := c.SendText(ctx, pane, "after copy mode", tmux.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBytes(t, read, []byte("after copy mode\r"))
	if p, _ := c.PaneInfo(ctx, pane); p.InMode {
		t.Error("pane still in copy mode")
	}

	// Keys too.
	tmuxRun(t, srv, "copy-mode", "-t", pane)
	if err := c.SendKeys(ctx, pane, tmux.Key1); err != nil {
		t.Fatal(err)
	}
	waitBytes(t, read, []byte("after copy mode\r1"))
}

func TestSendTextVerifiesAndRetriesEnter(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	c.EnterDelay = 20 * time.Millisecond
	c.VerifyTimeout = 600 * time.Millisecond
	ctx := ctxFor(t, 30*time.Second)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, swallow := range []int{0, 1, 2} {
		pane, err := c.NewWindow(ctx, tmux.NewWindowOptions{
			Session: "main",
			Env:     map[string]string{helperEnv: "inputbox", "SWALLOW": fmt.Sprint(swallow)},
			Command: []string{"sh", "-c", `stty raw -echo -iexten && exec "$0"`, exe},
		})
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "the input box", func() bool {
			s, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
			return strings.Contains(s, "inputbox ready")
		})
		res, err := c.SendText(ctx, pane, "hello agent", tmux.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantAttempts := min(swallow+1, 2)
		if res.Attempts != wantAttempts || res.Verified != (swallow < 2) || !res.Delivered {
			t.Errorf("swallow %d: %+v", swallow, res)
		}
		if swallow < 2 {
			s, _ := c.Capture(ctx, pane, tmux.CaptureOptions{})
			if !strings.Contains(s, "sent: hello agent") {
				t.Errorf("swallow %d: not submitted:\n%s", swallow, s)
			}
		}
	}

	// A shell that echoes: the cursor moves to a new line after Enter.
	shell := newWindow(t, c, "/bin/sh")
	testkit.WaitFor(t, 5*time.Second, "the prompt", func() bool {
		s, _ := c.Capture(ctx, shell, tmux.CaptureOptions{})
		return strings.Contains(s, "$") || strings.Contains(s, "#")
	})
	res, err := c.SendText(ctx, shell, "echo verified-$((6*7))", tmux.SendOptions{})
	if err != nil || !res.Verified || res.Attempts != 1 {
		t.Errorf("shell: %+v %v", res, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the command output", func() bool {
		s, _ := c.Capture(ctx, shell, tmux.CaptureOptions{})
		return strings.Contains(s, "verified-42")
	})
}

func TestSendKeys(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	pane, read := sink(t, c)
	keys := []tmux.Key{tmux.KeyCtrlC, tmux.Key1, tmux.Key0, tmux.Key9, tmux.KeyEnter, tmux.KeyTab, tmux.KeyBTab,
		tmux.KeyEscape, tmux.KeyUp, tmux.KeyDown, tmux.KeyRight, tmux.KeyLeft, tmux.KeyY, tmux.KeyN,
		tmux.KeyBackspace, tmux.KeySpace}
	if err := c.SendKeys(ctx, pane, keys...); err != nil {
		t.Fatal(err)
	}
	waitBytes(t, read, []byte("\x03109\r\t\x1b[Z\x1b\x1b[A\x1b[B\x1b[C\x1b[Dyn\x7f "))

	for _, bad := range []tmux.Key{"C-d", "Enter; kill-server", "hello", ""} {
		err := c.SendKeys(ctx, pane, tmux.KeyY, bad)
		if !errors.Is(err, tmux.ErrInvalidKey) {
			t.Errorf("SendKeys(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	waitBytes(t, read, []byte("\x03109\r\t\x1b[Z\x1b\x1b[A\x1b[B\x1b[C\x1b[Dyn\x7f "))

	// C-c interrupts a running command.
	sleeper := newWindow(t, c, `trap 'echo INTERRUPTED' INT; sleep 100; echo AFTER; exec sleep 100`)
	testkit.WaitFor(t, 5*time.Second, "sleep to start", func() bool {
		p, _ := c.PaneInfo(ctx, sleeper)
		return hasChild(p.PID, "sleep")
	})
	if err := c.SendKeys(ctx, sleeper, tmux.KeyCtrlC); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the interrupt", func() bool {
		s, _ := c.Capture(ctx, sleeper, tmux.CaptureOptions{})
		return strings.Contains(s, "INTERRUPTED\nAFTER")
	})
}

func TestSendToDeadOrMissingPane(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t)
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 20*time.Second)
	tmuxRun(t, srv, "set-option", "-g", "remain-on-exit", "on")
	dead := newWindow(t, c, "sleep 0.2; exit 7")
	testkit.WaitFor(t, 5*time.Second, "the pane to die", func() bool {
		p, _ := c.PaneInfo(ctx, dead)
		return p.Dead
	})
	_, err := c.SendText(ctx, dead, "hello", tmux.SendOptions{})
	if !errors.Is(err, tmux.ErrPaneDead) || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), srv.String()) {
		t.Errorf("dead pane: %v", err)
	}
	if err := c.SendKeys(ctx, dead, tmux.KeyEnter); !errors.Is(err, tmux.ErrPaneDead) {
		t.Errorf("keys to a dead pane: %v", err)
	}
	_, err = c.SendText(ctx, "%999", "hello", tmux.SendOptions{})
	if want := "send text to %999 on " + srv.String() + ": can't find pane: %999"; !errors.Is(err, tmux.ErrNotFound) || err == nil || err.Error() != want {
		t.Errorf("missing pane: %v\nwant %s", err, want)
	}
	if _, err := c.SendText(ctx, "main:0", "hello", tmux.SendOptions{}); !errors.Is(err, tmux.ErrNotFound) {
		t.Errorf("a target that is not a pane id: %v", err)
	}
}
