package monitor

import (
	"maps"
	"slices"
)

// SetProblem records a condition another part of the process wants the
// operator to see in the snapshot's problem (the dashboard header, status,
// the web page), under a source name ("notify"); an empty msg clears it.
func (s *Supervisor) SetProblem(source, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
