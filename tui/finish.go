package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// finishTimeout bounds a finish or a restore from the dashboard: git, gh,
// and each agent's ready wait.
const finishTimeout = 5 * time.Minute

type (
	// finishDiffMsg brings the diff of an orchestrator to finish.
	finishDiffMsg struct {
		sess api.Session
		res  api.FinishResult
		err  error
	}
	// finishDoneMsg ends a finish.
	finishDoneMsg struct {
		name string
		res  api.FinishResult
		err  error
	}
	// restoreDoneMsg ends a restore.
	restoreDoneMsg struct {
		res api.RestoreResult
		err error
	}
)

func (m *Model) finisher() (facade.Orchestrators, bool) {
	if !m.feats.Finish {
		return nil, false
	}
	return m.svc, true
}

// openFinish reads the selected orchestrator's diff; the form follows.
func (m *Model) openFinish() tea.Cmd {
	s, ok := m.selected()
	if !ok {
		return nil
	}
	if s.Host != "" {
		m.setStatus(levelWarn, onHost(s, "finish"))
		return nil
	}
	f, ok := m.finisher()
	if !ok {
		m.setStatus(levelWarn, "this dashboard cannot finish orchestrators; use `system3 finish NAME` in a terminal")
		return nil
	}
	initiative, ok := strings.CutPrefix(s.Session, api.OrchestratorPrefix)
	if !ok || initiative == "" {
		m.setStatus(levelWarn, "only spawned orchestrators (sessions named "+api.OrchestratorPrefix+"*) can be finished from here; "+clean(s.Session)+" is not one")
		return nil
	}
	m.showHelp = false
	m.setStatus(levelInfo, "reading the diff of "+clean(initiative)+"…")
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, actionTimeout)
		defer cancel()
		res, err := f.Finish(ctx, api.FinishRequest{Name: initiative, Origin: origin})
		return finishDiffMsg{sess: s, res: res, err: err}
	}
}

// onFinishDiff shows the diff in the zoomed preview and asks what to do.
func (m *Model) onFinishDiff(msg finishDiffMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus(levelError, "✖ could not read the diff: "+clean(msg.err.Error()))
		return nil
	}
	r := msg.res
	lines := diffLines(r.Stat)
	if len(lines) == 0 {
		lines = []string{"(no changes since " + r.Base + ")"}
	}
	if r.Uncommitted != "" {
		lines = append(lines, "", "uncommitted in the worktree (in no diff or merge):")
		lines = append(lines, diffLines(r.Uncommitted)...)
	}
	lines = append(lines, "")
	lines = append(lines, diffLines(r.Diff)...)
	title := fmt.Sprintf("finish %s: %s against %s, %d commit(s)", r.Name, r.Branch, r.Base, r.Commits)
	m.detail.ShowText(msg.sess.Pane, title, lines)
	m.layout()
	m.input = inputForm
	return m.form.Open(formFinish, "finish "+clean(r.Name)+" (the diff is above; esc cancels, nothing changes until you submit)", msg.sess, []fieldSpec{
		{label: "merge into " + clean(r.Base) + "? (ff, merge, pr or empty: none)", placeholder: "empty: do not merge", limit: 5, check: finishMode},
		{label: "then remove worktree and branch? (y/N)", placeholder: "n: keep them", limit: 3, check: yesNo},
	})
}

func finishMode(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", api.MergeFastForward, api.MergeCommit, "pr":
		return ""
	}
	return "answer ff, merge, pr, or leave it empty"
}

// submitFinish runs the finish the form chose.
func (m *Model) submitFinish(msg formSubmitMsg) tea.Cmd {
	f, ok := m.finisher()
	if !ok {
		return nil
	}
	initiative := strings.TrimPrefix(msg.sess.Session, api.OrchestratorPrefix)
	mode := strings.ToLower(strings.TrimSpace(msg.values[0]))
	remove, _ := parseYesNo(msg.values[1])
	req := api.FinishRequest{Name: initiative, Remove: remove, Origin: origin}
	switch mode {
	case "pr":
		req.PR = true
	default:
		req.Merge = mode
	}
	if req.Merge == "" && !req.PR && !req.Remove {
		m.setStatus(levelInfo, "nothing chosen; "+clean(initiative)+" is unchanged")
		return nil
	}
	m.setStatus(levelInfo, "finishing "+clean(initiative)+"…")
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, finishTimeout)
		defer cancel()
		res, err := f.Finish(ctx, req)
		return finishDoneMsg{name: initiative, res: res, err: err}
	}
}

func (m *Model) onFinishDone(msg finishDoneMsg) {
	done := ""
	if len(msg.res.Steps) > 1 {
		done = strings.Join(msg.res.Steps[1:], "; ")
	}
	if msg.err != nil {
		text := "✖ finish " + clean(msg.name) + ": " + clean(msg.err.Error())
		if done != "" {
			text += " (done before it: " + clean(done) + ")"
		}
		m.setStatus(levelError, text)
		return
	}
	m.setStatus(levelOK, "finished "+clean(msg.name)+": "+clean(done))
}

// restoreAll restores every recorded orchestrator whose session is gone.
func (m *Model) restoreAll() tea.Cmd {
	f, ok := m.finisher()
	if !ok {
		m.setStatus(levelWarn, "this dashboard cannot restore orchestrators; use `system3 restore --all` in a terminal")
		return nil
	}
	m.setStatus(levelInfo, "restoring orchestrators…")
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, finishTimeout)
		defer cancel()
		res, err := f.Restore(ctx, api.RestoreRequest{All: true, Origin: origin})
		return restoreDoneMsg{res: res, err: err}
	}
}

func (m *Model) onRestoreDone(msg restoreDoneMsg) {
	if msg.err != nil {
		m.setStatus(levelError, "✖ restore: "+clean(msg.err.Error()))
		return
	}
	restored, skipped, failed := msg.res.Counts()
	text := fmt.Sprintf("restore: %d restored, %d already running, %d failed", restored, skipped, failed)
	var why []string
	for _, o := range msg.res.Orchestrators {
		if o.Status == api.RestoreFailed {
			why = append(why, o.Name+": "+o.Reason)
		}
	}
	switch {
	case failed > 0:
		m.setStatus(levelError, "✖ "+text+" · "+clean(strings.Join(why, "; ")))
	case restored+skipped == 0:
		m.setStatus(levelInfo, "restore: no orchestrator is recorded as running")
	default:
		m.setStatus(levelOK, text)
	}
}

// diffLines splits git output into lines safe to draw: no escapes or
// control characters, tabs expanded, leading spaces kept.
func diffLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	out := strings.Split(ansi.Strip(s), "\n")
	for i, l := range out {
		l = strings.ReplaceAll(l, "\t", "    ")
		out[i] = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				return -1
			}
			return r
		}, l)
	}
	return out
}
