package tasks

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/system3-dev/system3/internal/api"
)

// What a view of many tasks shows of each: task files are written by agents
// and nothing bounds them, so one 3 MB subject must not make every list
// reply megabytes. Whoever asks for one task gets it whole ([TaskFull]).
const (
	MaxSubject     = 200  // characters of a subject or active form
	MaxDescription = 2000 // characters of a description
	maxExtra       = 2000 // bytes of one metadata or unknown field's JSON
)

// Shorten returns s cut to n characters (runes) with a marker saying how
// many were left out, "… (+N chars)", and whether it cut anything.
func Shorten(s string, n int) (string, bool) {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i, kept := 0, 0
	for kept < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		kept++
	}
	return fmt.Sprintf("%s… (+%d chars)", s[:i], utf8.RuneCountInString(s[i:])), true
}

func short(s string, n int, cut *bool) string {
	out, c := Shorten(s, n)
	*cut = *cut || c
	return out
}

// shortDoc caps the texts of t for a view of many tasks and marks it
// Truncated when it cut anything.
func shortDoc(t api.TaskDoc) api.TaskDoc {
	cut := false
	t.Subject = short(t.Subject, MaxSubject, &cut)
	t.ActiveForm = short(t.ActiveForm, MaxSubject, &cut)
	t.Description = short(t.Description, MaxDescription, &cut)
	if len(t.Metadata) > 0 {
		m := make(map[string]any, len(t.Metadata))
		for k, v := range t.Metadata {
			if b, err := json.Marshal(v); err == nil && len(b) > maxExtra {
				v, cut = fmt.Sprintf("… (%d bytes of JSON left out)", len(b)), true
			}
			m[k] = v
		}
		t.Metadata = m
	}
	if len(t.Extra) > 0 {
		m := make(map[string]json.RawMessage, len(t.Extra))
		for k, v := range t.Extra {
			if len(v) > maxExtra {
				v, _ = json.Marshal(fmt.Sprintf("… (%d bytes of JSON left out)", len(v)))
				cut = true
			}
			m[k] = v
		}
		t.Extra = m
	}
	t.Truncated = cut
	return t
}

// TaskFull returns task id of l in full, nothing shortened, for whoever asks
// for that one task.
func TaskFull(l List, id string) (api.TaskDoc, bool) {
	blocked := map[string]bool{}
	for _, r := range l.Progress.Blocked {
		blocked[r.ID] = true
	}
	for _, t := range l.Tasks {
		if t.ID == id {
			return taskDoc(t, blocked[t.ID]), true
		}
	}
	return api.TaskDoc{}, false
}
