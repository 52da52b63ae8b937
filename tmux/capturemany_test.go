package tmux_test

import (
	"errors"
	"strings"

	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
	"github.com/system3-dev/system3/tmux"
)

// CaptureMany gives, for every pane, exactly what Capture gives, in one
// tmux client; a pane that is gone gets ErrNotFound and the panes after it
// are still captured; a screen that imitates the markers does not split
// the output.
func TestCaptureMany(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.NewServer(t, "sh", "-c", "printf 'first pane\\n  indented  \\n\\n'; exec sleep 600")
	c := tmux.NewClient(srv)
	ctx := ctxFor(t, 30*time.Second)
	panes, err := c.ListPanes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{panes[0].ID}
	ids = append(ids, newWindow(t, c, "sh", "-c", "printf 'system3-capture-000000000000000000000000-2\\nsystem3-capture-x-2\\n'; exec sleep 600"))
	ids = append(ids, "%999") // never existed
	ids = append(ids, newWindow(t, c, "sh", "-c", "seq 1 30; exec sleep 600"))
	ids = append(ids, newWindow(t, c, "sh", "-c", "exec sleep 600")) // a blank screen
	last := ids[len(ids)-1]
	testkit.WaitFor(t, 10*time.Second, "the panes to draw", func() bool {
		for i, want := range []string{"first pane", "system3-capture-x-2", "", "\n30"} {
			s, err := c.Capture(ctx, ids[i], tmux.CaptureOptions{})
			if want != "" && (err != nil || !strings.Contains(s, want)) {
				return false
			}
		}
		return true
	})
	for _, opt := range []tmux.CaptureOptions{{}, {KeepTrailing: true}, {Escapes: true}, {History: -1}} {
		got := c.CaptureMany(ctx, ids, opt)
		if len(got) != len(ids) {
			t.Fatalf("%+v: %d results for %d panes", opt, len(got), len(ids))
		}
		for i, r := range got {
			if r.Pane != ids[i] {
				t.Errorf("%+v: result %d is for %s, want %s", opt, i, r.Pane, ids[i])
			}
			want, werr := c.Capture(ctx, ids[i], opt)
			switch {
			case ids[i] == "%999":
				if !errors.Is(r.Err, tmux.ErrNotFound) || !errors.Is(werr, tmux.ErrNotFound) {
					t.Errorf("%+v: missing pane: %v (Capture: %v), want ErrNotFound", opt, r.Err, werr)
				}
			case r.Err != nil || werr != nil:
				t.Errorf("%+v: %s: %v (Capture: %v)", opt, ids[i], r.Err, werr)
			case r.Screen != want:
				t.Errorf("%+v: %s: CaptureMany gave %q, Capture %q", opt, ids[i], r.Screen, want)
			}
		}
	}
	// The last pane alone, and nothing.
	if got := c.CaptureMany(ctx, []string{last}, tmux.CaptureOptions{}); got[0].Err != nil {
		t.Errorf("one pane: %v", got[0].Err)
	}
	if got := c.CaptureMany(ctx, nil, tmux.CaptureOptions{}); len(got) != 0 {
		t.Errorf("no panes: %v", got)
	}
	// With the server gone every pane says so.
	if err := c.KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.CaptureMany(ctx, ids, tmux.CaptureOptions{}) {
		if !errors.Is(r.Err, tmux.ErrNoServer) {
			t.Errorf("after kill-server: %s: %v, want ErrNoServer", r.Pane, r.Err)
		}
	}

}
