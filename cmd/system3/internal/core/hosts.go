package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/remote"
	"github.com/system3-dev/system3/mcpserver"
	"github.com/system3-dev/system3/tui"
)

// hostsSeenFile keeps, per host, when it last answered and why it last
// failed, so a listing can say when a host that is down was last seen.
const hostsSeenFile = "hosts-seen.json"

// HostSeen is when a host last answered, and why it last failed.
type HostSeen struct {
	LastSeen time.Time `json:"last_seen,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// RemoteHosts are the configured hosts.
func (a *App) RemoteHosts() []remote.Host {
	return a.Settings.File.RemoteHosts(a.Settings.Home)
}

// RemoteHost is the configured host called name.
func (a *App) RemoteHost(name string) (remote.Host, error) {
	var names []string
	for _, h := range a.RemoteHosts() {
		if h.Name == name {
			return h, nil
		}
		names = append(names, h.Name)
	}
	if len(names) == 0 {
		return remote.Host{}, fmt.Errorf("no host %q: the config (%s) has no hosts: section; see docs/remote.md", name, a.Settings.ConfigPath)
	}
	return remote.Host{}, fmt.Errorf("no host %q in the config; the hosts are %s and %s", name, api.LocalHost, strings.Join(names, ", "))
}

// IsHost reports whether name is a host of the config, which is how
// api.SplitHost tells another host's session, pane, wake or orchestrator
// given to a command (HOST:NAME) from a tmux target of this machine.
func (a *App) IsHost(name string) bool {
	_, err := a.RemoteHost(name)
	return err == nil
}

// RecordSeen merges what was learnt of hosts into the state dir's record.
// Several processes may write it: they take turns (an exclusive lock on a
// file beside it), and a later time is never replaced by an earlier one.
func (a *App) RecordSeen(links []*remote.Link) {
	path := filepath.Join(a.Settings.StateDir, hostsSeenFile)
	if lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		defer lock.Close()
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX) // released by Close
	}
	seen := a.LoadSeen()
	for _, l := range links {
		st := l.State()
		s := seen[l.Host.Name]
		if st.LastSeen.After(s.LastSeen) {
			s.LastSeen = st.LastSeen.UTC()
		}
		s.Error = ""
		if st.Err != nil {
			s.Error = st.Err.Error()
		}
		seen[l.Host.Name] = s
	}
	b, err := json.MarshalIndent(seen, "", "  ")
	if err != nil {
		return
	}
	tmp := path + ".tmp" + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		a.Log.Warn("record hosts seen", "err", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		a.Log.Warn("record hosts seen", "err", err)
	}
}

// LoadSeen reads, per host, when it last answered and why it last failed
// (empty when nothing was recorded).
func (a *App) LoadSeen() map[string]HostSeen {
	seen := map[string]HostSeen{}
	b, err := os.ReadFile(filepath.Join(a.Settings.StateDir, hostsSeenFile))
	if err == nil {
		json.Unmarshal(b, &seen)
	}
	return seen
}

// HostSet returns the config's hosts as one set for this process, nil
// when there are none. The first call starts following every host (two
// long-lived ssh processes each, see remote.Set.Start); a.close ends them
// and records when each host was last seen.
func (a *App) HostSet() *remote.Set {
	a.hostsMu.Lock()
	defer a.hostsMu.Unlock()
	if a.hosts != nil {
		return a.hosts
	}
	hosts := a.RemoteHosts()
	if len(hosts) == 0 {
		return nil
	}
	seen := a.LoadSeen()
	set := remote.NewSet(hosts, func(name string) time.Time { return seen[name].LastSeen })
	ctx, cancel := context.WithCancel(context.Background())
	set.Start(ctx)
	a.hosts, a.hostsStop = set, cancel
	return set
}

// closeHosts ends the links of HostSet, recording when each host was last
// seen.
func (a *App) closeHosts() {
	a.hostsMu.Lock()
	set, stop := a.hosts, a.hostsStop
	a.hosts, a.hostsStop = nil, nil
	a.hostsMu.Unlock()
	if set == nil {
		return
	}
	stop()
	set.Close()
	a.RecordSeen(set.Links())
}

// Fleet joins the config's hosts to svc (remote.Fleet): their sessions
// and wakes beside this machine's as HOST:NAME, and actions on them routed
// to their daemons, audited in this machine's audit log too. Without
// hosts it is svc.
func (a *App) Fleet(svc api.Service) api.Service {
	set := a.HostSet()
	if set == nil {
		return svc
	}
	log := audit.Open(a.Settings.StateDir)
	return &remote.Fleet{Service: svc, Set: set, Record: log.Write, Via: RoutedVia()}
}

// WithHosts gives an MCP server the config's hosts (nothing when there are
// none). Their links are the process's (HostSet): the returned function
// leaves them to a.close, which ends them when the command ends, so an
// MCP server started again (a dashboard taking over) finds them followed.
func (a *App) WithHosts(opts *mcpserver.Options) func() {
	if set := a.HostSet(); set != nil {
		opts.Hosts = set
	}
	return func() {}
}

// hostsEvery is how often the dashboard's header reads what is known of
// the config's hosts (from the streams followed, so it costs no ssh).
const hostsEvery = time.Second

// WatchHosts reads what is known of the config's hosts, now and every
// hostsEvery until ctx ends, for the dashboard's header; nil when there
// are none.
func (a *App) WatchHosts(ctx context.Context) func() []tui.HostStatus {
	set := a.HostSet()
	if set == nil {
		return nil
	}
	hosts := a.RemoteHosts()
	seen := a.LoadSeen()
	var mu sync.Mutex
	known := make([]tui.HostStatus, len(hosts))
	for i, h := range hosts {
		// Not connected until a host answers here.
		known[i] = tui.HostStatus{Name: h.Name, LastSeen: seen[h.Name].LastSeen}
	}
	go func() {
		t := time.NewTicker(hostsEvery)
		defer t.Stop()
		for {
			rs := set.Report(ctx)
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			for i, r := range rs {
				known[i] = tui.HostStatus{Name: r.Name, Connected: r.Connected, LastSeen: r.LastSeen}
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() []tui.HostStatus {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(known)
	}
}
