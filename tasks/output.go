package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// Schema names the format WriteJSON writes. It changes only when a field's
// meaning changes or one is removed; new fields may appear within a version.
const Schema = "system3.tasks/v1"

// Status symbols, readable without colour.
const (
	symCompleted  = "✓"
	symInProgress = "▶"
	symPending    = "·"
	symBlocked    = "✗"
	symUnknown    = "?"
	symError      = "!"
)

const barWidth = 10

// WriteText writes a report for people: per list a header with its id,
// progress, a bar, the number of tasks in progress and blocked and when it
// last changed (relative to now); then one line per task; then the list's
// file problems. Empty legacy todo lists, which pile up by the hundred, are
// counted instead of shown when there is more than one list. It writes
// nothing for no lists: the caller knows where it looked.
func WriteText(w io.Writer, lists []List, now time.Time) error {
	return writeText(w, lists, now, false)
}

// WriteTextFull is WriteText with every subject and active form whole.
func WriteTextFull(w io.Writer, lists []List, now time.Time) error {
	return writeText(w, lists, now, true)
}

func writeText(w io.Writer, lists []List, now time.Time, full bool) error {
	lists = slices.Clone(lists)
	sortLists(lists)
	var b bytes.Buffer
	hidden := 0
	shown := 0
	for _, l := range lists {
		if len(lists) > 1 && l.Legacy && len(l.Tasks) == 0 && len(l.Errors) == 0 {
			hidden++
			continue
		}
		if shown > 0 {
			b.WriteByte('\n')
		}
		shown++
		writeList(&b, l, now, full)
	}
	if hidden > 0 {
		if shown > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "(%d empty legacy todo %s not shown)\n", hidden, plural(hidden, "list", "lists"))
	}
	if shown > 0 {
		fmt.Fprintf(&b, "\n%s done  %s in progress  %s pending  %s blocked  %s file problem\n",
			symCompleted, symInProgress, symPending, symBlocked, symError)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func writeList(b *bytes.Buffer, l List, now time.Time, full bool) {
	line := firstLine
	if full {
		line = func(s string) string { return s }
	}
	p := l.Progress
	b.WriteString(clean(l.ID))
	if l.Legacy {
		b.WriteString(" (legacy todos)")
	}
	fmt.Fprintf(b, "  %d/%d %s  %d in progress · %d blocked", p.Completed, p.Total, bar(p), len(p.InProgress), len(p.Blocked))
	if n := len(l.Errors); n > 0 {
		fmt.Fprintf(b, " · %d %s", n, plural(n, "file problem", "file problems"))
	}
	fmt.Fprintf(b, " · changed %s\n", ago(now, l.LastChange))

	blocked := make(map[string][]string, len(p.Blocked))
	for _, r := range p.Blocked {
		blocked[r.ID] = r.WaitingOn
	}
	width := 0
	for _, t := range l.Tasks {
		width = max(width, utf8.RuneCountInString(clean(t.ID)))
	}
	if len(l.Tasks) == 0 {
		b.WriteString("  (no tasks)\n")
	}
	for _, t := range l.Tasks {
		id := clean(t.ID)
		sym, note := symPending, ""
		waiting, isBlocked := blocked[t.ID]
		switch {
		case t.Status == StatusCompleted:
			sym = symCompleted
		case isBlocked:
			sym, note = symBlocked, "blocked by "+clean(strings.Join(waiting, ", "))
		case t.Status == StatusInProgress:
			sym, note = symInProgress, clean(line(t.ActiveForm))
		case t.Status == StatusPending:
		default:
			sym, note = symUnknown, "status "+strconv.Quote(string(t.Status))
		}
		fmt.Fprintf(b, "  %s %s%s  %s", sym, id, strings.Repeat(" ", width-utf8.RuneCountInString(id)), clean(line(t.Subject)))
		if note != "" {
			b.WriteString(" — " + note)
		}
		if t.Owner != "" {
			b.WriteString("  @" + clean(t.Owner))
		}
		b.WriteByte('\n')
	}
	for _, e := range l.Errors {
		fmt.Fprintf(b, "  %s %s: %s\n", symError, clean(relPath(l, e.Path)), clean(e.Err))
	}
}

// firstLine is s shortened for one line of a report.
func firstLine(s string) string {
	s, _ = Shorten(s, MaxSubject)
	return s
}

// relPath shortens a path inside the list's directory to its name.
func relPath(l List, p string) string {
	if !l.Legacy && filepath.Dir(p) == l.Path {
		return filepath.Base(p)
	}
	if p == l.Path {
		if l.Legacy {
			return filepath.Base(p)
		}
		return filepath.Base(p) + string(filepath.Separator)
	}
	return p
}

func bar(p Progress) string {
	filled := 0
	if p.Total > 0 {
		filled = p.Completed * barWidth / p.Total
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled) + "]"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ago says how long before now t was, in the largest whole unit.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
}

// clean makes text from task files safe to print on a terminal: control
// characters (escape sequences could rewrite the screen) and bidirectional
// overrides become visible escapes, and line breaks become spaces.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r < 0xa0) || unicode.Is(unicode.Bidi_Control, r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || (r >= 0x7f && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The JSON document. Separate types keep the wire format (snake_case keys,
// [] not null, RFC 3339 times) independent of the Go model; api.TaskListDoc
// is also what the monitor service, the socket and the MCP server return for
// a list.
type jsonDoc struct {
	Schema string            `json:"schema"`
	Lists  []api.TaskListDoc `json:"lists"`
}

// WriteJSON writes lists as one JSON document, {"schema": Schema, "lists":
// [...]}, for programs: lists sorted by id, snake_case keys, empty arrays as
// [], times in RFC 3339 (UTC) or null when unknown.
func WriteJSON(w io.Writer, lists []List) error { return writeJSON(w, lists, Doc) }

// WriteJSONFull is WriteJSON with every task whole, nothing cut.
func WriteJSONFull(w io.Writer, lists []List) error { return writeJSON(w, lists, DocFull) }

func writeJSON(w io.Writer, lists []List, doc1 func(List) api.TaskListDoc) error {
	lists = slices.Clone(lists)
	sortLists(lists)
	doc := jsonDoc{Schema: Schema, Lists: make([]api.TaskListDoc, 0, len(lists))}
	for _, l := range lists {
		doc.Lists = append(doc.Lists, doc1(l))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

func taskDoc(t Task, blocked bool) api.TaskDoc {
	jt := api.TaskDoc{
		ID:          t.ID,
		Subject:     t.Subject,
		Description: t.Description,
		ActiveForm:  t.ActiveForm,
		Status:      string(t.Status),
		Blocked:     blocked,
		Owner:       t.Owner,
		Blocks:      nonNil(t.Blocks),
		BlockedBy:   nonNil(t.BlockedBy),
		Metadata:    t.Metadata,
		Extra:       t.Extra,
		Source:      t.Source,
		Modified:    jsonTime(t.ModTime),
	}
	if jt.Metadata == nil {
		jt.Metadata = map[string]any{}
	}
	if jt.Extra == nil {
		jt.Extra = map[string]json.RawMessage{}
	}
	return jt
}

// Doc is l in its JSON form, each task's texts capped for a view of many
// tasks (see [MaxSubject]; [TaskFull] has one task whole).
func Doc(l List) api.TaskListDoc { return doc(l, shortDoc) }

// DocFull is l in its JSON form with every task whole.
func DocFull(l List) api.TaskListDoc { return doc(l, func(t api.TaskDoc) api.TaskDoc { return t }) }

func doc(l List, task func(api.TaskDoc) api.TaskDoc) api.TaskListDoc {
	p := l.Progress
	jl := api.TaskListDoc{
		ID:         l.ID,
		Path:       l.Path,
		Legacy:     l.Legacy,
		Session:    l.Session,
		Agent:      l.Agent,
		LastChange: jsonTime(l.LastChange),
		Progress: api.TaskProgressDoc{
			Completed:  p.Completed,
			Total:      p.Total,
			Done:       p.Done(),
			InProgress: make([]api.TaskActiveDoc, 0, len(p.InProgress)),
			Blocked:    make([]api.TaskBlockedDoc, 0, len(p.Blocked)),
		},
		Tasks:  make([]api.TaskDoc, 0, len(l.Tasks)),
		Errors: make([]api.TaskErrorDoc, 0, len(l.Errors)),
	}
	blocked := make(map[string]bool, len(p.Blocked))
	for _, r := range p.InProgress {
		jl.Progress.InProgress = append(jl.Progress.InProgress, api.TaskActiveDoc{ID: r.ID, Subject: r.Subject, ActiveForm: r.ActiveForm})
	}
	for _, r := range p.Blocked {
		blocked[r.ID] = true
		jl.Progress.Blocked = append(jl.Progress.Blocked, api.TaskBlockedDoc{ID: r.ID, Subject: r.Subject, WaitingOn: nonNil(r.WaitingOn)})
	}
	for _, t := range l.Tasks {
		jl.Tasks = append(jl.Tasks, task(taskDoc(t, blocked[t.ID])))
	}
	for _, e := range l.Errors {
		jl.Errors = append(jl.Errors, api.TaskErrorDoc{Path: e.Path, Error: e.Err, Since: jsonTime(e.Since)})
	}
	return jl
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func jsonTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}
