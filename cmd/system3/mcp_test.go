package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// `system3 mcp` speaks MCP on its standard streams with the monitors of the
// running system3, and when that one goes away, with monitors of its own.
func TestMCPCommand(t *testing.T) {
	hooked := useFake(t)
	state := testkit.ShortDir(t)
	daemon := newFakeService(t)
	ln, err := ipc.Listen(filepath.Join(state, ipc.SocketFile))
	if err != nil {
		t.Fatal(err)
	}
	// The daemon serves its learning store and coach, from the state dir,
	// as a running system3 does.
	vars := map[string]string{"HOME": t.TempDir(), "SYSTEM3_STATE_DIR": state}
	da := &app{App: core.App{Stderr: io.Discard, Getenv: func(k string) string { return vars[k] }}}
	if err := da.setup(); err != nil {
		t.Fatal(err)
	}
	defer da.Close()
	dctx, stopDaemon := context.WithCancel(context.Background())
	daemonDone := make(chan error, 1)
	served := da.Local(dctx, daemon, nil, nil)
	go func() { daemonDone <- ipc.NewServer(ln, served, nil).Run(dctx) }()
	daemonStopped := false
	defer func() {
		if !daemonStopped {
			stopDaemon()
			<-daemonDone
		}
	}()
	daemon.Raise(t, monitortest.WakeAuth)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"mcp", "--read-only"}, inR, outW, &stderr, func(k string) string { return vars[k] })
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "cmd-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	// The six monitor read tools, the two learning ones (capability_check,
	// reflect) and query_pattern_history: the daemon's learning database
	// in the state dir.
	if err != nil || len(tools.Tools) != 9 || !slices.ContainsFunc(tools.Tools, func(t mcp.Tool) bool { return t.Name == "query_pattern_history" }) {
		t.Fatalf("read-only tools: %d, %v", len(tools.Tools), err)
	}
	callJSON := func(name string) map[string]any {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var m map[string]any
		json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &m)
		return m
	}
	if got := callJSON("list_wakes"); got["count"] != 1.0 {
		t.Fatalf("wakes from the daemon: %v", got)
	}
	if hooked.starts.Load() != 0 {
		t.Fatal("started monitors beside a running system3")
	}

	// The dashboard closes: mcp carries on with monitors of its own.
	stopDaemon()
	<-daemonDone
	daemonStopped = true
	if got := callJSON("status"); got["version"] == nil {
		t.Fatalf("status after the daemon went away: %v", got)
	}
	if hooked.starts.Load() != 1 {
		t.Fatalf("monitors started %d times after the daemon went away, want 1", hooked.starts.Load())
	}

	c.Close()
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("mcp exited %d; stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcp did not exit when stdin closed")
	}
	if hooked.stops.Load() != 1 {
		t.Errorf("own monitors stopped %d times", hooked.stops.Load())
	}
}
