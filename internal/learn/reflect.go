package learn

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/system3-dev/system3/internal/api"
)

// limits are how many items of each kind a budget returns.
type limits struct{ patterns, antiPatterns, capabilities int }

func limitsOf(b api.Budget) limits {
	switch b {
	case api.BudgetLow:
		return limits{2, 2, 1}
	case api.BudgetHigh:
		return limits{10, 10, 5}
	}
	return limits{5, 5, 3}
}

// Ranking constants (see docs/learning.md).
const (
	// HalfLife is the age at which recency halves a learning's weight.
	HalfLife = 30 * 24 * time.Hour
	// maxTerms caps the words of a query sent to the index.
	maxTerms = 32
	// confidenceK: reflect's confidence is n/(n+confidenceK) for n items.
	confidenceK = 3
	// maxReflection caps the reflect command's output.
	maxReflection = 16 << 10
)

// stopwords are left out of queries: they match everything.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from has have how i if in into is it its of on or
		that the their then there these this to was we were what when which who why will with you your our do does did
		not no can should would could about after before over under than so`) {
		stopwords[w] = true
	}
}

// terms are the distinct searchable words of s, at most n.
func terms(s string, n int) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) < 2 || stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == n {
			break
		}
	}
	return out
}

func quoteTerms(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = `"` + w + `"`
	}
	return out
}

// ftsAll matches rows holding every word; ftsAny, any of them (bm25
// ranks those holding more, and rarer, words first).
func ftsAll(ws []string) string { return strings.Join(quoteTerms(ws), " AND ") }
func ftsAny(ws []string) string { return strings.Join(quoteTerms(ws), " OR ") }

// Score combines relevance, recency and support:
//
//	score = -bm25 × (0.5 + 0.5 × 2^(-age/HalfLife)) × (1 + ln(seen))
//
// bm25 is FTS5's (negative: better matches are more negative); age is the
// time since the learning was last seen. An old learning keeps at least
// half its weight; one seen in several outcomes counts more.
func Score(bm25 float64, age time.Duration, seen int) float64 {
	rec := math.Pow(2, -max(0, age.Hours())/HalfLife.Hours())
	return -bm25 * (0.5 + 0.5*rec) * (1 + math.Log(float64(max(1, seen))))
}

// maxRecallInitiatives caps the initiative text kept for recall per
// learning (a learning seen in many outcomes keeps the first ones).
const maxRecallInitiatives = 4 << 10

// addInitiative makes a learning recallable by one more initiative it was
// learnt in (a repeat, or a near-duplicate merged into it).
func addInitiative(ctx context.Context, tx *sql.Tx, id int64, initiative string) error {
	initiative = strings.TrimSpace(initiative)
	if initiative == "" {
		return nil
	}
	for _, table := range []string{"recall_words", "recall_parts"} {
		if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET initiative = initiative || char(10) || ?1
			WHERE rowid = ?2 AND instr(initiative, ?1) = 0 AND length(initiative) < ?3`, initiative, id, maxRecallInitiatives); err != nil {
			return fmt.Errorf("recall index: %w", err)
		}
	}
	return nil
}

// partWeight scales a match found only by a part of a word ("auth" in
// "OAuth") below matches of whole, stemmed words.
const partWeight = 0.5

