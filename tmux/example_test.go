package tmux_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/system3-dev/system3/tmux"
)

// A supervisor watches a server, re-lists on resync and captures only the
// panes that changed. It polls; no control client is attached.
func ExampleWatcher() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := tmux.Server{} // the user's default server
	w := tmux.NewWatcher(srv, tmux.WatcherOptions{})
	c := tmux.NewClient(srv)

	go func() {
		if err := w.Run(ctx); err != nil {
			log.Print(err)
		}
	}()
	for ev := range w.Events() {
		switch ev.Kind {
		case tmux.EventResync, tmux.EventSessionsChanged:
			panes, err := c.ListPanes(ctx)
			if errors.Is(err, tmux.ErrNoServer) {
				fmt.Printf("no tmux server is running on %s; start one with tmux new-session\n", srv)
				continue
			}
			fmt.Println(len(panes), "panes")
		case tmux.EventOutput:
			text, err := c.Capture(ctx, ev.PaneID, tmux.CaptureOptions{})
			if err == nil {
				fmt.Println(ev.PaneID, "shows", len(text), "bytes")
			}
		}
	}
}

// Text is data: it is typed or pasted literally, then Enter is pressed and
// the pane checked.
func ExampleClient_SendText() {
	ctx := context.Background()
	c := tmux.NewClient(tmux.Server{Name: "agents"})
	res, err := c.SendText(ctx, "%3", "run the tests; then fix C-c handling", tmux.SendOptions{})
	if err != nil {
		log.Fatal(err) // e.g. "send text to %3 on tmux server -L agents: can't find pane: %3"
	}
	fmt.Println(res.Delivered, res.Verified, res.Attempts)
}
