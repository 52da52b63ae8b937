package api

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultActionsPerMinute is the default cap on the actions MCP clients
// take on one pane in one minute.
const DefaultActionsPerMinute = 30

// ErrRefused: the policy does not let this origin take this action (a
// session outside the allowlist, read-only, or the rate limit).
var ErrRefused = errors.New("not allowed")

// PolicyConfig is what the operator allows MCP clients (config.yaml's mcp
// section). Actions a person takes at the dashboard or the CLI, and
// system3's own, are not bound by it.
type PolicyConfig struct {
	// AllowSessions are path.Match globs of the tmux sessions MCP clients
	// may act on; empty allows every session.
	AllowSessions []string
	// ReadOnly refuses every action of MCP clients.
	ReadOnly bool
	// PerMinute caps MCP clients' actions per pane per minute; 0 means
	// DefaultActionsPerMinute, negative means no cap.
	PerMinute int
}

// Policy is the one check every action goes through, in the process that
// runs the monitors: whichever process an MCP client reached (the
// dashboard, system3 serve, a second system3 mcp over the socket), its
// actions on a pane meet the same allowlist, the same read-only switch and
// the same per-pane count.
type Policy struct {
	cfg   PolicyConfig
	clock func() time.Time

	mu     sync.Mutex
	recent map[string][]time.Time // pane (or "session:<name>") -> action times in the last minute
}

// NewPolicy checks cfg and returns its policy; a nil clock is time.Now.
func NewPolicy(cfg PolicyConfig, clock func() time.Time) (*Policy, error) {
	for _, g := range cfg.AllowSessions {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("mcp.allow_sessions: %q is not a valid glob (use *, ? and [a-z]): %w", g, err)
		}
	}
	if cfg.PerMinute == 0 {
		cfg.PerMinute = DefaultActionsPerMinute
	}
	if clock == nil {
		clock = time.Now
	}
	return &Policy{cfg: cfg, clock: clock, recent: map[string][]time.Time{}}, nil
}

// Config returns the policy's settings, defaults filled in.
func (p *Policy) Config() PolicyConfig { return p.cfg }

// claimed is what an origin acts for: over the socket, the client's claim.
// Claimed is what an origin claims to act for: over the socket, the
// client's claim (`socket:pid=…,exe=… claims "cli"` is "cli"); any other
// origin is itself. The socket serves only the daemon's own user, so the
// claim decides what an operator may do through it.
func Claimed(origin string) string { return claimed(origin) }

// ShortOrigin names an origin for one-line views: a socket peer as what it
// claims and its pid ("cli (pid 4242)"), and the agent CLI that ran it
// ("cli (pid 4242) run by claude (pid 987)": a supervising agent's
// command); the audit log keeps the whole origin.
func ShortOrigin(origin string) string {
	rest, ok := strings.CutPrefix(origin, "socket:")
	if !ok {
		return origin
	}
	c := claimed(origin)
	if c == origin {
		c = "a socket client"
	}
	if pid, more, ok := strings.Cut(strings.TrimPrefix(rest, "pid="), ","); ok && strings.HasPrefix(rest, "pid=") {
		c += " (pid " + pid + ")"
		if ag, ok := strings.CutPrefix(more, "agent="); ok {
			ag, _, _ = strings.Cut(ag, ",")
			if name, apid, ok := strings.Cut(ag, ":"); ok {
				c += " run by " + name + " (pid " + apid + ")"
			}
		}
	}
	return c
}

func claimed(origin string) string {
	if rest, ok := strings.CutPrefix(origin, "socket:"); ok {
		if _, claim, ok := strings.Cut(rest, " claims "); ok {
			if c, err := strconv.Unquote(claim); err == nil {
				return c
			}
		}
	}
	return origin
}

// DeliveryOrigin is the origin of the wakes system3 types into (or hands
// through the Stop hook of) the supervisor pane the operator configured:
// system3's own action, audited under this name.
const DeliveryOrigin = "supervisor-delivery"

// ResumeOrigin is the origin of what system3 types to continue an agent
// whose usage limit has reset (monitor.resume_after_limit): system3's own
// action, audited under this name.
const ResumeOrigin = "resume-after-limit"

// PolicyOrigin is the origin of the permission decisions the approval
// policy's rules make (docs/policy.md): rules the operator wrote, so the
// operator's, which the MCP policy does not hold back. An ask the policy
// raises is answered under the origin of whoever answers it.
const PolicyOrigin = "policy"

// OperatorOrigin reports whether an origin is a person at this machine
// ("tui", "cli") or system3 itself (automatic coaching reminders, the
// wakes it delivers to the configured supervisor pane, the decisions of
// the operator's approval policy, the continue it types after a usage
// limit reset), which the MCP
// policy does not bind. Every other origin, "mcp:<client>", a
// reminder an MCP client asked for ("coach:mcp:<client>") and an empty or
// unknown one alike, is bound by it.
//
// Over the socket the origin is the peer the daemon saw, then what the
// client claims to act for (`socket:pid=…,exe=… claims "cli"`): the claim
// decides, since the socket serves only the daemon's own user, who could
// run the CLI as well; a claim of "mcp:…" is bound like any MCP client.
// A peer an agent CLI ran (`socket:pid=…,agent=claude:987,…`: a
// supervising agent's `system3 answer`, an orchestrator's shell) is an
// agent, whatever it claims, and is bound like an MCP client.
func OperatorOrigin(origin string) bool {
	if strings.HasPrefix(origin, "socket:") {
		c := claimed(origin)
		return !strings.HasPrefix(c, "socket:") && !RunByAgent(origin) && OperatorOrigin(c)
	}
	switch strings.TrimPrefix(origin, "coach:") {
	case "tui", "cli", "auto", DeliveryOrigin, PolicyOrigin, ResumeOrigin:
		return true
	}
	return false
}

