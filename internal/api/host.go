package api

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// LocalHost is this machine's name among the hosts of the config: a
// session of this machine may be named local:SESSION, and its part of a
// HostCursor is local:SEQ. No configured host may take the name.
const LocalHost = "local"

// SplitHost reads the HOST: prefix by which system3 names what another
// host calls a session, a pane, a target, an orchestrator or a wake
// ("web1:api", "web1:%3", "web1:w12-1"), the one place that does. host is
// the text before the first colon and rest what follows it; ok reports
// that a host was read. Without one, host is "" and rest is name whole.
//
// A name given to an action is split with isHost, which says whether a
// text is one of the hosts the caller follows (the config's hosts:):
// the prefix is a host only when it is LocalHost or isHost says so, and
// something follows the colon. Anything else is this machine's name,
// whole: tmux's targets "sess:0.1" and "web1:" (the session web1's
// current window), session ids "$2", a session whose name is no host.
//
// With a nil isHost every text before the first colon is a host, and
// rest may be empty: for what names a host only by its place, such as a
// pattern HOST:GLOB (where "web1:" selects every session of web1) or a
// part of a HostCursor.
func SplitHost(name string, isHost func(host string) bool) (host, rest string, ok bool) {
	host, rest, ok = strings.Cut(name, ":")
	if !ok {
		return "", name, false
	}
	if isHost == nil {
		return host, rest, true
	}
	if rest == "" || host != LocalHost && !isHost(host) {
		return "", name, false
	}
	return host, rest, true
}

// JoinHost is what this machine calls name of host: HOST:NAME, which
// SplitHost reads back.
func JoinHost(host, name string) string { return host + ":" + name }

// HostCursor is, per host, the seq of the last wake a caller has seen
// there: "local:12,web1:40". Wakes are numbered by each host's journal, so
// one number per host says what was delivered.
type HostCursor map[string]uint64

// ParseHostCursor reads a cursor in String's form ("" is the empty
// cursor); ok is false when a part is not HOST:SEQ. Callers say which of
// their inputs was wrong.
func ParseHostCursor(s string) (c HostCursor, ok bool) {
	c = HostCursor{}
	if strings.TrimSpace(s) == "" {
		return c, true
	}
	for _, part := range strings.Split(s, ",") {
		name, num, found := SplitHost(strings.TrimSpace(part), nil)
		seq, err := strconv.ParseUint(num, 10, 64)
		if !found || err != nil || name == "" {
			return nil, false
		}
		c[name] = seq
	}
	return c, true
}

// String is the cursor as ParseHostCursor reads it, hosts in name order.
func (c HostCursor) String() string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = JoinHost(n, strconv.FormatUint(c[n], 10))
	}
	return strings.Join(parts, ",")
}

// HostWake is a wake of one host. As `wait --all-hosts --json` prints it,
// its session is HOST:SESSION, host names the host alone, and cursor is
// the --since that skips it and every wake seen before.
type HostWake struct {
	Wake
	Host   string `json:"host"`
	Cursor string `json:"cursor,omitempty"`
}

// HostReport is what one host said, or why it said nothing.
type HostReport struct {
	Name      string
	Connected bool
	// LastSeen is when it last answered (now, when Connected).
	LastSeen time.Time
	// Err says why it is disconnected.
	Err      error
	Snapshot Snapshot
	// Unacked are its unacknowledged wakes.
	Unacked []Wake
}
