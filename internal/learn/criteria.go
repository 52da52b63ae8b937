package learn

import (
	"regexp"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// PassMin is how many of the five criteria a reasoning path must evidence
// to pass (be "validated").
const PassMin = 4

// criterion is how a criterion is recognised: any cue found in the text.
// minHits > 1 asks for that many distinct cues (sequencing needs more
// than one "then").
type criterion struct {
	name, label string
	cues        *regexp.Regexp
	minHits     int
}

// criteria are the seed's five, each with the cue phrases of a transparent
// text heuristic (documented in docs/learning.md): no model is asked.
var criteria = []criterion{
	{name: "goal_defined", label: "goal clearly defined", minHits: 1, cues: regexp.MustCompile(
		`(?i)\b(goal|objective|aim(ed)? (to|at)|in order to|so that|the task (is|was) to|needed to|need to|purpose|intended to|wanted to|target(ed)?)\b`)},
	{name: "steps_sequenced", label: "steps sequenced", minHits: 2, cues: regexp.MustCompile(
		`(?im)\b(first(ly)?|second(ly)?|third|then|next|after (that|this)|afterwards|finally|lastly|step \d+)\b|^\s*\d+[.)]\s|(->|→)`)},
	{name: "decisions_justified", label: "decisions justified", minHits: 1, cues: regexp.MustCompile(
		`(?i)\b(because|therefore|hence|chose|chosen|decided|instead of|rather than|trade-?offs?|due to|which is why|the reason)\b`)},
	{name: "risks_considered", label: "risks considered", minHits: 1, cues: regexp.MustCompile(
		`(?i)\b(risks?|risky|could break|might break|edge cases?|fallback|roll ?back|backups?|regressions?|caveats?|failure modes?|in case|mitigat\w*|side effects?|worst case|safe(ly|ty)?)\b`)},
	{name: "outcome_verified", label: "outcome verified", minHits: 1, cues: regexp.MustCompile(
		`(?i)\b(verified|verify|tests? (pass(ed|es)?|green)|tested|confirmed|checked|validated|all green|benchmark(ed)?|measured|reproduced|ci (passed|green))\b`)},
}

// CheckReasoning reports, for each of the five criteria in order, whether
// the reasoning path evidences it and with which phrase, and whether it
// passes (at least PassMin evidenced).
func CheckReasoning(reasoning string) ([]api.Criterion, bool) {
	out := make([]api.Criterion, 0, len(criteria))
	n := 0
	for _, c := range criteria {
		r := api.Criterion{Name: c.name, Label: c.label}
		locs := c.cues.FindAllStringIndex(reasoning, -1)
		distinct := map[string]bool{}
		var first []int
		for _, l := range locs {
			w := strings.ToLower(strings.TrimSpace(reasoning[l[0]:l[1]]))
			if w == "" || distinct[w] {
				continue
			}
			if first == nil {
				first = l
			}
			distinct[w] = true
		}
		if len(distinct) >= c.minHits && first != nil {
			r.Evidenced = true
			r.Evidence = around(reasoning, first[0], first[1])
			n++
		}
		out = append(out, r)
	}
	return out, n >= PassMin
}

// around is the clause of text that holds [i, j), cut at sentence or line
// boundaries and to at most 100 characters.
func around(text string, i, j int) string {
	start := strings.LastIndexAny(text[:i], ".!?\n;") + 1
	end := len(text)
	if k := strings.IndexAny(text[j:], ".!?\n;"); k >= 0 {
		end = j + k
	}
	s := strings.TrimSpace(text[start:end])
	if r := []rune(s); len(r) > 100 {
		// Keep the cue in view: centre the cut on it.
		cue := len([]rune(text[start:i]))
		from := max(0, min(cue-40, len(r)-100))
		s = strings.TrimSpace(string(r[from:from+100])) + "…"
		if from > 0 {
			s = "…" + s
		}
	}
	return s
}
