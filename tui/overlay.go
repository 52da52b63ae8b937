package tui

import (
	"strings"
)

// helpOverlay is the full key reference, shown on `?`.
type helpOverlay struct {
	st       *styles
	sections []keySection
	w, h     int
}

func newHelpOverlay(st *styles, keys keyMap) helpOverlay {
	var secs []keySection
	for _, s := range keys.sections() {
		if !s.contextual {
			secs = append(secs, s)
		}
	}
	return helpOverlay{st: st, sections: secs}
}

func (o *helpOverlay) SetSize(w, h int) { o.w, o.h = w, h }

// View lays the sections out in as many columns as fit, each section kept
// whole, and ends with where else the same actions live.
func (o helpOverlay) View() string {
	if o.w <= 0 || o.h <= 0 {
		return ""
	}
	keyW, descW := 0, 0
	for _, s := range o.sections {
		for _, k := range s.keys {
			keyW = max(keyW, width(k.b.Help().Key))
			descW = max(descW, width(k.b.Help().Desc))
		}
	}
	const gap = 3
	colW := keyW + 1 + descW
	ncol := clamp((o.w-2+gap)/(colW+gap), 1, len(o.sections))
	blocks := make([][]string, len(o.sections))
	for i, s := range o.sections {
		b := []string{o.st.Bold.Render(s.title)}
		for _, k := range s.keys {
			h := k.b.Help()
			b = append(b, o.st.Key.Render(fit(h.Key, keyW))+" "+o.st.Desc.Render(h.Desc))
		}
		blocks[i] = b
	}
	cols := packColumns(blocks, ncol)
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	lines := []string{sectionTitle(o.st, "Keys", o.w, true)}
	for r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range cols {
			cell := ""
			if r < len(c) {
				cell = c[r]
			}
			if i < len(cols)-1 {
				cell = fit(cell, colW+gap)
			}
			b.WriteString(cell)
		}
		lines = append(lines, b.String())
	}
	lines = append(lines, "", o.st.Dim.Render("  These actions are also on the CLI (system3 inject, answer, ack) and over MCP."))
	return block(lines, o.w, o.h)
}

// packColumns splits blocks, in order, into at most n columns as evenly
// as it can: the shortest height that greedy packing fits in n columns.
func packColumns(blocks [][]string, n int) [][]string {
	pack := func(limit int) [][]string {
		cols := [][]string{nil}
		for _, b := range blocks {
			c := &cols[len(cols)-1]
			if len(*c) > 0 && len(*c)+len(b) > limit {
				cols = append(cols, nil)
				c = &cols[len(cols)-1]
			}
			*c = append(*c, b...)
		}
		return cols
	}
	total, tallest := 0, 0
	for _, b := range blocks {
		total += len(b)
		tallest = max(tallest, len(b))
	}
	for limit := max(tallest, (total+n-1)/n); ; limit++ {
		if cols := pack(limit); len(cols) <= n {
			return cols
		}
	}
}

// serverGoneLines is the empty state while the watched tmux server is not
// running (it was never started, or it died with every pane in it).
func serverGoneLines(st *styles, server, tmux string) []string {
	return []string{
		st.Problem.Render("The " + server + " is not running."),
		"",
		"Every pane system3 watched on it is gone. system3 watches again as soon",
		"as the server is back: start a session on it, or bring your",
		"orchestrators back with their conversations:",
		"    " + st.Command.Render("system3 restore --all"),
		"or start one:",
		"    " + st.Command.Render(tmux+" new -s orch-auth claude"),
	}
}

// emptyLines is the empty state: what system3 watches and how to give it
// something to watch. tmux is the command that reaches the watched server.
func emptyLines(st *styles, server, tmux string) []string {
	cmd := func(s string) string { return "    " + st.Command.Render(s) }
	return []string{
		st.Bold.Render("No tmux panes are being watched on the " + server + "."),
		"",
		"system3 watches every pane of this tmux server, recognises the coding agents",
		"in them (Claude Code, Codex, Gemini CLI, aider) and shows here what each one",
		"is doing, and wakes you when one needs you.",
		"",
		"Start an orchestrator in a new tmux session:",
		cmd(tmux + " new -s orch-auth claude"),
		"or try the demo, with scripted agents that ask, work and fail:",
		cmd("system3 demo"),
	}
}
