package mcpserver

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/monitor"
)

// policy decides which panes MCP clients may act on, and how often.
type policy struct {
	allow []string // globs on tmux session names; empty allows all
	limit int      // actions per pane per minute; <= 0: no cap
	clock func() time.Time

	mu     sync.Mutex
	recent map[string][]time.Time // pane -> action times in the last minute
}

func newPolicy(allow []string, perMinute int, clock func() time.Time) *policy {
	return &policy{allow: allow, limit: perMinute, clock: clock, recent: map[string][]time.Time{}}
}

// check returns why an action on s is refused, or "" when it may go ahead;
// an allowed action counts toward the pane's rate.
func (p *policy) check(s monitor.Session) string {
	if len(p.allow) > 0 {
		ok := false
		for _, g := range p.allow {
			if m, _ := path.Match(g, s.Session); m {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Sprintf("session %q is not in mcp.allow_sessions (%s), so MCP clients may not type into it; a person can add it to system3's config.yaml",
				s.Session, strings.Join(p.allow, ", "))
		}
	}
	if p.limit <= 0 {
		return ""
	}
	now := p.clock()
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := p.recent[s.Pane]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= time.Minute {
		i++
	}
	ts = ts[i:]
	if len(ts) >= p.limit {
		wait := time.Minute - now.Sub(ts[0])
		p.recent[s.Pane] = ts
		return fmt.Sprintf("rate limit: %d actions on pane %s in the last minute (mcp.inject_per_minute is %d); try again in %s",
			len(ts), s.Pane, p.limit, wait.Round(time.Second))
	}
	p.recent[s.Pane] = append(ts, now)
	for pane, t := range p.recent {
		if len(t) > 0 && now.Sub(t[len(t)-1]) >= time.Minute {
			delete(p.recent, pane)
		}
	}
	return ""
}
