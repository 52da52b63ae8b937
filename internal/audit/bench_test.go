package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// BenchmarkWrite is one MCP tool call's entry appended to the log.
func BenchmarkWrite(b *testing.B) {
	l := Open(b.TempDir())
	defer l.Close()

	e := api.AuditEntry{Time: time.Now(), Origin: "mcp:bench", Action: "tool_call", Tool: "status", Args: "{}",
		Result: strings.Repeat(`{"version":"v1","orchestrators":[]}`, 14)}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(e); err != nil {
			b.Fatal(err)
		}
	}
}
