package tmux

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestControlEnvKeepsOnlyWhatTmuxNeeds(t *testing.T) {
	in := []string{"PATH=/usr/bin", "HOME=/root", "TMUX_TMPDIR=/run/t", "LANG=C.UTF-8", "TMUX=/tmp/tmux-0/default,1,0",
		"GOFLAGS=-race", "SECRET_TOKEN=x", "LS_COLORS=" + string(make([]byte, 4096)), "PATHX=no"}
	got := controlEnv(in)
	want := []string{"PATH=/usr/bin", "HOME=/root", "TMUX_TMPDIR=/run/t", "LANG=C.UTF-8", "TMUX=/tmp/tmux-0/default,1,0"}
	if !slices.Equal(got, want) {
		t.Fatalf("controlEnv = %q, want %q", got, want)
	}
}

func TestSettleWaitsForQuiet(t *testing.T) {
	const quiet = 80 * time.Millisecond
	kick := make(chan struct{})
	var mu sync.Mutex
	var last time.Time // when settle last took a kick
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			select {
			case kick <- struct{}{}:
				mu.Lock()
				last = time.Now()
				mu.Unlock()
			case <-stop:
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if !settle(context.Background(), kick, quiet, 10*time.Second) {
		t.Fatal("settle returned false without ctx ending")
	}
	returned := time.Now()
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if last.IsZero() || returned.Sub(last) < quiet/2 {
		t.Fatalf("settle returned %v after the last kick it took, want about %v of quiet", returned.Sub(last), quiet)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if settle(ctx, kick, time.Hour, time.Hour) {
		t.Fatal("settle with an ended ctx returned true")
	}
}
