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
	"github.com/system3-dev/system3/tasks"
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

	list    *tasks.ListDoc
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
func (d *detail) SetTaskList(l *tasks.ListDoc, err string) {
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

// detailLine is one line of the detail's top part with its rank: keep
// stays, higher ranks are dropped first when space is short.
type detailLine struct {
	s    string
	drop int
}

const (
	keep = iota
	dropEvidence
	dropWakes
	dropTasks
)

type detailLines []detailLine

func (ls *detailLines) add(drop int, s string) { *ls = append(*ls, detailLine{s, drop}) }

// detailIndent lines up continuation lines under a label's text.
var detailIndent = strings.Repeat(" ", 6)

// label is a field's name in the detail's left column.
func (d detail) label(l string) string { return d.st.Label.Render(fit(l, 6)) }

// normalView lays out, top to bottom: the title, the state, the evidence,
// the question or error, the tasks, the recent wakes and the preview.
// When space is short, the task list goes first, then the wakes, then
// the extra evidence lines, so the preview keeps a few lines.
func (d detail) normalView() string {
	s := d.sess
	var ls detailLines
	ls.add(keep, sectionTitle(d.st, d.title(), d.w, false))
	ls.add(keep, d.stateLine())
	d.addEvidence(&ls)
	if h := s.Hint(); h != "" {
		ls.add(keep, d.label("hint")+d.st.Dim.Render(clean(h)))
	}
	d.addPrompt(&ls)
	d.addDecisions(&ls)
	if u := s.Usage; u != nil {
		ls.add(dropWakes, d.label("usage")+usageText(u))
	}
	if sum := d.taskSummary(); sum != "" {
		ls.add(keep, d.label("tasks")+sum)
		for _, l := range d.taskLines(detailIndent) {
			ls.add(dropTasks, l)
		}
	}
	d.addWakes(&ls)

	// Drop lines, highest rank and last first, until the preview has its
	// rule and three lines.
	const minPreview = 4
	for rank := dropTasks; rank > keep && len(ls)+minPreview > d.h; rank-- {
		for i := len(ls) - 1; i >= 0 && len(ls)+minPreview > d.h; i-- {
			if ls[i].drop == rank {
				ls = slices.Delete(ls, i, i+1)
			}
		}
	}
	out := make([]string, 0, d.h)
	for _, l := range ls {
		out = append(out, l.s)
	}
	return block(d.withPreview(out), d.w, d.h)
}

// stateLine is the state's badge and its facts: kind, for how long, pane,
// directory.
func (d detail) stateLine() string {
	s := d.sess
	line := d.st.badgeStyle(s.State, false).Render(badge(s.State))
	var facts []string
	if s.Kind != "" {
		facts = append(facts, clean(s.Kind))
	}
	if !s.Since.IsZero() {
		facts = append(facts, "for "+since(d.now, s.Since))
	}
	if s.Pane != "" {
		facts = append(facts, "pane "+clean(s.Pane))
	}
	if s.Path != "" {
		facts = append(facts, clean(s.Path))
	}
	if len(facts) > 0 {
		line += d.st.Dim.Render(" · " + strings.Join(facts, " · "))
	}
	return line
}

// addEvidence adds why the state holds: the rule, its source and the first
// line it matched, then up to two more matched lines (dropped first).
func (d detail) addEvidence(ls *detailLines) {
	ev := d.sess.Evidence
	if ev.Rule == "" && len(ev.Lines) == 0 {
		return
	}
	why := "rule " + clean(ev.Rule)
	if ev.Rule == "" {
		why = "no rule"
	}
	if ev.Source != "" {
		why += " (" + clean(ev.Source) + ")"
	}
	matched := slices.DeleteFunc(slices.Clone(ev.Lines), func(l string) bool { return clean(l) == "" })
	if len(matched) > 0 {
		why += ": “" + clean(matched[0]) + "”"
	}
	ls.add(keep, d.label("why")+why)
	for i := 1; i < len(matched) && i < 3; i++ {
		ls.add(dropEvidence, detailIndent+"“"+clean(matched[i])+"”")
	}
}

// addPrompt adds what the session waits on: the question and its options,
// or the error and how often it repeated.
func (d detail) addPrompt(ls *detailLines) {
	s := d.sess
	switch s.State {
	case api.AwaitingInput:
		if q := clean(s.Question); q != "" {
			ls.add(keep, d.label("asks")+d.st.Bold.Render(q))
		}
		if len(s.Options) > 0 {
			var opts []string
			for i, o := range s.Options {
				opts = append(opts, d.st.Key.Render(strconv.Itoa(i+1))+" "+clean(o))
			}
			ls.add(keep, d.label("opts")+strings.Join(opts, "  "))
		}
	case api.RateLimited:
		then := "will not continue by itself"
		if s.Kind == api.KindAutoResume {
			then = "continues by itself then"
		}
		ls.add(keep, d.label("limit")+d.st.Bold.Render(api.ResetText(s.ResetsAt, d.now))+" · "+then)
		if det := clean(s.Detail); det != "" {
			ls.add(keep, d.label("said")+det)
		}
	case api.Error, api.ErrorLoop:
		if det := clean(s.Detail); det != "" {
			if s.ErrorCount > 0 {
				det = strconv.Itoa(s.ErrorCount) + "× " + det
			}
			ls.add(keep, d.label("error")+d.st.Problem.Render(det))
		}
	}
}

// addDecisions adds the approval policy's latest decisions on the
// session's permission requests (three; system3 audit has them all):
// what became of each, by which rule, who decided and how long the agent
// waited, and the tool and its input last, where a narrow pane cuts. A
// request held for an answer stays when space is short.
func (d detail) addDecisions(ls *detailLines) {
	st := d.st
	for i, pd := range d.sess.Decisions {
		if i == 3 {
			break
		}
		// "policy" fills the label's column: one space more, under it too.
		l := detailIndent + " "
		if i == 0 {
			l = d.label("policy") + " "
		}
		rule := "no rule"
		if pd.Rule != "" {
			rule = "rule " + clean(pd.Rule)
		}
		waited := ""
		if pd.Wake != "" {
			waited = " after " + (time.Duration(pd.WaitedMS) * time.Millisecond).Round(100*time.Millisecond).String()
		}
		rank := dropWakes
		var head string
		switch pd.Decision {
		case "allow":
			head = st.Acked.Render("✓ allowed") + " by " + clean(api.ShortOrigin(pd.By)) + waited
		case "deny":
			head = st.Problem.Render("✗ denied") + " by " + clean(api.ShortOrigin(pd.By)) + waited
		case api.DecisionAsking:
			head, rank = st.Unacked.Render("? asking")+" (the agent is held for an answer)", keep
		default:
			head = st.Dim.Render("· not decided")
			if pd.Wake != "" {
				head += " (nobody answered" + waited + ": its dialog showed)"
			} else {
				head += " (its dialog showed)"
			}
		}
		what := clean(pd.Tool)
		if in := clean(pd.Input); in != "" {
			what += " " + in
		}
		ls.add(rank, l+head+st.Dim.Render(" · "+rule+" · "+since(d.now, pd.Time)+" ago · ")+what)
	}
}

// addWakes adds the session's two newest wakes and, when a loop was
// detected, the reminder with the key that sends it.
func (d detail) addWakes(ls *detailLines) {
	st := d.st
	for i, it := range d.wakes {
		if i == 2 {
			break
		}
		l := detailIndent
		if i == 0 {
			l = d.label("wakes")
		}
		mark := st.Unacked.Render("●")
		if it.ev.Acked {
			mark = st.Acked.Render("✓")
		}
		ls.add(dropWakes, l+mark+" "+string(it.ev.Reason)+" "+since(d.now, it.ev.Time)+" ago · "+clean(it.ev.SuggestedAction))
	}
	if r := reminderOf(d.wakes); r != nil {
		// The key first: the reminder's line is cut to the pane's width.
		first, _, _ := strings.Cut(r.Text, "\n")
		l := d.label("remind")
		if h := d.remind.Help(); h.Key != "" {
			l += st.Key.Render(h.Key) + st.Dim.Render(" sends ")
		}
		ls.add(keep, l+st.Problem.Render(clean(first)))
	}
}

// withPreview fills the room left under out with the screen's rule and
// its last lines.
func (d detail) withPreview(out []string) []string {
	st := d.st
	if room := d.h - len(out); room >= 2 {
		rule := st.Section.Render("─ screen ")
		if d.previewErr != "" && len(d.shown()) > 0 {
			rule += st.Problem.Render("(as last read; preview unavailable: " + clean(d.previewErr) + ")")
		}
		out = append(out, fit(rule, d.w))
		room--
		lines := d.shown()
		if len(lines) == 0 {
			out = append(out, d.previewNote())
		} else {
			out = append(out, d.previewLines(lines[max(0, len(lines)-room):])...)
		}
	}
	return out
}

// taskSummary is the tasks line: progress, bar, what is in progress and
// blocked, and read errors.
func (d detail) taskSummary() string {
	st := d.st
	p := d.sess.Tasks
	var parts []string
	switch {
	case d.list != nil:
		lp := d.list.Progress
		done, todo := bar(lp.Completed, lp.Total, 10)
		parts = append(parts, strconv.Itoa(lp.Completed)+"/"+strconv.Itoa(lp.Total)+" "+st.BarDone.Render(done)+st.BarTodo.Render(todo))
		if n := len(lp.InProgress); n > 0 {
			parts = append(parts, strconv.Itoa(n)+" in progress")
		}
		if n := len(lp.Blocked); n > 0 {
			parts = append(parts, strconv.Itoa(n)+" blocked")
		}
		if n := len(d.list.Errors); n > 0 {
			parts = append(parts, st.Problem.Render(strconv.Itoa(n)+" "+plural(n, "file problem", "file problems")))
		}
	case p != nil:
		done, todo := bar(p.Completed, p.Total, 10)
		parts = append(parts, progressText(p)+" "+st.BarDone.Render(done)+st.BarTodo.Render(todo))
		if p.Blocked > 0 {
			parts = append(parts, strconv.Itoa(p.Blocked)+" blocked")
		}
	case d.sess.TaskList != "" && d.listErr == "":
		parts = append(parts, st.Dim.Render("reading…"))
	case d.listErr == "":
		return ""
	}
	if d.sess.TaskList != "" {
		parts = append(parts, st.Dim.Render("list "+clean(d.sess.TaskList)))
	}
	if d.listErr != "" {
		parts = append(parts, st.Problem.Render("cannot read the list: "+clean(d.listErr)))
	}
	return strings.Join(parts, " · ")
}

// taskLines lists the tasks, those in progress and blocked first, then
// pending, then done; each with the symbols `system3 tasks` uses.
func (d detail) taskLines(indent string) []string {
	if d.list == nil || len(d.list.Tasks) == 0 {
		return nil
	}
	rank := func(t tasks.TaskDoc) int {
		switch {
		case t.Status == string(tasks.StatusInProgress):
			return 0
		case t.Blocked:
			return 1
		case t.Status == string(tasks.StatusCompleted):
			return 3
		}
		return 2
	}
	waiting := map[string][]string{}
	for _, b := range d.list.Progress.Blocked {
		waiting[b.ID] = b.WaitingOn
	}
	ts := slices.Clone(d.list.Tasks)
	slices.SortStableFunc(ts, func(a, b tasks.TaskDoc) int { return rank(a) - rank(b) })
	limit := max(3, d.h/3)
	var out []string
	for i, t := range ts {
		if i == limit-1 && len(ts) > limit {
			out = append(out, indent+d.st.Dim.Render("+"+strconv.Itoa(len(ts)-i)+" more"))
			break
		}
		sym, note := "·", ""
		switch {
		case t.Status == string(tasks.StatusCompleted):
			sym = "✓"
		case t.Blocked:
			on := waiting[t.ID]
			if len(on) == 0 {
				on = t.BlockedBy
			}
			sym, note = "✗", "blocked by "+clean(strings.Join(on, ", "))
		case t.Status == string(tasks.StatusInProgress):
			sym, note = "▶", clean(t.ActiveForm)
		case t.Status == string(tasks.StatusPending):
		default:
			sym, note = "?", "status "+strconv.Quote(t.Status)
		}
		l := indent + sym + " " + clean(t.ID) + " " + clean(t.Subject)
		if note != "" {
			l += d.st.Dim.Render(" — " + note)
		}
		if t.Status == string(tasks.StatusCompleted) {
			l = d.st.Dim.Render(l)
		}
		out = append(out, l)
	}
	return out
}

// usageText is a session's usage in one line: "48.2k tokens (in 1.2k · out
// 3.1k · cache read 40.1k · cache write 3.8k) · ≈ $0.42".
func usageText(u *api.Usage) string {
	t := humanCount(u.Total()) + " tokens (in " + humanCount(u.Input) + " · out " + humanCount(u.Output)
	if u.CacheRead > 0 {
		t += " · cache read " + humanCount(u.CacheRead)
	}
	if u.CacheWrite > 0 {
		t += " · cache write " + humanCount(u.CacheWrite)
	}
	t += ")"
	switch {
	case len(u.Unpriced) == 0:
		t += " · ≈ " + dollars(u.CostUSD)
	case len(u.Unpriced) < len(u.ByModel):
		t += " · ≈ " + dollars(u.CostUSD) + " + unpriced " + clean(strings.Join(u.Unpriced, ", "))
	default:
		t += " · no price for " + clean(strings.Join(u.Unpriced, ", ")) + " (usage.prices)"
	}
	return t
}

// humanCount is 950, 48.2k or 1.3M.
func humanCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
}

// dollars is $0.42, or $0.0031 below a cent.
func dollars(v float64) string {
	if v > 0 && v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}