// RunByAgent reports whether the daemon saw that an agent CLI ran the
// socket peer an origin names (its verified part holds "agent=").
func RunByAgent(origin string) bool {
	name, _ := runBy(origin)
	return name != ""
}

// runBy is the agent CLI, and its pid, that ran the socket peer an origin
// names, from the daemon's part of it ("agent=claude:987"); "" when none.
func runBy(origin string) (name, pid string) {
	rest, ok := strings.CutPrefix(origin, "socket:")
	if !ok {
		return "", ""
	}
	verified, _, _ := strings.Cut(rest, " claims ")
	for _, f := range strings.Split(verified, ",") {
		if ag, ok := strings.CutPrefix(f, "agent="); ok {
			name, pid, _ = strings.Cut(ag, ":")
			return name, pid
		}
	}
	return "", ""
}

// who names an origin in a refusal: what it claims, and the agent that
// ran it.
func who(origin string) string {
	w := claimed(origin)
	if w == "" {
		w = "an unnamed client"
	}
	if name, pid := runBy(origin); name != "" {
		w += " run by " + name + " (pid " + pid + ")"
	}
	return w
}

// Check returns nil when origin may take action on sess, or an error
// matching ErrRefused that names the rule and what to do. sess is the
// session the action will really act on: callers resolve the target first.
// An allowed action counts toward the pane's rate (the session's, for an
// action on a whole session, like spawn and stop).
func (p *Policy) Check(origin, action string, sess Session) error {
	return p.check(origin, action, sess, true)
}

// CheckUncounted is Check without counting toward a rate, for what
// touches no pane (removing the stale link of a session that is gone).
func (p *Policy) CheckUncounted(origin, action string, sess Session) error {
	return p.check(origin, action, sess, false)
}

func (p *Policy) check(origin, action string, sess Session, rate bool) error {
	if p == nil || OperatorOrigin(origin) {
		return nil
	}
	if p.cfg.ReadOnly {
		return fmt.Errorf("%w: system3's MCP access is read-only (mcp.read_only or --read-only), so %s may not %s; a person can act from the dashboard or the CLI", ErrRefused, who(origin), action)
	}
	if len(p.cfg.AllowSessions) > 0 {
		ok := false
		for _, g := range p.cfg.AllowSessions {
			if m, _ := path.Match(g, sess.Session); m {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("%w: session %q is not in mcp.allow_sessions (%s), so MCP clients may not %s it; a person can add it to system3's config.yaml",
				ErrRefused, sess.Session, strings.Join(p.cfg.AllowSessions, ", "), verbOf(action))
		}
	}
	if p.cfg.PerMinute < 0 || !rate {
		return nil
	}
	key, what := sess.Pane, "pane "+sess.Pane
	if key == "" {
		key, what = "session:"+sess.Session, "session "+sess.Session
	}
	now := p.clock()
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := p.recent[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= time.Minute {
		i++
	}
	ts = ts[i:]
	if len(ts) >= p.cfg.PerMinute {
		wait := time.Minute - now.Sub(ts[0])
		p.recent[key] = ts
		return fmt.Errorf("%w: rate limit: %d MCP actions on %s in the last minute (mcp.inject_per_minute is %d); try again in %s",
			ErrRefused, len(ts), what, p.cfg.PerMinute, wait.Round(time.Second))
	}
	p.recent[key] = append(ts, now)
	for k, t := range p.recent {
		if len(t) > 0 && now.Sub(t[len(t)-1]) >= time.Minute {
			delete(p.recent, k)
		}
	}
	return nil
}

// CheckWrite refuses a write that touches no pane (acknowledging a wake,
// reporting an outcome or an intervention) by an MCP client whose access
// is read-only; neither the allowlist nor the rate, which are about panes,
// applies. what names the write in the refusal: "acknowledge wakes".
func (p *Policy) CheckWrite(origin, what string) error {
	if p == nil || OperatorOrigin(origin) || !p.cfg.ReadOnly {
		return nil
	}
	return fmt.Errorf("%w: system3's MCP access is read-only (mcp.read_only or --read-only), so %s may not %s; a person can, from the dashboard or the CLI", ErrRefused, who(origin), what)
}

// verbOf is how a refusal names an action: "stop" it, "type into" it.
func verbOf(action string) string {
	switch action {
	case "inject", "keys", "answer", "interrupt", "":
		return "type into"
	case "link", "unlink":
		return "link"
	}
	return action
}

// AllowRequest asks whether an action on a whole tmux session may go
// ahead: spawn (the session to be created) and stop (the session that will
// be killed, as resolved); or, with no session, a write that touches no
// pane (report_outcome, report_intervention). The pane actions check
// themselves.
type AllowRequest struct {
	Action  string `json:"action"`
	Session string `json:"session"`
	Origin  string `json:"origin"`
}
