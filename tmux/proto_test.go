package tmux_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/system3-dev/system3/tmux"
	"github.com/system3-dev/system3/tmux/tmuxtest"
)

func TestNativeSmoke(t *testing.T) {
	srv := tmuxtest.NewServer(t, "seq 1 20; exec sleep 1000")
	ctx := ctxFor(t, 20*time.Second)
	args := []string{"list-panes", "-a", "-F", tmux.PaneFormat}
	nat, err, fb := srv.RunNative(ctx, args...)
	if fb || err != nil {
		t.Fatalf("native: fell back %v, %v", fb, err)
	}
	fork, err := srv.RunForked(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(nat, fork) {
		t.Fatalf("native %q\nforked %q", nat, fork)
	}
	t.Logf("%q", nat)
	_ = context.Background
}
