package coach

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// DirectiveFiles are the files Claude Code itself reads as memory: the
// user's (in claudeDir, normally ~/.claude) and the project's (CLAUDE.md
// and .claude/CLAUDE.md in projectDir, the orchestrator's directory).
// Empty arguments are skipped.
func DirectiveFiles(claudeDir, projectDir string) []api.DirectiveFile {
	var fs []api.DirectiveFile
	if claudeDir != "" {
		fs = append(fs, api.DirectiveFile{Source: "user", Path: filepath.Join(claudeDir, "CLAUDE.md")})
	}
	if projectDir != "" {
		fs = append(fs, api.DirectiveFile{Source: "project", Path: filepath.Join(projectDir, "CLAUDE.md")},
			api.DirectiveFile{Source: "project", Path: filepath.Join(projectDir, ".claude", "CLAUDE.md")})
	}
	return fs
}

// LoadDirectives reads every file that exists; a file that cannot be read
// (other than missing) is reported and skipped.
func LoadDirectives(files []api.DirectiveFile) ([]api.Directive, []error) {
	var out []api.Directive
	var errs []error
	ids := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read directives %s: %w", f.Path, err))
			continue
		}
		for _, d := range ParseDirectives(f.Source, f.Path, data) {
			// The same first words twice (two project files): keep both.
			d.ID = uniqueID(ids, d.ID)
			out = append(out, d)
		}
	}
	return out, errs
}

var (
	headingRe = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	bulletRe  = regexp.MustCompile(`^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$`)
	fenceRe   = regexp.MustCompile("^\\s*(```|~~~)")
	wordRe    = regexp.MustCompile(`[\p{L}\p{N}]+`)
)

// ParseDirectives splits a CLAUDE.md into directives: every bullet (with
// its continuation lines) and every paragraph, under the nearest heading.
// Code blocks, HTML comments and imports (@path lines) are left out.
func ParseDirectives(source, file string, data []byte) []api.Directive {
	var out []api.Directive
	heading := ""
	var cur *api.Directive
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(cur.Text)
			if cur.Text != "" {
				out = append(out, *cur)
			}
		}
		cur = nil
	}
	inFence, inComment := false, false
	for i, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		n := i + 1
		if fenceRe.MatchString(line) {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if inComment || strings.HasPrefix(trimmed, "<!--") {
			flush()
			inComment = !strings.Contains(trimmed, "-->")
			continue
		}
		if m := headingRe.FindStringSubmatch(line); m != nil {
			flush()
			heading = m[2]
			continue
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "@") || strings.Trim(trimmed, "-*_= ") == "" {
			flush()
			continue
		}
		if m := bulletRe.FindStringSubmatch(line); m != nil {
			flush()
			cur = &api.Directive{Source: source, File: file, Line: n, Heading: heading, Text: m[3]}
			continue
		}
		if cur != nil {
			// A paragraph's next line, or a bullet's continuation (indented
			// or lazy, as Markdown allows).
			cur.Text += " " + trimmed
			continue
		}
		cur = &api.Directive{Source: source, File: file, Line: n, Heading: heading, Text: trimmed}
	}
	flush()
	used := map[string]bool{}
	for i := range out {
		id := source + "/"
		if out[i].Heading != "" {
			id += slug(out[i].Heading, 4) + "/"
		}
		out[i].ID = uniqueID(used, id+slug(out[i].Text, 5))
	}
	return out
}

// uniqueID is id, or id-2, id-3... the first not in used, which it joins.
// A suffix can itself be some text's slug ("A 2" is "a-2"), so each
// candidate is checked.
func uniqueID(used map[string]bool, id string) string {
	cand := id
	for n := 2; used[cand]; n++ {
		cand = fmt.Sprintf("%s-%d", id, n)
	}
	used[cand] = true
	return cand
}

// slug is the first n words of s, lower case, joined by '-'.
func slug(s string, n int) string {
	words := wordRe.FindAllString(strings.ToLower(s), -1)
	if len(words) > n {
		words = words[:n]
	}
	if len(words) == 0 {
		return "untitled"
	}
	return strings.Join(words, "-")
}

// MinLinkScore is the weakest text match that still links a directive.
const MinLinkScore = 0.2

// LinkDirective finds the directive for a pattern: the one its rules name,
// else the best text match over its name, description and keywords.
func LinkDirective(p rules.Pattern, ds []api.Directive) api.DirectiveLink {
	l := api.DirectiveLink{Pattern: p.ID, By: "none"}
	if p.Directive != "" {
		for _, d := range ds {
			if d.ID == p.Directive {
				return api.DirectiveLink{Pattern: p.ID, Directive: d.ID, Score: 1, By: "explicit", Text: d.Text}
			}
		}
		l.Directive, l.By = p.Directive, "missing"
		return l
	}
	query := terms(p.Name + " " + p.Description + " " + strings.Join(p.Keywords, " "))
	if len(query) == 0 || len(ds) == 0 {
		return l
	}
	docs := make([][]string, len(ds))
	for i, d := range ds {
		docs[i] = terms(d.Heading + " " + d.Text)
	}
	// idf: a word every directive has says little.
	weight := map[string]float64{}
	total := 0.0
	for _, q := range query {
		df := 0
		for _, doc := range docs {
			if hasTerm(doc, q) {
				df++
			}
		}
		w := math.Log(1 + float64(len(ds))/float64(1+df))
		weight[q] = w
		total += w
	}
	best, bestScore := -1, 0.0
	for i, doc := range docs {
		got := 0.0
		for _, q := range query {
			if hasTerm(doc, q) {
				got += weight[q]
			}
		}
		score := got / total
		if score > bestScore+1e-9 {
			best, bestScore = i, score
		}
	}
	if best < 0 || bestScore < MinLinkScore {
		l.Score = math.Round(bestScore*100) / 100
		return l
	}
	return api.DirectiveLink{Pattern: p.ID, Directive: ds[best].ID, Score: math.Round(bestScore*100) / 100, By: "text match", Text: ds[best].Text}
}

var stopwords = map[string]bool{
	"the": true, "a": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true,
	"for": true, "is": true, "it": true, "its": true, "be": true, "by": true, "with": true, "same": true, "again": true,
	"that": true, "this": true, "when": true, "while": true, "keeps": true, "agent": true, "you": true, "your": true,
	"do": true, "not": true, "don": true, "t": true, "s": true, "are": true, "as": true, "at": true, "if": true,
	"loop": true, "repeated": true, "repeatedly": true, "without": true, "one": true, "every": true, "always": true, "never": true,
}

// terms are the distinct significant words of s.
func terms(s string) []string {
	var out []string
	for _, w := range wordRe.FindAllString(strings.ToLower(s), -1) {
		if len(w) < 2 || stopwords[w] {
			continue
		}
		if !hasExact(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func hasExact(ws []string, w string) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

// hasTerm: equal words, or one a prefix of the other when both have four
// letters or more (format, formatter, formatting; test, tests).
func hasTerm(doc []string, q string) bool {
	for _, w := range doc {
		if w == q {
			return true
		}
		if len(w) >= 4 && len(q) >= 4 && (strings.HasPrefix(w, q) || strings.HasPrefix(q, w)) {
			return true
		}
	}
	return false
}
