package main

import (
	"runtime"
	"testing"
)

// TestSetCores: a system3 process runs on one core, bench on all of them,
// and GOMAXPROCS in the environment decides over both.
func TestSetCores(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	for _, tt := range []struct {
		name string
		env  string
		args []string
		want int
	}{
		{"serve", "", []string{"--state-dir", "/nowhere", "serve", "--listen", "off"}, 1},
		{"the dashboard", "", nil, 1},
		{"bench", "", []string{"bench", "--panes", "4"}, 2},
		{"an unknown command", "", []string{"no-such-command"}, 1},
		{"GOMAXPROCS set", "2", []string{"serve"}, 2},
	} {
		t.Setenv("GOMAXPROCS", tt.env)
		runtime.GOMAXPROCS(2)
		setCores(tt.args)
		if got := runtime.GOMAXPROCS(0); got != tt.want {
			t.Errorf("%s: GOMAXPROCS = %d, want %d", tt.name, got, tt.want)
		}
	}
}
