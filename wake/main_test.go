package wake

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/api"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock ticks one second per reading, so every timestamp is distinct and
// predictable.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 11, 21, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// open opens a store on dir ("" for memory) and closes it with the test.
func open(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = newClock().Now
	}
	s, warnings, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	for _, w := range warnings {
		t.Fatalf("unexpected warning: %s", w)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func raise(t testing.TB, s *Store, reason api.Reason, key string) api.Wake {
	t.Helper()
	ev, _, err := s.Raise(api.Wake{Reason: reason, Key: key, Session: "s", Pane: "%1"})
	if err != nil {
		t.Fatalf("Raise(%s): %v", key, err)
	}
	return ev
}

func journalPath(dir string) string { return filepath.Join(dir, JournalFile) }

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys(evs []api.Wake) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Key
	}
	return out
}
