package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

// manySessions makes n sessions in every state, with task lists on some.
func manySessions(n int) []api.Session {
	agents := []string{"claude", "codex", "gemini", "aider", ""}
	states := api.AllStates()
	ss := make([]api.Session, n)
	for i := range ss {
		st := states[i%len(states)]
		s := api.Session{
			Pane: fmt.Sprintf("%%%d", i+1), Session: fmt.Sprintf("proj-%03d", i/4), WindowIndex: i % 4 / 2, PaneIndex: i % 2,
			Agent: agents[i%len(agents)], Command: "node", State: st, Since: now.Add(-time.Duration(i*37) * time.Second),
			Evidence: api.Evidence{Source: "screen", Rule: "bench." + string(st), Lines: []string{"matched line " + fmt.Sprint(i)}},
			LastLine: fmt.Sprintf("step %d: editing src/module_%d.go and running the tests again", i, i),
		}
		s.Target = fmt.Sprintf("%s:%d.%d", s.Session, s.WindowIndex, s.PaneIndex)
		if st == api.AwaitingInput {
			s.Question, s.Options = "Do you want to run `go test ./...`?", []string{"Yes", "Yes, and don't ask again", "No"}
		}
		if i%3 == 0 {
			s.TaskList = fmt.Sprintf("list-%d", i)
			s.Tasks = &api.TaskProgress{Completed: i % 9, Total: 9}
		}
		ss[i] = s
	}
	api.SortSessions(ss)
	return ss
}

// benchModel is a dashboard at 160×50 over 200 sessions and 40 wakes, with
// a 50-line coloured preview, connected and settled.
func benchModel(b *testing.B) (*harness, []api.Session) {
	b.Helper()
	svc := monitortest.NewService(b, monitortest.Ticking(now.Add(-time.Hour)))
	ss := manySessions(200)
	svc.SetSnapshot(api.Snapshot{Server: "tmux server -L bench", Running: true, Sessions: ss, Taken: now})
	var preview []string
	for i := range 50 {
		preview = append(preview, fmt.Sprintf("\x1b[38;5;%dmline %d\x1b[0m of the pane, with \x1b[1mbold\x1b[22m and colour", i%200, i))
	}
	for _, s := range ss {
		svc.SetPreview(s.Pane, preview...)
	}
	for i := range 40 {
		s := ss[i*5]
		if _, _, err := svc.Store.Raise(api.Wake{Reason: api.ReasonAwaitingInput, Key: "k/" + s.Pane, Session: s.Session, Pane: s.Pane,
			SuggestedAction: "Look at " + s.Target + " and answer its question."}); err != nil {
			b.Fatal(err)
		}
	}
	h := newHarness(b, svc, Options{}, 160, 50)
	return h, ss
}

// BenchmarkView renders a frame with 200 sessions: "steady" is a frame
// where nothing changed (the usual case between events), "tick" one where
// the clock moved a second (every age on screen is drawn again), "cold"
// one where every cache is invalid (every visible row, the detail pane,
// the feed and the header are drawn from scratch).
func BenchmarkView(b *testing.B) {
	h, _ := benchModel(b)
	m := h.m
	b.Run("steady", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = m.View()
		}
	})
	b.Run("tick", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			m.now = now.Add(time.Duration(i) * time.Second)
			m.table.now, m.feed.now, m.detail.now = m.now, m.now, m.now
			_ = m.View()
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.rev++
			for i := range m.table.rows {
				m.table.rows[i].rev = m.rev
			}
			m.table.ver++
			m.feed.ver++
			m.detail.ver++
			m.cache = &viewCaches{}
			_ = m.View()
		}
	})
}

// BenchmarkUpdate handles one message with 200 sessions: a session that
// changes state (re-sort, refilter, new selection state) and a key press.
func BenchmarkUpdate(b *testing.B) {
	h, ss := benchModel(b)
	b.Run("session-changed", func(b *testing.B) {
		b.ReportAllocs()
		m := h.m
		i := 0
		states := api.AllStates()
		for b.Loop() {
			s := ss[i%len(ss)]
			s.State = states[(i/len(ss)+1)%len(states)]
			i++
			next, _ := m.Update(updateMsg{gen: m.watch.gen, u: api.Update{Kind: api.SessionChanged, Session: s}, ok: true})
			m = next.(Model)
		}
	})
	b.Run("key", func(b *testing.B) {
		b.ReportAllocs()
		m := h.m
		down, up := keyMsg("j"), keyMsg("k")
		i := 0
		for b.Loop() {
			k := down
			if i%100 >= 50 {
				k = up
			}
			i++
			next, _ := m.Update(k)
			m = next.(Model)
		}
	})
	b.Run("frame-after-change", func(b *testing.B) {
		b.ReportAllocs()
		m := h.m
		i := 0
		for b.Loop() {
			s := ss[i%len(ss)]
			s.LastLine = fmt.Sprint("new output ", i)
			i++
			next, _ := m.Update(updateMsg{gen: m.watch.gen, u: api.Update{Kind: api.SessionChanged, Session: s}, ok: true})
			m = next.(Model)
			_ = m.View()
		}
	})
}
