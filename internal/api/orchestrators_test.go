package api

import (
	"errors"
	"strings"
	"testing"
)

func TestValidInitiative(t *testing.T) {
	for _, ok := range []string{"auth", "auth-login", "A1_b", "x", strings.Repeat("a", 48)} {
		if why := ValidInitiative(ok); why != "" {
			t.Errorf("ValidInitiative(%q) = %s", ok, why)
		}
	}
	for _, bad := range []string{"", "-x", "_x", "a.b", "a:b", "a b", "a/b", "a..b", "ä", strings.Repeat("a", 49), "a\n", "HEAD@{1}"} {
		if ValidInitiative(bad) == "" {
			t.Errorf("ValidInitiative(%q) accepted it", bad)
		}
	}
}

func TestSpawnErrorSaysWhatWasUndone(t *testing.T) {
	cause := errors.New("boom")
	for _, c := range []struct {
		e    SpawnError
		want string
	}{
		{SpawnError{Initiative: "auth", Step: StepValidate, Err: cause}, `spawn auth failed at step "validate": boom`},
		{SpawnError{Initiative: "auth", Step: StepReady, Err: cause}, `spawn auth failed at step "wait until ready": boom; nothing to clean up`},
		{SpawnError{Initiative: "auth", Step: StepReady, Err: cause, CleanedUp: []string{"killed tmux session orch-auth"}, Left: []string{"branch auth"}},
			`spawn auth failed at step "wait until ready": boom; cleaned up: killed tmux session orch-auth; left behind: branch auth`},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(&c.e, cause) {
			t.Errorf("%v does not match its cause", &c.e)
		}
	}
}
