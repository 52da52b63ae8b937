package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/system3-dev/system3/monitor/rules"
)

// rulesCheckEvery is how often the user's rules file is checked for a
// change: one stat, so cheap enough, and it sees a file created, edited,
// replaced or removed, even where its directory did not exist at start.
const rulesCheckEvery = 2 * time.Second

// rulesTarget is what reloaded rules are handed to (the supervisor).
type rulesTarget interface {
	SetRules(*rules.Engine)
	SetRulesProblem(string)
}

// watchRules reloads the rules whenever rules.yaml differs from last (its
// stamp when the rules in force were loaded: taken before loading them, so
// no change in between is missed). A file that does not load keeps the
// previous rules in force and is reported as a problem until it is fixed.
func (a *app) watchRules(ctx context.Context, t rulesTarget, every time.Duration, last fileStamp) error {
	path := a.rulesPath()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur := stampOf(path)
		if cur == last {
			continue
		}
		last = cur
		e, err := a.loadRules()
		if err != nil {
			a.log.Warn("rules not reloaded", "path", path, "err", err)
			t.SetRulesProblem(fmt.Sprintf("rules not reloaded: %v; the previous rules stay in force", err))
			continue
		}
		t.SetRulesProblem("")
		t.SetRules(e)
		a.log.Info("rules reloaded", "path", path, "rules", len(e.Rules()))
	}
}

// fileStamp tells whether a file changed between two looks.
type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, mod: fi.ModTime(), size: fi.Size()}
}
