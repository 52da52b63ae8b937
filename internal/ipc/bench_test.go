package ipc

import (
	"context"
	"testing"

	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/facadetest"
)

// What a process attached to the daemon pays at its start to learn the
// service's parts (Features, then Agents: the dashboard and the MCP
// server ask once), beside one snapshot, over the real socket.
func BenchmarkAttachQuestions(b *testing.B) {
	c := dialBench(b, facadetest.Over(newFake(b)))
	ctx := context.Background()
	b.Run("features+agents", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Features(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Agents(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func dialBench(b *testing.B, svc facade.Service) *Client {
	b.Helper()
	ts := serve(b, svc)
	c, err := Dial(context.Background(), ts.path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}
