package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Advice appended to errors that a writer caught mid-write would also produce.
const retryHint = "if an agent is writing it this clears on the next write, otherwise fix or delete the file"

// ParseTask parses the content of one task file.
//
// It is lenient where that is safe: an id may be a JSON string or number,
// blocks and blockedBy may hold strings or numbers, unknown fields go to
// Task.Extra, and a missing or unusable id is replaced by fallbackID (the
// loader passes the file name without ".json"). Smaller problems, such as an
// unknown status or a field of the wrong type, come back as problems next to a
// usable task. The error is non-nil only when data cannot be a task at all:
// empty, not UTF-8, not JSON, not an object, or without any id.
//
// Source and ModTime are left for the caller to fill in.
func ParseTask(data []byte, fallbackID string) (Task, []string, error) {
	obj, err := decodeObject(data, "a task object")
	if err != nil {
		return Task{}, nil, err
	}
	var (
		t        Task
		problems []string
	)
	if raw, ok := obj["id"]; ok {
		delete(obj, "id")
		id, p := idValue("id", raw)
		if p != "" {
			problems = append(problems, p+"; the file name is used as the id")
		}
		t.ID = id
	}
	if t.ID == "" {
		t.ID = fallbackID
	}
	if t.ID == "" {
		return Task{}, nil, errors.New(`the task has no id; add an "id" field`)
	}
	problems = stringField(obj, "subject", &t.Subject, problems)
	problems = stringField(obj, "description", &t.Description, problems)
	problems = stringField(obj, "activeForm", &t.ActiveForm, problems)
	problems = stringField(obj, "owner", &t.Owner, problems)
	t.Status, problems = statusField(obj, problems)
	t.Blocks, problems = idsField(obj, "blocks", problems)
	t.BlockedBy, problems = idsField(obj, "blockedBy", problems)
	if raw, ok := obj["metadata"]; ok {
		delete(obj, "metadata")
		switch kindOf(raw) {
		case "null":
		case "an object":
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber() // keep large integers exact
			if err := dec.Decode(&m); err == nil {
				t.Metadata = m
			}
		default:
			problems = append(problems, fmt.Sprintf(`field "metadata" is %s, want an object; it was ignored`, kindOf(raw)))
		}
	}
	if len(obj) > 0 {
		t.Extra = obj
	}
	return t, problems, nil
}

// ParseTodos parses a legacy TodoWrite file: a JSON array of
// {content, status, activeForm}. Items are numbered 1..n by position, so ids
// stay stable when an item in the middle cannot be used (it is skipped and
// reported as a problem).
func ParseTodos(data []byte) ([]Task, []string, error) {
	items, err := decodeArray(data)
	if err != nil {
		return nil, nil, err
	}
	tasks := make([]Task, 0, len(items))
	var problems []string
	for i, raw := range items {
		if k := kindOf(raw); k != "an object" {
			problems = append(problems, fmt.Sprintf("item %d is %s, not a todo object; it was skipped", i+1, k))
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			problems = append(problems, fmt.Sprintf("item %d cannot be read (%v); it was skipped", i+1, err))
			continue
		}
		t := Task{ID: strconv.Itoa(i + 1)}
		var ps []string
		ps = stringField(obj, "content", &t.Subject, ps)
		ps = stringField(obj, "activeForm", &t.ActiveForm, ps)
		t.Status, ps = statusField(obj, ps)
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("item %d: %s", i+1, p))
		}
		if len(obj) > 0 {
			t.Extra = obj // older versions wrote "id" and "priority"
		}
		tasks = append(tasks, t)
	}
	return tasks, problems, nil
}

// errEmpty is an empty file: what every writer that truncates before it
// writes leaves for a moment.
var errEmpty = errors.New("the file is empty; " + retryHint)

// cleanJSON checks that data can be JSON text and returns it without a BOM and
// surrounding space.
func cleanJSON(data []byte) ([]byte, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errEmpty
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, fmt.Errorf("the file is not valid UTF-8 text (bad byte at offset %d); re-save it as UTF-8 or delete it", off)
	}
	return data, nil
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("the file is not valid JSON (%s, at byte %d); %s", se.Error(), se.Offset, retryHint)
	}
	return fmt.Errorf("the file is not valid JSON (%v); %s", err, retryHint)
}

