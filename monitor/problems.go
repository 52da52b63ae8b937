package monitor

import (
	"maps"
	"slices"

	"github.com/system3-dev/system3/internal/api"
)

// SetProblem records a condition another part of the process wants the
// operator to see in the snapshot's problem (the dashboard header, status,
// the web page), under a source name ("notify"); an empty msg clears it.
func (s *Supervisor) SetProblem(source, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publishStatusLocked()
	if msg == "" {
		delete(s.extraProblems, source)
		return
	}
	if s.extraProblems == nil {
		s.extraProblems = map[string]string{}
	}
	s.extraProblems[source] = msg
}

// extraProblemLocked joins the recorded problems in source order.
func (s *Supervisor) extraProblemLocked() string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(s.extraProblems)) {
		out = append(out, s.extraProblems[k])
	}
	return joinProblems(out...)
}

// statusBoard is the registry's status as last published to watchers, and
// the wake journal's and audit log's problems as last read (checkHealth):
// each has its own lock, so they are read outside the registry's.
type statusBoard struct {
	published api.Status
	health    string
}

// statusLocked is the registry's status: the server's state and every
// problem, the journal's and the audit log's as last read.
func (s *Supervisor) statusLocked() api.Status {
	return api.Status{Server: s.cfg.Server, Running: s.running,
		Problem: joinProblems(s.problem, s.rulesProblem, s.extraProblemLocked(), s.status.health)}
}

// publishStatusLocked tells watchers the status (a StatusChanged update)
// when it differs from what they were last told, so a dashboard's header
// follows the server and the problems without asking for snapshots.
func (s *Supervisor) publishStatusLocked() {
	st := s.statusLocked()
	if st == s.status.published {
		return
	}
	s.status.published = st
	s.publishLocked(api.Update{Kind: api.StatusChanged, Status: &st})
}

// checkHealth reads the journal's and the audit log's health and
// publishes the status when it changed; it runs every tick and with every
// snapshot.
func (s *Supervisor) checkHealth() {
	var ps []string
	if h := s.cfg.Wakes.Health(); h.Err != nil {
		ps = append(ps, h.Err.Error())
	}
	if err := s.cfg.Audit.Health(); err != nil {
		ps = append(ps, err.Error())
	}
	s.mu.Lock()
	s.status.health = joinProblems(ps...)
	s.publishStatusLocked()
	s.mu.Unlock()
}
