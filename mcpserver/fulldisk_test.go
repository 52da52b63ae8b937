package mcpserver

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/learn"
)

// report_outcome on a full disk used to answer JSON-RPC -32603 (an internal
// error) instead of a tool error saying what to do. The disk is full in a
// child process only (RLIMIT_FSIZE; Go ignores SIGXFSZ).
func TestReportOutcomeOnFullDiskIsAToolError(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestReportOutcomeFullDiskHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "MCP_FULLDISK_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tool error: ") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

func TestReportOutcomeFullDiskHelper(t *testing.T) {
	dir := os.Getenv("MCP_FULLDISK_DIR")
	if dir == "" {
		return // only a helper
	}
	ls, err := learn.OpenOptions(dir, learn.Options{Clock: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	c := inProcess(t, newServer(t, fixture(t), Options{}, backend.Parts{Learn: ls}), "full-disk")
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1, Max: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := callErr(c, "report_outcome", map[string]any{"initiative": "add login", "outcome": "success", "reasoning_path": testReasoning,
		"learnings": []any{strings.Repeat("a long learning ", 50)}})
	if err != nil {
		t.Fatalf("report_outcome on a full disk failed the call: %v", err)
	}
	if !res.IsError || !strings.Contains(text(res), "free disk space") {
		t.Fatalf("report_outcome on a full disk = %s, want a tool error saying what to do", text(res))
	}
	t.Logf("tool error: %s", text(res))
}
