package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/system3-dev/system3/internal/api"
)

// detail shows the selected session: its state and why system3 thinks so,
// its question, its task list, its recent wakes and a live preview of the
// pane. Zoomed, it shows the preview alone, full screen, with scrollback.
type detail struct {
	st   *styles
	keys zoomKeys
	// remind is the key that sends a loop's reminder, for its hint.
	remind key.Binding

	w, h int
	now  time.Time

	sess api.Session
	has  bool

	// lines is the pane's screen (zoomed: with scrollback), cleaned, for
	// the pane previewFor; previewErr says why it could not be read.
	lines      []string
	previewFor string
	previewErr string

	// text, when textFor is the shown pane, replaces the preview (a
	// finish's diff), under textTitle.
	text      []string
	textFor   string
	textTitle string

	list    *api.TaskListDoc
	listErr string
	wakes   []feedItem

	zoomed bool
	top    int  // first line shown when zoomed
	follow bool // zoomed and at the bottom: stay there as the pane grows

	// ver changes with anything shown but the time; rev and wakeVer are
	// the versions of the session and the wakes it was given.
	ver     uint64
	rev     uint64
	wakeVer uint64
	view    *viewCache[detailKey]
}

type detailKey struct {
	ver  uint64
	w, h int
	sec  int64
}

func newDetail(st *styles, keys zoomKeys) detail {
	return detail{st: st, keys: keys, follow: true, view: &viewCache[detailKey]{}}
}

func (d *detail) SetSize(w, h int) {
	if w != d.w || h != d.h {
		d.w, d.h = w, h
		d.clampScroll()
		d.ver++
	}
}

// SetSession shows sess at revision rev; a different pane drops what was
// shown of the previous one.
func (d *detail) SetSession(sess api.Session, rev uint64, ok bool) {
	if ok == d.has && rev == d.rev && sess.Pane == d.sess.Pane {
		return
	}
	if !ok || sess.Pane != d.sess.Pane {
		d.lines, d.previewFor, d.previewErr = nil, "", ""
		d.text, d.textFor, d.textTitle = nil, "", ""
		d.list, d.listErr = nil, ""
		d.wakes, d.wakeVer = nil, 0
		d.top, d.follow = 0, true
	}
	d.sess, d.rev, d.has = sess, rev, ok
	d.ver++
}

// SetPreview sets the pane's screen lines (already cleaned), or the error
// that kept them from being read.
func (d *detail) SetPreview(pane string, lines []string, err string) {
	if pane != d.sess.Pane {
		return
	}
	if pane == d.previewFor && err == d.previewErr && (err != "" || slices.Equal(lines, d.lines)) {
		return // the pane did not change: nothing to draw again
	}
	d.previewFor = pane
	d.previewErr = err
	d.ver++
	if err != "" {
		return
	}
	d.lines = lines
	d.clampScroll()
}

// SetTaskList sets the session's task list.
func (d *detail) SetTaskList(l *api.TaskListDoc, err string) {
	d.list, d.listErr = l, err
	d.ver++
}

// SetWakes sets the session's recent wakes, newest first, as of version
// ver of the wakes.
func (d *detail) SetWakes(items []feedItem, ver uint64) {
	if ver == d.wakeVer {
		return
	}
	d.wakes, d.wakeVer = items, ver
	d.ver++
}

// Zoom shows the preview full screen, following the pane.
func (d *detail) Zoom(on bool) {
	d.zoomed = on
	d.follow = true
	if !on {
		d.text, d.textFor, d.textTitle = nil, "", ""
	}
	d.clampScroll()
	d.ver++
}

// ShowText shows lines (a diff) full screen in place of pane's preview,
// from the top, until the zoom is left or another session is selected.
func (d *detail) ShowText(pane, title string, lines []string) {
	if pane != d.sess.Pane {
		return
	}
	d.zoomed = true
	d.text, d.textFor, d.textTitle = lines, pane, title
	d.top, d.follow = 0, false
	d.ver++
}