// search ranks the live learnings of one kind matching any of the words,
// in their text, domain or initiatives: whole words (stemmed) first, then
// learnings that only hold a word as part of a longer one.
func (s *Store) search(ctx context.Context, kind string, words []string, limit int) ([]api.LearnItem, error) {
	if len(words) == 0 || limit <= 0 {
		return []api.LearnItem{}, nil
	}
	out, err := s.searchIndex(ctx, "recall_words", kind, words, limit, 1, nil)
	if err != nil {
		return nil, err
	}
	var parts []string // trigrams need three characters
	for _, w := range words {
		if len([]rune(w)) >= 3 {
			parts = append(parts, w)
		}
	}
	if len(parts) > 0 {
		seen := map[int64]bool{}
		for _, it := range out {
			seen[it.ID] = true
		}
		more, err := s.searchIndex(ctx, "recall_parts", kind, parts, limit, partWeight, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	slices.SortStableFunc(out, func(a, b api.LearnItem) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return int(b.ID - a.ID)
	})
	out = out[:min(limit, len(out))]
	for i := range out {
		out[i].Score = sig4(out[i].Score)
	}
	return out, nil
}

// searchIndex ranks the live learnings of one kind that one recall index
// matches, leaving out skip.
func (s *Store) searchIndex(ctx context.Context, table, kind string, words []string, limit int, weight float64, skip map[int64]bool) ([]api.LearnItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT l.id, l.kind, l.text, l.domain, l.seen, l.injected, l.created, l.last_seen, l.reported_by, bm25(`+table+`)
		FROM `+table+` JOIN learnings l ON l.id = `+table+`.rowid
		WHERE `+table+` MATCH ? AND l.kind = ? AND l.stale = 0
		ORDER BY bm25(`+table+`) LIMIT ?`, ftsAny(words), kind, limit*10+20)
	if err != nil {
		return nil, fmt.Errorf("search learnings: %w", err)
	}
	defer rows.Close()
	now := s.now()
	out := []api.LearnItem{}
	for rows.Next() {
		var it api.LearnItem
		var created, last int64
		var bm float64
		if err := rows.Scan(&it.ID, &it.Kind, &it.Text, &it.Domain, &it.Seen, &it.Injected, &created, &last, &it.ReportedBy, &bm); err != nil {
			return nil, fmt.Errorf("search learnings: %w", err)
		}
		if skip[it.ID] {
			continue
		}
		it.Created, it.LastSeen = fromMS(created), fromMS(last)
		it.Score = weight * Score(bm, now.Sub(it.LastSeen), it.Seen)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search learnings: %w", err)
	}
	return out, nil
}

// sig4 rounds to four significant digits, for display: bm25 of a word
// most learnings hold is tiny, and the ranking lives in the digits.
func sig4(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 4, 64), 64)
	return v
}

// Reflect recalls what applies to query (and the optional context, about): the
// best-ranked patterns and anti-patterns, notes on the capabilities of
// their domains, and a confidence. budget bounds how many; with budget
// high and a reflect command configured, the command also writes a
// reflection from that material.
func (s *Store) Reflect(ctx context.Context, query, about string, budget api.Budget) (api.Reflection, error) {
	query = strings.TrimSpace(query)
	if budget == "" {
		budget = api.BudgetMid
	}
	if !slices.Contains(api.Budgets(), string(budget)) {
		return api.Reflection{}, invalid("budget %q is not one of low, mid, high", budget)
	}
	words := terms(query, maxTerms)
	if len(words) == 0 {
		return api.Reflection{}, invalid("query %q has no words to search for; ask about a task, like \"add OAuth login to the API\"", query)
	}
	words = append(words, terms(about, maxTerms-len(words))...)
	words = slices.Compact(words)
	lim := limitsOf(budget)
	r := api.Reflection{Query: query, Budget: string(budget), Mode: "retrieval", Capabilities: []api.CapabilityNote{}}
	var err error
	if r.Patterns, err = s.search(ctx, api.LearningPattern, words, lim.patterns); err != nil {
		return r, err
	}
	if r.AntiPatterns, err = s.search(ctx, api.LearningAntiPattern, words, lim.antiPatterns); err != nil {
		return r, err
	}
	// The capabilities of the domains the material comes from, in the
	// order they first appear, and of any domain the query names.
	var domains []string
	for _, it := range append(slices.Clone(r.Patterns), r.AntiPatterns...) {
		if !slices.Contains(domains, it.Domain) {
			domains = append(domains, it.Domain)
		}
	}
	all, err := s.Capabilities(ctx, "", "")
	if err != nil {
		return r, err
	}
	for _, c := range all {
		if slices.Contains(words, c.Domain) && !slices.Contains(domains, c.Domain) {
			domains = append(domains, c.Domain)
		}
	}
	for _, d := range domains {
		if len(r.Capabilities) == lim.capabilities {
			break
		}
		for _, c := range all {
			if c.Domain == d {
				r.Capabilities = append(r.Capabilities, api.CapabilityNote{Capability: c,
					Note: fmt.Sprintf("%s: confidence %.2f (%s)", c.Domain, c.Confidence, c.Evidence)})
			}
		}
	}
	n := len(r.Patterns) + len(r.AntiPatterns)
	r.Confidence = round2(float64(n) / float64(n+confidenceK))
	switch {
	case n == 0:
		r.Note = "nothing learnt yet matches this query; report outcomes (report_outcome) to build the store"
	case budget != api.BudgetHigh:
		r.Note = "retrieval only: ranked material from the store (budget high asks the configured reflect command for a written reflection)"
	case s.opts.ReflectCommand == "":
		r.Note = "retrieval only: no learn.reflect_command is configured (set one, like \"claude -p\", for written reflections)"
	default:
		text, err := s.runReflect(ctx, r, about)
		if err != nil {
			r.Note = "retrieval only: the reflect command failed: " + err.Error()
			break
		}
		r.Mode, r.Reflection = "written", text
		r.Note = "written by the reflect command from the material below"
	}
	return r, nil
}

// material is the retrieved material as the reflect command reads it.
func material(r api.Reflection, about string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are reflecting for a supervisor of AI coding agents before it acts.\nQuestion: %s\n", r.Query)
	if c := strings.TrimSpace(about); c != "" {
		fmt.Fprintf(&b, "Context: %s\n", c)
	}
	b.WriteString("\nPatterns (approaches that worked, best match first):\n")
	for _, it := range r.Patterns {
		fmt.Fprintf(&b, "- [%s, seen %d×] %s\n", it.Domain, it.Seen, it.Text)
	}
	b.WriteString("\nAnti-patterns (approaches that failed or were poorly reasoned):\n")
	for _, it := range r.AntiPatterns {
		fmt.Fprintf(&b, "- [%s, seen %d×] %s\n", it.Domain, it.Seen, it.Text)
	}
	b.WriteString("\nCapabilities:\n")
	for _, c := range r.Capabilities {
		fmt.Fprintf(&b, "- %s\n", c.Note)
	}
	b.WriteString("\nWrite a short reflection (at most 10 lines): what to repeat, what to avoid, and the main risk.\n")
	return b.String()
}

// runReflect runs the reflect command with the material on stdin, within
// the timeout; the whole process group is killed at the deadline.
func (s *Store) runReflect(ctx context.Context, r api.Reflection, about string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReflectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", s.opts.ReflectCommand)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(material(r, about))
	var out, errOut capped
	out.max, errOut.max = maxReflection, 2048
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("no answer in time (learn.reflect_timeout is %s)", s.opts.ReflectTimeout)
	case err != nil:
		msg := strings.TrimSpace(errOut.String())
		if msg != "" {
			return "", fmt.Errorf("%v: %s", err, lastLine(msg))
		}
		return "", err
	}
	text := strings.TrimSpace(out.String())
	if text == "" {
		return "", errors.New("it printed nothing")
	}
	return text, nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
