package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/monitor/hooks"
)

// system3 hook run below a Cline hub (its hooks run with the environment
// of the CLI that started the hub, which may be another pane's) delivers,
// signs and spools nothing; the same hook elsewhere spools its event when
// no system3 runs.
func TestHookUnderAHubIsDropped(t *testing.T) {
	const payload = `{"hookName":"agent_end","taskId":"conv_1","sessionContext":{"rootSessionId":"1795940742661_xneix"},"turn":{"status":"completed"}}`
	for _, c := range []struct {
		name    string
		spooled bool
	}{{"--cline-hub-daemon", false}, {"cline", true}} {
		state := testkit.ShortDir(t)
		// The shell's own arguments hold the name; the command after it
		// keeps the shell from exec'ing the hook in its place.
		cmd := exec.Command("sh", "-c", hookCommand(t, state)+"; exit $?", c.name)
		cmd.Stdin = strings.NewReader(payload)
		cmd.Env = append(os.Environ(), "TMUX_PANE=%0", hooks.TokenEnv+"=token")
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("%s: %v: %s", c.name, err, out)
		}
		_, err := os.Stat(filepath.Join(state, hooks.SpoolFile))
		if spooled := err == nil; spooled != c.spooled {
			log, _ := os.ReadFile(filepath.Join(state, "system3.log"))
			t.Fatalf("under %s: spooled %v, want %v\n%s", c.name, spooled, c.spooled, log)
		}
	}
}
