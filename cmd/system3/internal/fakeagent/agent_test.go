package fakeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
	"github.com/system3-dev/system3/tasks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKeyParser(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []key
	}{
		{"text", []string{"hé!"}, []key{{kind: kRune, r: 'h'}, {kind: kRune, r: 'é'}, {kind: kRune, r: '!'}}},
		{"lone escape", []string{"\x1b"}, []key{{kind: kEsc}}},
		{"arrows", []string{"\x1b[A\x1bOB\x1b[C"}, []key{{kind: kUp}, {kind: kDown}}},
		{"enter and editing", []string{"a\r\x7f\x15\t"}, []key{{kind: kRune, r: 'a'}, {kind: kEnter}, {kind: kBackspace}, {kind: kCtrlU}, {kind: kTab}}},
		{"ctrl keys", []string{"\x03\x04"}, []key{{kind: kCtrlC}, {kind: kCtrlD}}},
		{"sequence split across reads", []string{"\x1b[", "B"}, []key{{kind: kDown}}},
		{"rune split across reads", []string{"\xc3", "\xa9"}, []key{{kind: kRune, r: 'é'}}},
		{"bracketed paste", []string{"\x1b[200~hel", "lo\nworld\x1b[2", "01~x"}, []key{{kind: kPaste, text: "hello\nworld"}, {kind: kRune, r: 'x'}}},
		{"alt key ignored", []string{"\x1bxy"}, []key{{kind: kRune, r: 'y'}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p keyParser
			var got []key
			for _, c := range tt.chunks {
				got = append(got, p.parse([]byte(c))...)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("keys = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTaskListIsClaudeCodes(t *testing.T) {
	root := t.TempDir()
	l, err := openTaskList(root, "PRD-X")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range authPlan[:2] {
		if _, err := l.create(p.subject, p.description, p.activeForm); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.set("1", statusCompleted); err != nil {
		t.Fatal(err)
	}
	if err := l.set("2", statusInProgress); err != nil {
		t.Fatal(err)
	}
	if err := l.set("9", statusCompleted); err == nil {
		t.Error("set on a missing task succeeded")
	}
	entries, _ := os.ReadDir(filepath.Join(root, "PRD-X"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{".lock", "1.json", "2.json"}) {
		t.Errorf("files = %q, want .lock, 1.json, 2.json and no temporary files", names)
	}
	data, err := os.ReadFile(filepath.Join(root, "PRD-X", "2.json"))
	if err != nil {
		t.Fatal(err)
	}
	task, problems, err := tasks.ParseTask(data, "2")
	if err != nil || len(problems) != 0 || task.ID != "2" || task.Status != tasks.StatusInProgress || task.ActiveForm != authPlan[1].activeForm || len(task.Extra) != 0 {
		t.Fatalf("2.json = %s: %+v, %v, %v", data, task, problems, err)
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`} {
		if _, err := openTaskList(root, bad); err == nil {
			t.Errorf("list id %q accepted", bad)
		}
	}
}

type running struct {
	out  *testkit.SyncBuffer
	in   *io.PipeWriter
	stop context.CancelFunc
	done chan error
}

func start(t *testing.T, opt Options) *running {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{out: &testkit.SyncBuffer{}, in: pw, stop: cancel, done: make(chan error, 1)}
	opt.In, opt.Out = pr, r.out
	go func() { r.done <- Run(ctx, opt) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
	})
	return r
}

func (r *running) waitOut(t *testing.T, want string) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, fmt.Sprintf("the output to show %q", want), func() bool { return strings.Contains(r.out.String(), want) })
}

func (r *running) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunAnswersAQuestionAndStops(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := start(t, Options{Script: "question", TasksDir: root, TaskList: "L"})
	r.waitOut(t, "Which database should we use?")
	if _, err := r.in.Write([]byte("3")); err != nil {
		t.Fatal(err)
	}
	r.waitOut(t, "Which database should we use? → Redis")
	r.waitOut(t, "Going with Redis")
	r.stop()
	if err := r.result(t); err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
	out := r.out.String()
	if i := strings.LastIndex(out, "\x1b[?2004l\x1b[?25h"); i < 0 || strings.Contains(out[i:], "\x1b[?25l") {
		t.Errorf("terminal modes not restored at exit: %q", out[max(0, len(out)-80):])
	}
	l, err := tasks.LoadList(filepath.Join(root, "L"))
	if err != nil || l.Progress.Total != 3 || l.Progress.Completed < 1 {
		t.Fatalf("task list: %+v, %v", l.Progress, err)
	}
}

func TestRunCrashes(t *testing.T) {
	t.Parallel()
	r := start(t, Options{Script: "crash"})
	var crash *CrashError
	if err := r.result(t); !errors.As(err, &crash) {
		t.Fatalf("Run = %v, want a CrashError", err)
	}
	if out := r.out.String(); !strings.Contains(out, "TypeError: Cannot read properties of undefined (reading 'split')\r\n    at formatToolOutput") {
		t.Errorf("no stack trace in the output")
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, opt := range []Options{{Script: "nope"}, {Script: "idle", TaskList: "X"}} {
		if err := Run(context.Background(), opt); err == nil {
			t.Errorf("Run(%+v) succeeded", opt)
		}
	}
}

func TestRunStreamsAndPrompts(t *testing.T) {
	t.Parallel()
	marks := &testkit.SyncBuffer{}
	r := start(t, Options{Script: "stream", PromptEvery: 400 * time.Millisecond, PromptHold: 300 * time.Millisecond, Marks: marks})
	r.waitOut(t, "… +1 lines (ctrl+o to expand)")
	r.waitOut(t, "Do you want to proceed?")
	testkit.WaitForValue(t, 15*time.Second, "two prompts recorded in the marks", func() (string, bool) {
		m := marks.String()
		return strconv.Quote(m), strings.Count(m, "\n") >= 2
	})
	before := time.Now()
	for _, l := range strings.Fields(marks.String()) {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || time.Unix(0, n).After(before) || before.Sub(time.Unix(0, n)) > 20*time.Second {
			t.Fatalf("mark %q is not a recent Unix time in ns", l)
		}
	}
	r.stop()
	if err := r.result(t); err != nil {
		t.Fatalf("Run = %v, want nil after cancel", err)
	}
}

// Inputs says what reached the agent and what it was doing then: a paste
// at its question is not a prompt at its input box.
func TestRunRecordsInputs(t *testing.T) {
	t.Parallel()
	inputs := &testkit.SyncBuffer{}
	r := start(t, Options{Script: "question", Inputs: inputs})
	r.waitOut(t, "Which database should we use?")
	r.in.Write([]byte("\x1b[200~two\nlines\x1b[201~"))
	r.in.Write([]byte("2"))
	r.waitOut(t, "Going with SQLite")
	r.waitOut(t, "done")
	r.in.Write([]byte("\x1b[200~a\nb\x1b[201~"))
	r.in.Write([]byte("\r"))
	r.waitOut(t, "Noted.")
	r.stop()
	if err := r.result(t); err != nil {
		t.Fatal(err)
	}
	want := "question paste 9\nquestion rune\nidle paste 3\nidle enter\nidle submit 3\n"
	if got := inputs.String(); got != want {
		t.Fatalf("inputs = %q, want %q", got, want)
	}
}
