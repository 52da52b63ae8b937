package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/ipc"
	"github.com/system3-dev/system3/internal/remote"
)

// hostsStatusDoc is the JSON document of `status --all-hosts --json` (and
// --host): every host's connection and the sessions of those that
// answered, each named HOST:SESSION.
type hostsStatusDoc struct {
	Schema      string           `json:"schema"`
	GeneratedAt time.Time        `json:"generated_at"`
	Hosts       []hostStatus     `json:"hosts"`
	Sessions    []hostSessionDoc `json:"sessions"`
}

type hostStatus struct {
	Name string `json:"name"`
	// State is connected or disconnected; Error says why when
	// disconnected.
	State    string    `json:"state"`
	Error    string    `json:"error,omitempty"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Source is "daemon" or "snapshot", as for status; a remote host is
	// "daemon" (asked over ssh now) or "followed" (what this machine's
	// daemon, which follows the host, last heard from it).
	Source        string `json:"source,omitempty"`
	Server        string `json:"server,omitempty"`
	ServerRunning bool   `json:"server_running"`
	NeedsPerson   int    `json:"needs_person"`
	Problem       string `json:"problem,omitempty"`
}

// hostSessionDoc is a api.Session of one host: session and target carry
// the host's name (HOST:SESSION), host names it alone.
type hostSessionDoc struct {
	Host string `json:"host"`
	api.Session
}

func (a *app) statusHosts(ctx context.Context, names []string, asJSON bool) error {
	doc := hostsStatusDoc{Schema: "system3.status-hosts/v1", Hosts: make([]hostStatus, len(names)), Sessions: []hostSessionDoc{}}
	sessions := make([][]api.Session, len(names))
	seen := a.LoadSeen()
	var links []*remote.Link
	var mu sync.Mutex
	var wg sync.WaitGroup
	followed := a.followedHosts(ctx)
	for i, name := range names {
		wg.Go(func() {
			hs := hostStatus{Name: name, State: "connected"}
			var snap api.Snapshot
			var err error
			if name == api.LocalHost {
				snap, hs.NeedsPerson, hs.Source, err = a.SessionStates(ctx)
				if err == nil {
					hs.LastSeen = time.Now().UTC()
				}
			} else if d, ok := followed[name]; ok {
				// The local daemon follows this host: what its streams
				// said, without an ssh call.
				hs.Source, hs.LastSeen, hs.NeedsPerson = "followed", d.LastSeen.UTC(), api.NeedingPerson(d.Unacked)
				snap = d.Snapshot
				if !d.Connected {
					err = errors.New(cmp.Or(d.Error, "not connected"))
					if d.LastSeen.IsZero() {
						hs.LastSeen = seen[name].LastSeen
					}
				}
			} else {
				h, _ := a.RemoteHost(name)
				l := remote.NewLink(h)
				defer l.Close()
				mu.Lock()
				links = append(links, l)
				mu.Unlock()
				hs.Source = "daemon"
				// Both calls at once: each is one ssh process, and most
				// of its time is ssh and the remote system3 starting.
				var evs []api.Wake
				var werr error
				var both sync.WaitGroup
				both.Go(func() { evs, werr = l.Client.Wakes(ctx, api.WakeFilter{}) })
				snap, err = l.Client.Snapshot(ctx)
				both.Wait()
				if err = l.Observe(ctx, err); err == nil {
					err = l.Observe(ctx, werr)
					hs.NeedsPerson = api.NeedingPerson(evs)
				}
				hs.LastSeen = l.State().LastSeen.UTC()
				if hs.LastSeen.IsZero() {
					hs.LastSeen = seen[name].LastSeen
				}
			}
			if err != nil {
				hs.State, hs.Error, hs.Source = "disconnected", err.Error(), ""
			} else {
				hs.Server, hs.ServerRunning, hs.Problem = snap.Server, snap.Running, snap.Problem
				sessions[i] = snap.Sessions
			}
			doc.Hosts[i] = hs
		})
	}
	wg.Wait()
	a.RecordSeen(links)
	doc.GeneratedAt = time.Now().UTC()
	for i, name := range names {
		for _, s := range sessions[i] {
			s.Session = api.JoinHost(name, s.Session)
			s.Target = api.JoinHost(name, s.Target)
			doc.Sessions = append(doc.Sessions, hostSessionDoc{Host: name, Session: s})
		}
	}
	sort.SliceStable(doc.Sessions, func(i, j int) bool { return doc.Sessions[i].Session.Session < doc.Sessions[j].Session.Session })
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return writeHostsStatus(a.stdout, doc, time.Now())
}

// followedHosts asks this machine's daemon what it knows of the config's
// hosts, which it follows; empty when no daemon runs, it predates that
// question, or it follows none. Hosts are matched by name: the daemon of
// this state dir reads the same config unless it was given another.
func (a *app) followedHosts(ctx context.Context) map[string]remote.ReportDoc {
	out := map[string]remote.ReportDoc{}
	if len(a.RemoteHosts()) == 0 {
		return out
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(dctx, a.SocketPath())
	if err != nil {
		return out
	}
	defer c.Close()
	var docs []remote.ReportDoc
	if err := c.Hosts(dctx, &docs); err != nil {
		a.Log.Debug("the daemon does not report its hosts; asking them", "err", err)
		return out
	}
	for _, d := range docs {
		out[d.Name] = d
	}
	return out
}

func writeHostsStatus(w io.Writer, doc hostsStatusDoc, now time.Time) error {
	for _, h := range doc.Hosts {
		switch {
		case h.State != "connected":
			last := "never seen"
			if !h.LastSeen.IsZero() {
				last = "last seen " + age(now.Sub(h.LastSeen))
			}
			fmt.Fprintf(w, "%s: disconnected (%s): %s\n", sanitize(h.Name), last, sanitize(h.Error))
		case !h.ServerRunning:
			fmt.Fprintf(w, "%s: no tmux server is running (%s)\n", sanitize(h.Name), sanitize(h.Server))
		default:
			n := 0
			for _, s := range doc.Sessions {
				if s.Host == h.Name {
					n++
				}
			}
			fmt.Fprintf(w, "%s: %s, %s\n", sanitize(h.Name), count(n, "pane", "panes"), api.NeedingPersonText(h.NeedsPerson))
		}
		if h.Problem != "" {
			fmt.Fprintf(w, "%s: problem: %s\n", sanitize(h.Name), sanitize(h.Problem))
		}
	}
	if len(doc.Sessions) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPANE\tCOMMAND\tAGENT\tSTATE\tDETAIL")
	for _, s := range doc.Sessions {
		detail := s.Question
		if detail == "" {
			detail = s.LastLine
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sanitize(s.Session.Session), sanitize(s.Pane), sanitize(s.Command), sanitize(s.Agent),
			stateKind(string(s.State), s.Kind), sanitize(strings.TrimSpace(detail)))
	}
	return tw.Flush()
}
