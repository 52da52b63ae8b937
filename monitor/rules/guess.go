package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// unknownProgram names the program in front of the pane when it is one no
// agent package knows and it takes keys one at a time, and says where it
// runs; "" when it is not. Not a shell (its prompt is the shell's), not a
// pager or editor (they show text, and run under git or an agent as
// well), not a pane where an agent was recognised.
func (e *Engine) unknownProgram(in Input, agent *Agent, shell string) (prog, where string) {
	if !in.Raw || in.Dead || agent != nil && !agent.Shell {
		return "", ""
	}
	switch {
	case shell != "" && in.Job != "":
		prog, where = in.Job, fmt.Sprintf("%s runs it in the foreground", in.Shell)
	case shell == "" && in.Shell == "" && len(in.Processes) > 0:
		prog, where = in.Processes[0], "it is in the foreground"
	default:
		return "", ""
	}
	if e.isShell(prog) || slices.ContainsFunc(in.Processes, func(p string) bool { return e.viewer(p) != "" }) {
		return "", ""
	}
	return prog, where
}

// classifyProgram is the state of a pane where a program no agent package
// knows takes keys one at a time: unknown, saying why, or, when its screen
// ends with a numbered choice list with a selection marker, a guessed
// prompt (api.RuleGuessChoice) with the line above the list as its question.
func (e *Engine) classifyProgram(res Result, s *Screen, prog, where string) Result {
	res.Agent, res.AgentBy, res.Program = "", "", prog
	res.State, res.Kind, res.Rule = api.Unknown, "", api.RuleUnknownProgram
	res.Evidence = []string{fmt.Sprintf("no agent package knows %s (%s and takes keys one at a time): what it is doing cannot be told", prog, where)}
	if c, ok := guessChoice(s); ok {
		res.State, res.Kind, res.Rule = api.AwaitingInput, "other", api.RuleGuessChoice
		res.Question, res.Options = c.question, c.options
		res.Evidence = []string{fmt.Sprintf("a guess: no agent package knows %s; a numbered list with a selection marker is on screen", prog), c.marked}
	}
	clipResult(&res)
	res.IdentityOptions = res.Options
	return res
}

// choiceOption reads a line of a numbered choice list as the agents' rules
// read their menus (Extract's option): a selection marker or blanks in its
// place, the number, then the label. A box's side may frame the line.
var choiceOption = func() *Extract {
	e := &Extract{Option: `^(?P<lead>\s*(?:[│┃║]\s*)?)(?P<marker>[❯›>▶►➤→»●◉]?)(?P<gap>\s*)(?P<number>\d{1,2})[.)]\s+(?P<label>\S.*?)\s*[│┃║]?\s*$`}
	if err := e.compile(region{kind: "whole"}); err != nil {
		panic(err)
	}
	return e
}()

// choice is a numbered choice list read off a screen.
type choice struct {
	question string
	options  []string
	// marked is the line with the selection marker, as shown.
	marked string
}

const (
	// choiceTrail is how many lines (hints such as "Enter to select")
	// may follow a choice list at the bottom of the screen.
	choiceTrail = 4
	// choiceGap is how many lines (an option's description, blank lines)
	// may come between two options.
	choiceGap = 3
)

// guessChoice finds a numbered choice list with a selection marker at the
// bottom of a screen: at least two options numbered from 1 without a gap,
// their numbers in one column, exactly one of them marked and the others
// with blanks where the marker goes, followed by at most choiceTrail lines,
// none of them a prompt (a REPL's or a shell's, under a list it printed).
// A numbered list without a marker (a program's output, a document) or with
// one on every line (a quotation) is none.
func guessChoice(s *Screen) (choice, bool) {
	last, ok := lastChoice(s)
	if !ok {
		return choice{}, false
	}
	list := choicesAbove(s, last)
	if len(list) < 2 || list[0].number != 1 {
		return choice{}, false
	}
	marked, ok := soleMarked(list)
	if !ok {
		return choice{}, false
	}
	c := choice{marked: strings.TrimSpace(s.Lines[list[marked].at])}
	for _, l := range list {
		c.options = append(c.options, l.label)
	}
	c.question = questionAbove(s, list[0].at)
	return c, true
}

