package monitor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/tasks"
)

// ValidationRule says how to check the work of a task list: when a task in a
// list whose id matches List (a glob, as in path.Match) becomes completed,
// Command runs in Dir (through sh -c) and must exit 0 within Timeout.
type ValidationRule struct {
	List    string        `yaml:"list" json:"list"`
	Command string        `yaml:"command" json:"command"`
	Dir     string        `yaml:"dir" json:"dir"`
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// Validation is the result of one validation run.
type Validation struct {
	ListID   string        `json:"list_id"`
	TaskID   string        `json:"task_id"`
	Subject  string        `json:"subject"`
	Command  string        `json:"command"`
	Passed   bool          `json:"passed"`
	ExitCode int           `json:"exit_code"` // -1: did not finish (timeout, could not start)
	Output   string        `json:"output"`    // the tail of stdout and stderr
	Started  time.Time     `json:"started"`
	Took     time.Duration `json:"took"`
}

// Bounds on validation runs.
const (
	defaultValidationTimeout = 10 * time.Minute
	validationOutputTail     = 4 << 10
	maxConcurrentValidations = 2
)

// Validator runs the validation command of a list when one of its tasks is
// completed, raises validation_failed when it fails (and clears it when a
// later run for the task passes), and keeps the last result per task.
type Validator struct {
	rules  []ValidationRule
	events <-chan tasks.Event
	wakes  api.WakeRaiser
	clock  func() time.Time
	log    *slog.Logger

	mu      sync.Mutex
	results map[string]Validation // by list id + "/" + task id
}

// NewValidator checks the rules and returns a validator fed by events (a
// tasks.Watcher subscription).
func NewValidator(rules []ValidationRule, events <-chan tasks.Event, wakes api.WakeRaiser, clock func() time.Time, log *slog.Logger) (*Validator, error) {
	for i, r := range rules {
		if r.List == "" || r.Command == "" {
			return nil, fmt.Errorf("validation rule %d: set both list (a list id or glob) and command", i+1)
		}
		if _, err := path.Match(r.List, ""); err != nil {
			return nil, fmt.Errorf("validation rule %d: list %q is not a valid glob: %v", i+1, r.List, err)
		}
		if r.Timeout < 0 {
			return nil, fmt.Errorf("validation rule %d: timeout %v is negative", i+1, r.Timeout)
		}
	}
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Validator{rules: rules, events: events, wakes: wakes, clock: clock, log: log, results: map[string]Validation{}}, nil
}

// Run handles events until ctx ends or the events stop, then waits for the
// runs in progress (they are killed by ctx).
func (v *Validator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxConcurrentValidations)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-v.events:
			if !ok {
				return nil
			}
			if ev.Kind != tasks.EventTaskStatusChanged || ev.To != tasks.StatusCompleted {
				continue
			}
			rule, ok := v.ruleFor(ev.ListID)
			if !ok {
				continue
			}
			wg.Go(func() {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-slots }()
				v.validate(ctx, rule, ev)
			})
		}
	}
}

func (v *Validator) ruleFor(list string) (ValidationRule, bool) {
	for _, r := range v.rules {
		if ok, _ := path.Match(r.List, list); ok {
			return r, true
		}
	}
	return ValidationRule{}, false
}

// Results returns the last validation of every task validated so far.
func (v *Validator) Results() []Validation {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Validation, 0, len(v.results))
	for _, r := range v.results {
		out = append(out, r)
	}
	return out
}

func (v *Validator) validate(ctx context.Context, rule ValidationRule, ev tasks.Event) {
	timeout := rule.Timeout
	if timeout == 0 {
		timeout = defaultValidationTimeout
	}
	// A wake and a result are views of many tasks: the subject is capped.
	subject, _ := tasks.Shorten(ev.Task.Subject, tasks.MaxSubject)
	res := Validation{ListID: ev.ListID, TaskID: ev.TaskID, Subject: subject, Command: rule.Command, Started: v.clock()}
	res.Passed, res.ExitCode, res.Output = runCommand(ctx, rule.Command, rule.Dir, timeout)
	res.Took = v.clock().Sub(res.Started)
	if ctx.Err() != nil {
		return // shutting down: no verdict
	}
	v.mu.Lock()
	v.results[ev.ListID+"/"+ev.TaskID] = res
	v.mu.Unlock()
	v.log.Info("validation", "list", ev.ListID, "task", ev.TaskID, "passed", res.Passed, "exit", res.ExitCode, "took", res.Took)

	key := "validation_failed/" + ev.ListID + "/" + ev.TaskID
	if res.Passed {
		if err := v.wakes.Resolve(key, "the validation passed"); err != nil {
			v.log.Warn("resolve wake", "key", key, "err", err)
		}
		return
	}
	// A failure while one is still active is a new fact: end the old
	// condition so the new output is raised.
	if err := v.wakes.Resolve(key, "the validation failed again"); err != nil {
		v.log.Warn("resolve wake", "key", key, "err", err)
	}
	_, _, err := v.wakes.Raise(api.Wake{
		Reason:  api.ReasonValidationFailed,
		Key:     key,
		State:   "validation_failed",
		Details: res.Output,
		Evidence: api.Evidence{Source: "validation", Rule: rule.List,
			Lines: []string{fmt.Sprintf("%s exited %d in %s", rule.Command, res.ExitCode, res.Took.Round(time.Millisecond))}},
		SuggestedAction: fmt.Sprintf("Task %s (%q) of %s was marked completed but `%s` fails; read the output and send the agent back to fix it.",
			ev.TaskID, subject, ev.ListID, rule.Command),
	})
	if err != nil {
		v.log.Warn("raise wake", "key", key, "err", err)
	}
}

// runCommand runs command through sh -c in dir and reports whether it
// exited 0, its exit code (-1 when it did not finish) and the tail of its
// output. The whole process group is killed at the deadline, so test
// binaries started by the command do not outlive it.
func runCommand(ctx context.Context, command, dir string, timeout time.Duration) (bool, int, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &tailBuffer{max: validationOutputTail}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, 0, out.String()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return false, -1, out.String() + fmt.Sprintf("\n[system3: killed after %s, the validation timeout]", timeout)
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return false, exit.ExitCode(), out.String()
	default:
		return false, -1, out.String() + fmt.Sprintf("\n[system3: %v]", err)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(bytes.ToValidUTF8(t.buf, []byte("\uFFFD")))
	if t.lost {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:] // drop the partial first line
		}
		s = "[…]\n" + s
	}
	return s
}
