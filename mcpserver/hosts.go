package mcpserver

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Hosts are the other machines whose system3 daemons this server reports
// beside its own (the config's hosts:, reached over ssh: see
// internal/remote). Their sessions and wakes are named HOST:SESSION.
type Hosts interface {
	// Report asks every host at once, each within its own deadline, and
	// returns one report per host: a host that does not answer in time is
	// reported disconnected.
	Report(ctx context.Context) []api.HostReport
	// WaitWake waits for the first wake matching f on any host for which
	// match is true, each host from its seq in since on.
	WaitWake(ctx context.Context, f api.WakeFilter, since map[string]uint64, match func(host string) bool) (api.HostWake, error)
	// Ack acknowledges wake id on host.
	Ack(ctx context.Context, host, id, by string) (api.Wake, error)
}

// hostRow is one host in status and list_sessions.
type hostRow struct {
	Name string `json:"name"`
	// State is connected or disconnected.
	State       string    `json:"state"`
	LastSeen    time.Time `json:"last_seen,omitzero"`
	Error       string    `json:"error,omitempty"`
	Sessions    int       `json:"sessions"`
	NeedsPerson int       `json:"needs_person"`
}

func hostRowOf(r api.HostReport) hostRow {
	h := hostRow{Name: r.Name, State: "connected", LastSeen: r.LastSeen.UTC(), Sessions: len(r.Snapshot.Sessions), NeedsPerson: api.NeedingPerson(r.Unacked)}
	if r.LastSeen.IsZero() {
		h.LastSeen = time.Time{}
	}
	if !r.Connected {
		h.State, h.Sessions, h.NeedsPerson = "disconnected", 0, 0
		if r.Err != nil {
			h.Error = r.Err.Error()
		}
	}
	return h
}

// splitHostGlob splits a session glob HOST:GLOB into the host's glob and
// the session's; a glob without a colon is any host's.
func splitHostGlob(glob string) (hostGlob, sessGlob string, err error) {
	h, s, ok := api.SplitHost(glob, nil)
	if !ok {
		return "*", glob, nil
	}
	if _, err := path.Match(h, ""); err != nil {
		return "", "", fmt.Errorf("host glob %q is not valid", h)
	}
	return h, s, nil
}

func globMatch(glob, s string) bool {
	ok, _ := path.Match(glob, s)
	return ok
}

// parseHostCursor reads wait_for_wake's host_cursor, "web1:40,gpu:3".
func parseHostCursor(s string) (api.HostCursor, error) {
	c, ok := api.ParseHostCursor(s)
	if !ok {
		return nil, fmt.Errorf("host_cursor %q: each part must be HOST:SEQ, like \"web1:40,gpu:3\" (the host_cursor a previous wait_for_wake returned)", s)
	}
	return c, nil
}

// thisMachine drops what a service that joins the hosts' sessions and
// wakes to this machine's (internal/remote's Fleet) added: status and
// list_sessions take each host's from its report instead, with the host's
// state beside it. This machine's sessions have no Host; its wake ids and
// panes never hold a colon, a host's are HOST:ID and HOST:%3.
func thisMachine(snap api.Snapshot, evs []api.Wake) (api.Snapshot, []api.Wake) {
	sessions := make([]api.Session, 0, len(snap.Sessions))
	for _, s := range snap.Sessions {
		if s.Host == "" {
			sessions = append(sessions, s)
		}
	}
	snap.Sessions = sessions
	local := make([]api.Wake, 0, len(evs))
	for _, ev := range evs {
		if _, _, hosted := api.SplitHost(ev.ID, nil); !hosted {
			local = append(local, ev)
		}
	}
	return snap, local
}
