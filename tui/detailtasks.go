package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

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
	rank := func(t api.TaskDoc) int {
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
	slices.SortStableFunc(ts, func(a, b api.TaskDoc) int { return rank(a) - rank(b) })
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
