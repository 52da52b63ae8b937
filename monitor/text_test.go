package monitor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
)

// HostileText is one input from the attacks text must survive: what the
// service must say when it refuses it, and what it types when the caller
// asks for visible controls.
type hostileText struct {
	name, text string
	why        string // in the refusal; "" when it is text and is typed as is
	visible    string // typed with VisibleControls
}

func hostileTexts() []hostileText {
	return []hostileText{
		{"ctrl-c", "\u0003", "byte 0x03 (a control character) at byte offset 0", "^C"},
		{"bracketed paste end", "echo a\necho b\x1b[201~\rtouch $HOME/PWNED\r", "byte 0x1b (escape) at byte offset 13", "echo a\necho b^[[201~^Mtouch $HOME/PWNED^M"},
		{"shift-tab", "\x1b[Z", "byte 0x1b (escape) at byte offset 0", "^[[Z"},
		{"nul", "abc\x00def", "byte 0x00 (NUL) at byte offset 3", "abc^@def"},
		{"invalid utf-8", "ok \xff\xfe", "byte 0xff (not valid UTF-8) at byte offset 3", `ok \xff\xfe`},
		{"c1 csi", "x\u009b201~", "character U+009B (a C1 control character) at byte offset 1", `x\u009b201~`},
		{"del", "x\x7fy", "byte 0x7f (delete) at byte offset 1", "x^?y"},
		{"1 MB", strings.Repeat("x", 1<<20), "1048576 bytes, over the limit of 262144 bytes", ""},
		{"tmux key names", "C-c Enter Escape BTab", "", "C-c Enter Escape BTab"},
	}
}

// TestHostileTextInProcess: the service refuses every hostile text before
// sending anything, naming the byte and its offset, audits the refusal
// with the exact bytes, and types the visible form when asked to.
func TestHostileTextInProcess(t *testing.T) {
	dir := t.TempDir()
	snd := &recordingSender{}
	h := newHarness(t, func(c *Config) { c.Send = snd; c.Audit = audit.Open(dir) })
	h.tm.show(t, "%1", "claude", "claude/idle.txt")
	h.step()
	ctx := context.Background()
	var want []string
	for _, tc := range hostileTexts() {
		for _, visible := range []bool{false, true} {
			res, err := h.sup.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: "%1"}, Text: tc.text, NoEnter: true, VisibleControls: visible, Origin: "test"})
			switch {
			case tc.why == "" || visible && tc.visible != "":
				typed := tc.text
				if visible {
					typed = tc.visible
				}
				if err != nil || !res.Delivered || res.Text != typed {
					t.Errorf("%s (visible %v): %+v, %v; want %q delivered", tc.name, visible, res, err, typed)
				}
				want = append(want, "text %1 "+typed)
			default:
				if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), tc.why) || res.Delivered {
					t.Errorf("%s (visible %v): %+v, %v; want a refusal naming %q", tc.name, visible, res, err, tc.why)
				}
			}
		}
	}
	if fmt.Sprint(snd.calls) != fmt.Sprint(want) {
		t.Fatalf("sent %q\nwant %q", snd.calls, want)
	}
	entries, err := audit.Read(filepath.Join(dir, audit.File))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, tc := range hostileTexts() {
		for _, visible := range []bool{false, true} {
			e := entries[i]
			i++
			if tc.why == "" || visible && tc.visible != "" {
				if e.Phase != audit.PhaseResult || !e.Sent || e.Text != res(tc, visible) {
					t.Errorf("%s (visible %v): audit %+v", tc.name, visible, e)
				}
				continue
			}
			text := tc.text
			if len(text) > audit.MaxText {
				text = text[:audit.MaxText]
			}
			if e.Phase != audit.PhaseRefused || e.Sent || e.Text != text || e.Cut != len(tc.text)-len(text) || !strings.Contains(e.Error, tc.why) {
				t.Errorf("%s (visible %v): audit phase %q sent %v text %q cut %d error %q", tc.name, visible, e.Phase, e.Sent, clipped(e.Text), e.Cut, e.Error)
			}
		}
	}
}

func res(tc hostileText, visible bool) string {
	if visible {
		return tc.visible
	}
	return tc.text
}

func clipped(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