// showingText: the preview shows text, not the pane.
func (d detail) showingText() bool { return d.textFor != "" && d.textFor == d.sess.Pane }

// Update scrolls the zoomed preview.
func (d detail) Update(msg tea.Msg) (detail, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok || !d.zoomed {
		return d, nil
	}
	page := max(1, d.h-2)
	switch {
	case key.Matches(km, d.keys.Up):
		d.top--
	case key.Matches(km, d.keys.Down):
		d.top++
	case key.Matches(km, d.keys.PageUp):
		d.top -= page
	case key.Matches(km, d.keys.PageDown):
		d.top += page
	case key.Matches(km, d.keys.Top):
		d.top = 0
	case key.Matches(km, d.keys.Bottom):
		d.top = d.maxTop()
	default:
		return d, nil
	}
	d.top = clamp(d.top, 0, d.maxTop())
	d.follow = d.top == d.maxTop()
	d.ver++
	return d, nil
}

// shown is the preview without the blank lines below the last output.
func (d detail) shown() []string {
	if d.showingText() {
		return d.text
	}
	n := len(d.lines)
	for n > 0 && blankLine(d.lines[n-1]) {
		n--
	}
	return d.lines[:n]
}

func (d detail) maxTop() int { return max(0, len(d.shown())-max(1, d.h-1)) }

func (d *detail) clampScroll() {
	if !d.zoomed {
		return
	}
	if d.follow {
		d.top = d.maxTop()
	}
	d.top = clamp(d.top, 0, d.maxTop())
}

// KeyMap is the detail's keys: scrolling while it is zoomed.
func (d detail) KeyMap() help.KeyMap { return d.keys }

func (d detail) View() string {
	if d.w <= 0 || d.h <= 0 {
		return ""
	}
	return d.view.get(detailKey{ver: d.ver, w: d.w, h: d.h, sec: d.now.Unix()}, d.render)
}

func (d detail) render() string {
	if !d.has {
		return block([]string{sectionTitle(d.st, "Detail", d.w, false), d.st.Dim.Render("  No session selected.")}, d.w, d.h)
	}
	if d.zoomed {
		return d.zoomView()
	}
	return d.normalView()
}

func (d detail) title() string {
	t := clean(d.sess.Target)
	if a := agentName(d.sess); a != "-" {
		t += " · " + clean(a)
	}
	return t
}

func (d detail) zoomView() string {
	lines := d.shown()
	n := max(1, d.h-1)
	end := min(len(lines), d.top+n)
	pos := "empty"
	if len(lines) > 0 {
		pos = "lines " + strconv.Itoa(d.top+1) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(len(lines))
		if d.follow {
			pos += ", following"
		}
	}
	if d.previewErr != "" && len(lines) > 0 && !d.showingText() {
		pos += " · as last read; preview unavailable: " + clean(d.previewErr)
	}
	out := make([]string, 0, d.h)
	head := d.title() + " · " + badge(d.sess.State) + " · " + pos
	if d.showingText() {
		head = clean(d.textTitle) + " · " + pos
	}
	out = append(out, sectionTitle(d.st, head, d.w, true))
	out = append(out, d.previewLines(lines[min(d.top, len(lines)):end])...)
	if len(lines) == 0 {
		out = append(out, d.previewNote())
	}
	return block(out, d.w, d.h)
}

// previewNote says why there is no preview to show.
func (d detail) previewNote() string {
	switch {
	case d.previewErr != "":
		return d.st.Problem.Render("  preview unavailable: " + clean(d.previewErr))
	case d.previewFor != d.sess.Pane:
		return d.st.Dim.Render("  reading the pane…")
	}
	return d.st.Dim.Render("  (the pane is blank)")
}

// previewLines cuts pane lines to the width. A cut line may lose its
// colour reset, so one is added back.
func (d detail) previewLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = truncate(l, d.w)
		if d.st.color && strings.IndexByte(l, 0x1b) >= 0 {
			l += "\x1b[0m"
		}
		out[i] = l
	}
	return out
}
