package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

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
