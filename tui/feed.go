package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

// keepAcked is how many acknowledged wakes the feed keeps besides the
// unacknowledged ones, for context.
const keepAcked = 100

// feedItem is one wake in the feed.
type feedItem struct {
	ev api.Wake
}

// wakeBook holds the wakes the dashboard knows, by ID. Messages from the
// subscription are applied idempotently, so a replay or a resync never
// duplicates a wake.
type wakeBook struct {
	byID map[string]*feedItem
}

func newWakeBook() wakeBook { return wakeBook{byID: map[string]*feedItem{}} }

// apply records a raised, acked or cleared wake and reports whether the
// book changed.
func (b wakeBook) apply(m api.WakeMessage) bool {
	if m.Event.ID == "" {
		return false
	}
	it, ok := b.byID[m.Event.ID]
	if !ok {
		it = &feedItem{}
		b.byID[m.Event.ID] = it
	}
	switch m.Kind {
	case api.WakeRaised:
		if ok && it.ev.Acked && !m.Event.Acked {
			// An ack seen before a late replay of the raise stays.
			return false
		}
		it.ev = m.Event
	case api.WakeAcked:
		it.ev = m.Event
		it.ev.Acked = true
	case api.WakeResolved:
		acked := it.ev.Acked
		it.ev = m.Event
		it.ev.Acked = it.ev.Acked || acked
	default:
		return false
	}
	b.prune()
	return true
}

// reconcile takes the list of unacknowledged wakes (open and resolved) as
// the truth: wakes held as unacknowledged that are not in it were
// acknowledged meanwhile.
func (b wakeBook) reconcile(unacked []api.Wake) {
	in := make(map[string]bool, len(unacked))
	for _, ev := range unacked {
		in[ev.ID] = true
		it, ok := b.byID[ev.ID]
		if !ok {
			it = &feedItem{}
			b.byID[ev.ID] = it
		}
		it.ev = ev
	}
	for id, it := range b.byID {
		if !in[id] && !it.ev.Acked {
			it.ev.Acked = true
		}
	}
	b.prune()
}

// prune drops the oldest acknowledged wakes beyond keepAcked.
func (b wakeBook) prune() {
	var acked []*feedItem
	for _, it := range b.byID {
		if it.ev.Acked {
			acked = append(acked, it)
		}
	}
	if len(acked) <= keepAcked {
		return
	}
	slices.SortFunc(acked, func(x, y *feedItem) int { return compareSeq(y.ev, x.ev) })
	for _, it := range acked[keepAcked:] {
		delete(b.byID, it.ev.ID)
	}
}

// sorted lists the wakes as the feed shows them: unacknowledged first,
// then newest first.
func (b wakeBook) sorted() []feedItem {
	out := make([]feedItem, 0, len(b.byID))
	for _, it := range b.byID {
		out = append(out, *it)
	}
	slices.SortFunc(out, func(x, y feedItem) int {
		if x.ev.Acked != y.ev.Acked {
			if !x.ev.Acked {
				return -1
			}
			return 1
		}
		return compareSeq(y.ev, x.ev)
	})
	return out
}

// compareSeq orders wakes by sequence, then ID.
func compareSeq(x, y api.Wake) int {
	switch {
	case x.Seq < y.Seq:
		return -1
	case x.Seq > y.Seq:
		return 1
	}
	return strings.Compare(x.ID, y.ID)
}

// unacked returns the unacknowledged wakes of a pane, newest first.
func (b wakeBook) forPane(pane string) []feedItem {
	var out []feedItem
	for _, it := range b.byID {
		if it.ev.Pane == pane {
			out = append(out, *it)
		}
	}
	slices.SortFunc(out, func(x, y feedItem) int { return compareSeq(y.ev, x.ev) })
	return out
}

// routine reports whether a wake is routine: information (a heartbeat,
// a summary) neither rings nor flashes.
func routine(ev api.Wake) bool { return !ev.Reason.NeedsPerson() }

// wakeFeed lists the wakes: unacknowledged first, newest first, with
// reason, session, age and the suggested action.
type wakeFeed struct {
	st   *styles
	keys navKeys

	items []feedItem
	// need counts the wakes that need a person (api.Wake.NeedsPerson);
	// resolved, the unacknowledged ones whose condition ended (the prompt
	// was answered).
	need, resolved int
	cursor, offset int
	w, h           int
	focused        bool
	now            time.Time
	// where names a wake's pane as the table does ("orch-a:0.0").
	where func(api.Wake) string

	ver  uint64
	view *viewCache[feedKey]
}

type feedKey struct {
	ver                  uint64
	cursor, offset, w, h int
	focused              bool
	sec                  int64
}

func newWakeFeed(st *styles, keys navKeys) wakeFeed {
	return wakeFeed{st: st, keys: keys, where: func(ev api.Wake) string { return ev.Session }, view: &viewCache[feedKey]{}}
}

func (f *wakeFeed) SetSize(w, h int) {
	f.w, f.h = w, h
	f.scroll()
}

