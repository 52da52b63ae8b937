// Package facadetest provides the whole facade.Service for unit tests of
// the faces, the socket and the CLI: the fake api.Service of
// internal/testsupport/monitortest with fake orchestrators, a fake learning store and
// a fake coach, put together by backend.New as the daemon puts its own.
//
// It is not part of monitortest because backend imports
// internal/lifecycle, whose own tests use monitortest: monitortest
// importing backend would be an import cycle.
package facadetest

import (
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/backend"

	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// Backend is the whole facade.Service for tests: backend.New over Fake and
// the parts, so its Link tells the orchestrators, its Remind marks the
// coach's alert sent, and a part left out (With) answers
// facade.ErrUnavailable, as in the daemon. The fakes are its fields, for
// a test to script and to read what they were asked.
type Backend struct {
	facade.Service
	Fake          *monitortest.Service
	Orchestrators *Orchestrators
	Learn         *Learner
	Coach         *Coach
}

var _ facade.Service = (*Backend)(nil)

// NewBackend returns a Backend with every part a fake, over a fake
// api.Service whose wake store uses clock (nil: time.Now).
func NewBackend(t testing.TB, clock func() time.Time) *Backend {
	t.Helper()
	return Over(monitortest.NewService(t, clock))
}

// Over is NewBackend over a fake the test made.
func Over(fake *monitortest.Service) *Backend {
	b := &Backend{Fake: fake, Orchestrators: &Orchestrators{}, Learn: &Learner{}, Coach: &Coach{}}
	return b.With(b.Parts())
}

// Parts are b's fakes as backend.Parts.
func (b *Backend) Parts() backend.Parts {
	return backend.Parts{Orchestrators: b.Orchestrators, Learn: b.Learn, Coach: b.Coach}
}

// With returns b's fakes with a service of parts p instead: a part p
// leaves nil is unavailable, b.Orchestrators.Plain() neither restores nor
// finishes, and a real store or coach may stand in for a fake.
func (b *Backend) With(p backend.Parts) *Backend {
	c := *b
	c.Service = backend.New(b.Fake, p)
	return &c
}