// choiceLine is a line of a numbered choice list: where it is on screen,
// its number, the column its number starts at, its label and its
// selection marker ("" when it has none).
type choiceLine struct {
	at, number, col int
	label, marker   string
}

// readChoice reads line i of a screen as an option of a choice list.
func readChoice(s *Screen, i int) (choiceLine, bool) {
	label, m := choiceOption.option(s.Lines[i])
	if label == "" {
		return choiceLine{}, false
	}
	n, _ := strconv.Atoi(group(m, choiceOption.opt, "number"))
	pre := group(m, choiceOption.opt, "lead") + group(m, choiceOption.opt, "marker") + group(m, choiceOption.opt, "gap")
	return choiceLine{at: i, number: n, col: utf8.RuneCountInString(pre), label: label, marker: group(m, choiceOption.opt, "marker")}, true
}

// lastChoice is the last option on screen, when below it there are only a
// few lines (choiceTrail) that are not options, none of them a prompt.
func lastChoice(s *Screen) (choiceLine, bool) {
	for i, trail := len(s.Lines)-1, 0; i >= 0; i-- {
		if l, ok := readChoice(s, i); ok {
			return l, true
		}
		if t := strings.TrimSpace(s.Lines[i]); t != "" {
			if trail++; trail > choiceTrail || isPromptEnd(t) {
				return choiceLine{}, false
			}
		}
	}
	return choiceLine{}, false
}

// choicesAbove is the list that ends with last: the options above it, each
// numbered one less, their numbers in last's column, with at most a few
// lines between two (descriptions indented past the numbers, blanks).
func choicesAbove(s *Screen, last choiceLine) []choiceLine {
	list := []choiceLine{last}
	for gap, j := 0, last.at-1; j >= 0 && list[0].number > 1; j-- {
		if l, ok := readChoice(s, j); ok {
			if l.number != list[0].number-1 || l.col != last.col {
				break
			}
			list, gap = append([]choiceLine{l}, list...), 0
			continue
		}
		if gap++; gap > choiceGap || !indentedPast(s.Lines[j], last.col) {
			break
		}
	}
	return list
}

// soleMarked is the index of the one option with a selection marker; false
// when none has one or several do.
func soleMarked(list []choiceLine) (int, bool) {
	marked := -1
	for k, l := range list {
		if l.marker == "" {
			continue
		}
		if marked >= 0 {
			return -1, false
		}
		marked = k
	}
	return marked, marked >= 0
}

// questionAbove is the question of a list whose first option is on line
// top: the line just above it, a blank line apart at most; "" when there
// is none, or a box's top or a rule is there instead.
func questionAbove(s *Screen, top int) string {
	for j, blank := top-1, 0; j >= 0; j-- {
		t := strings.TrimSpace(strings.Trim(strings.TrimSpace(s.Lines[j]), "│┃║"))
		if t == "" {
			if blank++; blank > 1 {
				break
			}
			continue
		}
		if !isRule(t) && strings.Trim(t, "╭╮╰╯┌┐└┘─━═╌┄┈-") != "" {
			return t
		}
		break
	}
	return ""
}

// indentedPast reports whether a line between two options is blank or
// starts past col, where the options' numbers do: a description.
func indentedPast(l string, col int) bool {
	t := strings.TrimLeft(l, " ")
	return t == "" || utf8.RuneCountInString(l)-utf8.RuneCountInString(t) > col
}

// isPromptEnd reports whether a line ends as a shell's or a REPL's prompt
// does ("$ ", ">>> ", "❯"): under a list, the list was output and the
// prompt is what waits.
func isPromptEnd(t string) bool {
	return strings.HasSuffix(t, "$") || strings.HasSuffix(t, "#") || strings.HasSuffix(t, "%") ||
		strings.HasSuffix(t, ">") || strings.HasSuffix(t, "❯") || strings.HasSuffix(t, "›")
}