// SetItems replaces the wakes, keeping the selection on the same wake.
func (f *wakeFeed) SetItems(items []feedItem) {
	id := ""
	if it, ok := f.Selected(); ok {
		id = it.ev.ID
	}
	f.items = items
	f.ver++
	f.need, f.resolved = 0, 0
	for i, it := range items {
		switch {
		case it.ev.NeedsPerson():
			f.need++
		case it.ev.Resolved && !it.ev.Acked:
			f.resolved++
		}
		if id != "" && it.ev.ID == id {
			f.cursor = i
		}
	}
	f.cursor = clamp(f.cursor, 0, max(0, len(items)-1))
	f.scroll()
}

// Selected returns the selected wake.
func (f wakeFeed) Selected() (feedItem, bool) {
	if f.cursor < 0 || f.cursor >= len(f.items) {
		return feedItem{}, false
	}
	return f.items[f.cursor], true
}

// Update moves the selection.
func (f wakeFeed) Update(msg tea.Msg) (wakeFeed, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return f, nil
	}
	f.cursor = f.keys.step(km, f.cursor, len(f.items))
	f.scroll()
	return f, nil
}

func (f *wakeFeed) scroll() {
	n := f.h - 1
	if n <= 0 {
		f.offset = 0
		return
	}
	if f.cursor < f.offset {
		f.offset = f.cursor
	}
	if f.cursor >= f.offset+n {
		f.offset = f.cursor - n + 1
	}
	f.offset = clamp(f.offset, 0, max(0, len(f.items)-n))
}

func (f wakeFeed) title() string {
	var t string
	switch {
	case len(f.items) == 0:
		return "Wakes · none"
	default:
		t = "Wakes · " + api.NeedingPersonText(f.need)
	}
	if f.resolved > 0 {
		t += " · " + strconv.Itoa(f.resolved) + " resolved"
	}
	// Wakes that do not fit are counted, so the list never hides one
	// silently.
	if above, below := f.hidden(); above+below > 0 {
		switch {
		case above == 0:
			t += " · +" + strconv.Itoa(below) + " more ↓"
		case below == 0:
			t += " · +" + strconv.Itoa(above) + " more ↑"
		default:
			t += " · +" + strconv.Itoa(above) + " ↑ +" + strconv.Itoa(below) + " ↓"
		}
	}
	return t
}

// hidden counts the wakes above and below the visible rows.
func (f wakeFeed) hidden() (above, below int) {
	rows := max(0, f.h-1)
	return f.offset, max(0, len(f.items)-f.offset-rows)
}

// View draws the title and the visible wakes.
// KeyMap is the feed's keys: moving the selection.
func (f wakeFeed) KeyMap() help.KeyMap { return f.keys }

func (f wakeFeed) View() string {
	if f.w <= 0 || f.h <= 0 {
		return ""
	}
	k := feedKey{ver: f.ver, cursor: f.cursor, offset: f.offset, w: f.w, h: f.h, focused: f.focused, sec: f.now.Unix()}
	return f.view.get(k, f.render)
}

func (f wakeFeed) render() string {
	lines := make([]string, 0, f.h)
	lines = append(lines, sectionTitle(f.st, f.title(), f.w, f.focused))
	if len(f.items) == 0 {
		lines = append(lines, f.st.Dim.Render("  Nothing needs you. Wakes appear here when a session waits, fails or loops."))
		return block(lines, f.w, f.h)
	}
	reasonW, whereW := 0, 0
	for i := f.offset; i < len(f.items) && i < f.offset+f.h-1; i++ {
		reasonW = max(reasonW, len(f.items[i].ev.Reason))
		whereW = max(whereW, width(clean(f.where(f.items[i].ev))))
	}
	whereW = min(whereW, 24)
	for i := f.offset; i < len(f.items) && i < f.offset+f.h-1; i++ {
		lines = append(lines, f.row(f.items[i], i == f.cursor && f.focused, reasonW, whereW))
	}
	return block(lines, f.w, f.h)
}

func (f wakeFeed) row(it feedItem, selected bool, reasonW, whereW int) string {
	st := f.st
	marker := "  "
	if selected {
		marker = "▸ "
	}
	mark, markStyle := "●", st.Unacked
	if it.ev.Acked {
		mark, markStyle = "✓", st.Acked
	}
	action := clean(it.ev.SuggestedAction)
	if it.ev.Resolved {
		action = "(resolved: " + clean(it.ev.Resolution) + ") " + action
	}
	rest := " " + fit(string(it.ev.Reason), reasonW) + colGap + fit(clean(f.where(it.ev)), whereW) + colGap +
		fitRight(since(f.now, it.ev.Time), ageWidth) + colGap
	rest += fit(action, max(0, f.w-2-1-width(rest)))
	if selected {
		return st.Selected.Render(marker) + st.Selected.Render(mark) + st.Selected.Render(rest)
	}
	if it.ev.Acked {
		return marker + markStyle.Render(mark) + st.Dim.Render(rest)
	}
	return marker + markStyle.Render(mark) + rest
}
