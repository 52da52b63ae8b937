// Package coach detects behaviour patterns (loops) in the tool calls of
// supervised agents, reminds the agent of the user's own CLAUDE.md
// directive at the right moment (before the loop's last round when the
// pattern is preventive), and measures whether each reminder worked, so
// the most effective one is chosen next time. Patterns are data from the
// rules file; alerts and effectiveness live in the learn database.
package coach

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// Config configures a Coach.
type Config struct {
	// DB is the learn database (learn.OpenDB); New migrates the coach's
	// tables.
	DB *sql.DB
	// Patterns are the behaviour patterns in force (rules.Engine.Patterns);
	// SetPatterns replaces them.
	Patterns []rules.Pattern
	// Source, when set, is asked for the patterns instead (a process that
	// does not detect but serves the CLI or MCP, reading the rules file).
	Source func() []rules.Pattern
	// Directives are the CLAUDE.md files to quote (see DirectiveFiles);
	// they are read again whenever a reminder is composed.
	Directives []api.DirectiveFile
	// Inject sends reminders (auto_send patterns, Send). Nil: reminders
	// are only offered.
	Inject api.Injector
	// Wakes receives a wake per alert. Nil: alerts are only recorded (a
	// process that serves MCP or the CLI but does not detect).
	Wakes  api.WakeRaiser
	Clock  func() time.Time
	Logger *slog.Logger
	// Queue bounds the tool calls waiting for Run (default 1024); Observe
	// drops calls past it and counts them.
	Queue int
	// Tick is how often Run settles alerts whose window passed (default 5s).
	Tick time.Duration
}

// Coach detects patterns in tool calls and keeps their alerts. Its
// methods are safe for concurrent use; several processes may share one
// database.
type Coach struct {
	cfg      Config
	db       *sql.DB
	patterns atomic.Pointer[[]rules.Pattern]
	queue    chan api.ToolCall
	dropped  atomic.Uint64

	mu    sync.Mutex
	panes map[string]*paneHistory
	// seen are the ids of recent calls, oldest first in seenOrder, so a
	// call reported by both a transcript and a hook counts once.
	seen      map[string]struct{}
	seenOrder []string
}

// New opens the coach on a database, migrating its tables.
func New(ctx context.Context, cfg Config) (*Coach, error) {
	if cfg.DB == nil {
		return nil, errors.New("coach: Config needs DB")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 5 * time.Second
	}
	if err := Migrate(ctx, cfg.DB); err != nil {
		return nil, err
	}
	c := &Coach{cfg: cfg, db: cfg.DB, queue: make(chan api.ToolCall, cfg.Queue), panes: map[string]*paneHistory{}, seen: map[string]struct{}{}}
	c.SetPatterns(cfg.Patterns)
	return c, nil
}

func (c *Coach) now() time.Time { return c.cfg.Clock() }

// SetPatterns replaces the patterns in force (after the rules file changed).
func (c *Coach) SetPatterns(ps []rules.Pattern) {
	cp := append([]rules.Pattern(nil), ps...)
	c.patterns.Store(&cp)
}

// Patterns returns the patterns in force.
func (c *Coach) Patterns() []rules.Pattern {
	if c.cfg.Source != nil {
		return c.cfg.Source()
	}
	return *c.patterns.Load()
}

// Pattern returns one pattern by id.
func (c *Coach) Pattern(id string) (rules.Pattern, bool) {
	for _, p := range c.Patterns() {
		if p.ID == id {
			return p, true
		}
	}
	return rules.Pattern{}, false
}

// Observe queues a tool call for Run. It never blocks: past the queue's
// bound the call is dropped and counted (Dropped).
func (c *Coach) Observe(tc api.ToolCall) {
	select {
	case c.queue <- tc:
	default:
		if c.dropped.Add(1) == 1 {
			c.cfg.Logger.Warn("coach: tool calls dropped (queue full)")
		}
	}
}

// Dropped is how many observed calls were dropped because Run fell behind.
func (c *Coach) Dropped() uint64 { return c.dropped.Load() }

// Run handles observed calls and settles alerts whose window passed, until
// ctx ends.
func (c *Coach) Run(ctx context.Context) error {
	tick := time.NewTicker(c.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case tc := <-c.queue:
			if _, err := c.Handle(ctx, tc); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("coach: handle tool call", "pane", tc.Pane, "tool", tc.Tool, "err", err)
			}
		case <-tick.C:
			if err := c.Settle(ctx); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("coach: settle alerts", "err", err)
			}
		}
	}
}
