package tasks

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The seed corpus is in testdata/fuzz/<target>: real-looking task files,
// legacy todo files and malformed ones. Run a target with, for example,
// go test -run '^$' -fuzz '^FuzzParseTask$' -fuzztime 30s ./tasks/

// jsonText is data as the parser sees it: without a BOM and outer space.
func jsonText(data []byte) []byte {
	return bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
}

func FuzzParseTask(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		task, problems, err := ParseTask(data, "")
		text := jsonText(data)
		if err != nil {
			if task.ID != "" || problems != nil {
				t.Fatalf("error %v came with a task %+v / problems %q", err, task, problems)
			}
			checkSentence(t, err.Error())
		} else {
			if !utf8.Valid(text) || !json.Valid(text) || kindOf(text) != "an object" {
				t.Fatalf("accepted input that is not a UTF-8 JSON object: %q", data)
			}
			if task.ID == "" || task.Status == "" {
				t.Fatalf("parsed task without id or status: %+v", task)
			}
			for _, p := range problems {
				checkSentence(t, p)
			}
			checkOutputs(t, []Task{task})
		}

		// With a fallback id, every JSON object is a task.
		task2, _, err2 := ParseTask(data, "fallback")
		if utf8.Valid(text) && json.Valid(text) && kindOf(text) == "an object" {
			if err2 != nil || task2.ID == "" {
				t.Fatalf("JSON object rejected with a fallback id: %v", err2)
			}
		} else if err2 == nil {
			t.Fatalf("non-object accepted with a fallback id: %q", data)
		}
		if err == nil && (err2 != nil || task2.ID != task.ID) {
			t.Fatalf("the fallback changed a parse that did not need it: %q vs %q", task.ID, task2.ID)
		}
	})
}

func FuzzParseTodos(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		todos, problems, err := ParseTodos(data)
		text := jsonText(data)
		if err != nil {
			if todos != nil {
				t.Fatalf("error %v came with todos", err)
			}
			checkSentence(t, err.Error())
			return
		}
		if !utf8.Valid(text) || !json.Valid(text) || kindOf(text) != "an array" {
			t.Fatalf("accepted input that is not a UTF-8 JSON array: %q", data)
		}
		prev := 0
		for _, td := range todos {
			n, err := strconv.Atoi(td.ID)
			if err != nil || n <= prev {
				t.Fatalf("ids must be increasing positions, got %q after %d", td.ID, prev)
			}
			prev = n
			if td.Status == "" {
				t.Fatalf("todo without status: %+v", td)
			}
		}
		for _, p := range problems {
			checkSentence(t, p)
		}
		checkOutputs(t, todos)
	})
}

// checkSentence: messages are one non-empty line.
func checkSentence(t *testing.T, s string) {
	t.Helper()
	if s == "" || strings.ContainsAny(s, "\n\r") {
		t.Fatalf("message is not one line: %q", s)
	}
}

// checkOutputs: whatever parsed can be shown, and the report never passes
// control characters to the terminal.
func checkOutputs(t *testing.T, ts []Task) {
	t.Helper()
	sortTasks(ts)
	l := List{ID: "fuzz", Tasks: ts, Progress: ComputeProgress(ts)}
	c := l.Clone()
	if len(c.Tasks) != len(ts) {
		t.Fatal("clone lost tasks")
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, []List{l}); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	if !json.Valid(b.Bytes()) {
		t.Fatalf("WriteJSON wrote invalid JSON:\n%s", b.Bytes())
	}
	b.Reset()
	if err := WriteText(&b, []List{l}, time.Unix(0, 0)); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	for _, r := range b.String() {
		if r != '\n' && (r < 0x20 || (r >= 0x7f && r < 0xa0) || r == '\u202e') {
			t.Fatalf("WriteText passed control character %U through:\n%q", r, b.String())
		}
	}
}
