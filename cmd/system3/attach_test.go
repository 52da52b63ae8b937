package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/remote"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/internal/testsupport/tmuxtest"
)

// attach --stdio without a daemon says so in one sentence, with the exit
// status the remote client recognises; with one, it relays a ping.
func TestAttachStdio(t *testing.T) {
	state := testkit.ShortDir(t)
	code, out, errOut := invoke(t, map[string]string{"SYSTEM3_STATE_DIR": state}, "attach", "--stdio")
	if code != remote.ExitNoDaemon || out != "" || !strings.Contains(errOut, "no system3 daemon on this host: run system3 serve there") {
		t.Fatalf("attach without a daemon: exit %d, out %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := invoke(t, nil, "attach"); code != 1 || !strings.Contains(errOut, "--stdio") {
		t.Fatalf("attach without --stdio: exit %d, stderr %q", code, errOut)
	}

	env := serveMonitors(t, tmuxtest.NewServer(t, "sleep", "600"), t.TempDir())
	// The input stays open, as ssh's does, until the daemon has replied
	// and closed: closing it first would cancel the call.
	in, inW := io.Pipe()
	defer inW.Close()
	go inW.Write([]byte(`{"v":2,"method":"ping"}` + "\n"))
	var stdout bytes.Buffer
	vars := func(k string) string { return env[k] }
	code = run(context.Background(), []string{"attach", "--stdio"}, in, &stdout, &bytes.Buffer{}, vars)
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"hello":"system3"`) || lines[1] != `{"result":{}}` {
		t.Fatalf("attach relayed %q (exit %d); want the hello and the ping's reply", stdout.String(), code)
	}
}