func decodeObject(data []byte, want string) (map[string]json.RawMessage, error) {
	data, err := cleanJSON(data)
	if err != nil {
		return nil, err
	}
	if !json.Valid(data) {
		return nil, syntaxError(json.Unmarshal(data, new(any)))
	}
	if k := kindOf(data); k != "an object" {
		return nil, fmt.Errorf("the file holds %s, not %s; fix or delete the file", k, want)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, syntaxError(err)
	}
	return obj, nil
}

func decodeArray(data []byte) ([]json.RawMessage, error) {
	data, err := cleanJSON(data)
	if err != nil {
		return nil, err
	}
	if !json.Valid(data) {
		return nil, syntaxError(json.Unmarshal(data, new(any)))
	}
	if k := kindOf(data); k != "an array" {
		return nil, fmt.Errorf("the file holds %s, not a todo array; fix or delete the file", k)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, syntaxError(err)
	}
	return items, nil
}

// kindOf names the kind of a valid JSON value, with its article, for messages.
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func stringField(obj map[string]json.RawMessage, name string, dst *string, problems []string) []string {
	raw, ok := obj[name]
	if !ok {
		return problems
	}
	delete(obj, name)
	switch kindOf(raw) {
	case "null":
	case "a string":
		if err := json.Unmarshal(raw, dst); err != nil {
			problems = append(problems, fmt.Sprintf("field %q cannot be read (%v); it was ignored", name, err))
		}
	default:
		problems = append(problems, fmt.Sprintf("field %q is %s, want a string; it was ignored", name, kindOf(raw)))
	}
	return problems
}

func statusField(obj map[string]json.RawMessage, problems []string) (Status, []string) {
	raw, ok := obj["status"]
	delete(obj, "status")
	var s string
	switch {
	case !ok || kindOf(raw) == "null":
		problems = append(problems, `field "status" is missing; the task is shown as pending`)
		return StatusPending, problems
	case kindOf(raw) != "a string":
		problems = append(problems, fmt.Sprintf(`field "status" is %s, want a string; the task is shown as pending`, kindOf(raw)))
		return StatusPending, problems
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		problems = append(problems, fmt.Sprintf(`field "status" cannot be read (%v); the task is shown as pending`, err))
		return StatusPending, problems
	}
	st := Status(s)
	if st == "" {
		problems = append(problems, `field "status" is empty; the task is shown as pending`)
		return StatusPending, problems
	}
	if !st.Known() {
		problems = append(problems, fmt.Sprintf("unknown status %q (want pending, in_progress or completed); the task is shown with it as is", s))
	}
	return st, problems
}

// idValue reads a task id: a string, or a number kept as written.
func idValue(name string, raw json.RawMessage) (string, string) {
	switch k := kindOf(raw); k {
	case "null":
		return "", ""
	case "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Sprintf("field %q cannot be read (%v)", name, err)
		}
		return strings.TrimSpace(s), ""
	case "a number":
		return string(bytes.TrimSpace(raw)), ""
	default:
		return "", fmt.Sprintf("field %q is %s, want a string or a number", name, k)
	}
}

// idsField reads blocks/blockedBy: an array of ids (strings or numbers).
// Elements of other kinds are dropped and reported once.
func idsField(obj map[string]json.RawMessage, name string, problems []string) ([]string, []string) {
	raw, ok := obj[name]
	if !ok {
		return nil, problems
	}
	delete(obj, name)
	switch k := kindOf(raw); k {
	case "null":
		return nil, problems
	case "an array":
	default:
		return nil, append(problems, fmt.Sprintf("field %q is %s, want an array of task ids; it was ignored", name, k))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, append(problems, fmt.Sprintf("field %q cannot be read (%v); it was ignored", name, err))
	}
	ids := make([]string, 0, len(elems))
	bad := ""
	for _, e := range elems {
		id, p := idValue(name, e)
		switch {
		case p != "":
			if bad == "" {
				bad = kindOf(e)
			}
		case id != "":
			ids = append(ids, id)
		}
	}
	if bad != "" {
		problems = append(problems, fmt.Sprintf("field %q holds %s where a task id belongs; that element was ignored", name, bad))
	}
	return ids, problems
}
