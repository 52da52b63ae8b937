// Package fakeagent is a small terminal program that imitates Claude Code
// sessions: it draws the screens the real CLI draws (spinner, input box,
// permission and question dialogs, API error retries, a crash), follows a
// script, answers keys, and writes a Claude Code task list as it goes. The
// demo and the end-to-end tests run it in tmux panes, so system3's real
// rules classify it without an API key or a network.
package fakeagent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Options configure Run.
type Options struct {
	// Script names what the agent does (see Scripts).
	Script string
	// In delivers the keys typed in the terminal (raw mode). Run leaves a
	// goroutine reading it until it reports an error or EOF: close it after
	// Run returns when it is not the process's stdin.
	In  io.Reader
	Out io.Writer
	// Size reports the terminal's size; nil, or a zero answer, means 100x30.
	Size func() (width, height int)
	// Resized receives a value when the terminal changed size (SIGWINCH).
	Resized <-chan os.Signal
	// TasksDir and TaskList, both set, make the agent write its task list
	// to TasksDir/TaskList/<n>.json as Claude Code does.
	TasksDir, TaskList string
	// Dir is the working directory shown in the header ("" is the
	// process's).
	Dir string
	// Color draws with colours (as the real CLI does); off, plain text.
	Color bool
	// Now is the clock (time.Now when nil). Delays always use real timers.
	Now func() time.Time
	// PromptEvery makes the stream script show a permission prompt at
	// random moments, on average this often (0: never). Each prompt stays
	// until answered or PromptHold passes (default 2s).
	PromptEvery, PromptHold time.Duration
	// Marks receives one line per prompt the stream script draws: the
	// Unix time in nanoseconds just before the prompt was written.
	Marks io.Writer
	// Inputs receives one line per key, paste or submitted prompt the
	// agent reads, with what it was doing then ("idle paste 1873",
	// "question rune", "working submit 40"), so a test can tell what
	// reached it while it was not at its prompt.
	Inputs io.Writer
}

// CrashError is returned by Run when the script crashed on purpose; its
// stack trace is already on the screen, and the program should exit 1.
type CrashError struct{ Msg string }

func (e *CrashError) Error() string { return e.Msg }

// Script is a scenario the fake agent can play.
type Script struct {
	Name    string
	Summary string
}

// Scripts lists the scenarios, in a stable order.
func Scripts() []Script {
	out := make([]Script, 0, len(scripts))
	for _, name := range scriptOrder {
		out = append(out, Script{Name: name, Summary: scripts[name].summary})
	}
	return out
}

// Errors that end a turn early.
var (
	errInterrupted = errors.New("interrupted")
	errExit        = errors.New("exit requested")
)

// tickEvery is how often a spinner or a countdown is redrawn. Nothing is
// redrawn while the agent waits for a person.
const tickEvery = 200 * time.Millisecond

// agent runs one script on one terminal. Everything happens on the
// goroutine that calls Run; a second goroutine only reads keys.
type agent struct {
	opt   Options
	now   func() time.Time
	out   *bufio.Writer
	keys  chan []byte
	keysP keyParser
	w, h  int
	prev  []string // rows drawn last; nil redraws everything
	m     model
	list  *taskList
	rng   *rand.Rand
	// queued holds prompts typed while the agent was working.
	queued []string
	// listErr remembers that the task list could not be written, so the
	// agent carries on without it rather than failing again every step.
	listErr error
}

// Run plays the script until ctx ends (nil), the person quits the agent
// (nil), or the script crashes (*CrashError).
func Run(ctx context.Context, opt Options) error {
	s, ok := scripts[opt.Script]
	if !ok {
		return fmt.Errorf("unknown script %q (one of %s)", opt.Script, strings.Join(scriptOrder, ", "))
	}
	if (opt.TasksDir == "") != (opt.TaskList == "") {
		return errors.New("--tasks-dir and --task-list go together")
	}
	a := &agent{opt: opt, now: opt.Now, keys: make(chan []byte, 16)}
	if a.now == nil {
		a.now = time.Now
	}
	seed := uint64(time.Now().UnixNano())
	a.rng = rand.New(rand.NewPCG(seed, seed>>7))
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	a.out = bufio.NewWriterSize(opt.Out, 16<<10)
	if opt.TaskList != "" {
		l, err := openTaskList(opt.TasksDir, opt.TaskList)
		if err != nil {
			return err
		}
		a.list = l
	}
	dir := opt.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		if rel, err := filepath.Rel(home, dir); err == nil && !strings.HasPrefix(rel, "..") {
			dir = filepath.Join("~", rel)
		}
	}
	a.m = model{title: "Claude Code v2.1.330 · system3 fake agent", subtitle: "scripted demo · no model, no network", dir: dir}
	a.resize()

	done := make(chan struct{})
	defer close(done)
	if opt.In != nil {
		go readKeys(opt.In, a.keys, done)
	}
	a.out.WriteString("\x1b[?25l\x1b[?2004h") // hide the cursor, bracketed paste
	err := a.play(ctx, s)
	exited := errors.Is(err, errExit)
	if exited || ctx.Err() != nil {
		err = nil
	}
	a.leave()
	if exited {
		// Claude Code clears its UI and says how to come back. (The
		// blank first line is for tmux: when it keeps a dead pane, it
		// scrolls the screen up a line to say so.)
		fmt.Fprintf(a.out, "\x1b[H\x1b[2J\r\nResume this session with:\r\nclaude --resume %s\r\n", a.sessionID())
	}
	if c := (*CrashError)(nil); errors.As(err, &c) {
		a.out.WriteString(strings.ReplaceAll(crashTrace, "\n", "\r\n"))
	}
	if ferr := a.out.Flush(); err == nil && ferr != nil && ctx.Err() == nil {
		err = ferr
	}
	return err
}

// sessionID is a made-up Claude Code session id.
func (a *agent) sessionID() string {
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a.rng.Uint32(), a.rng.Uint32()&0xffff, a.rng.Uint32()&0xfff,
		0x8000|a.rng.Uint32()&0x3fff, a.rng.Uint64()&0xffffffffffff)
}

// readKeys forwards what the terminal sends until it fails or Run ends.
func readKeys(in io.Reader, keys chan<- []byte, done <-chan struct{}) {
	defer close(keys)
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			select {
			case keys <- slices.Clone(buf[:n]):
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// leave puts the cursor under what was drawn and gives the terminal back.
func (a *agent) leave() {
	rows, _, _ := a.m.render(a.w, a.h, a.now())
	last := 0
	for i, r := range rows {
		if strings.TrimSpace(r.plain) != "" {
			last = i + 1
		}
	}
	fmt.Fprintf(a.out, "\x1b[?2004l\x1b[?25h\x1b[%d;1H", min(last+1, a.h))
	if last >= a.h {
		a.out.WriteString("\r\n")
	}
}

func (a *agent) resize() {
	w, h := 0, 0
	if a.opt.Size != nil {
		w, h = a.opt.Size()
	}
	if w <= 0 || h <= 0 {
		w, h = 100, 30
	}
	a.w, a.h = w, h
	a.prev = nil
}

// draw writes the rows that changed since the last frame.
func (a *agent) draw() {
	rows, crow, ccol := a.m.render(a.w, a.h, a.now())
	if a.prev == nil {
		a.out.WriteString("\x1b[H\x1b[2J")
		a.prev = make([]string, a.h)
	}
	for i := range a.h {
		var l line
		if i < len(rows) {
			l = rows[i]
		}
		s := l.plain
		if a.opt.Color {
			s = l.styled
		}
		if a.prev[i] == s {
			continue
		}
		a.prev[i] = s
		fmt.Fprintf(a.out, "\x1b[%d;1H%s", i+1, s)
		// A full-width row leaves the cursor on its last cell: erasing
		// from there would erase that cell.
		if width(l.plain) < a.w {
			a.out.WriteString("\x1b[K")
		}
	}
	if crow >= 0 {
		fmt.Fprintf(a.out, "\x1b[%d;%dH", crow+1, ccol+1)
	} else {
		fmt.Fprintf(a.out, "\x1b[%d;1H", min(len(rows), a.h))
	}
	a.out.Flush()
}

type eventKind int

const (
	evTimeout   eventKind = iota
	evSubmit              // a prompt was submitted (text)
	evInterrupt           // Escape or Ctrl-C while working
	evChoice              // a dialog option was chosen (choice; -1 cancelled)
	evAnswer              // free text typed into a question (text)
	evExit                // Ctrl-C twice at an empty prompt
)

type event struct {
	kind   eventKind
	text   string
	choice int
}

// wait redraws, then waits up to d (forever when d <= 0) for the first
// event the current mode produces, animating the spinner meanwhile.
func (a *agent) wait(ctx context.Context, d time.Duration) (event, error) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if a.m.mode == modeWorking || a.m.mode == modeRetrying {
		t := time.NewTicker(tickEvery)
		defer t.Stop()
		tick = t.C
	}
	a.draw()
	for {
		// A footer note ("Press Ctrl-C again to exit") goes away by itself.
		var noteGone <-chan time.Time
		if a.m.footerNote != "" {
			left := a.m.footerUntil.Sub(a.now())
			if left <= 0 {
				a.m.footerNote = ""
				a.draw()
			} else {
				noteGone = time.After(left)
			}
		}
		select {
		case <-ctx.Done():
			return event{}, ctx.Err()
		case <-timeout:
			return event{kind: evTimeout}, nil
		case <-tick:
			a.m.spin.frame++
			if a.m.mode == modeWorking {
				a.m.spin.tokens += 3 + a.rng.IntN(14)
			}
		case <-noteGone:
		case <-a.opt.Resized:
			a.resize()
		case b, ok := <-a.keys:
			if !ok {
				a.keys = nil // no more input; the script plays on
				continue
			}
			for _, k := range a.keysP.parse(b) {
				if ev, ok := a.key(k); ok {
					a.draw()
					return ev, nil
				}
			}
		}
		a.draw()
	}
}

// key applies one key to the current mode and reports an event it causes.
func (a *agent) key(k key) (event, bool) {
	mode := a.m.mode
	ev, ok := a.applyKey(k)
	if a.opt.Inputs != nil {
		line := mode.String() + " " + k.kind.String()
		if k.kind == kPaste {
			line += " " + strconv.Itoa(len(k.text))
		}
		if ok && ev.kind == evSubmit {
			line += "\n" + mode.String() + " submit " + strconv.Itoa(len(ev.text))
		}
		io.WriteString(a.opt.Inputs, line+"\n")
	}
	return ev, ok
}

func (a *agent) applyKey(k key) (event, bool) {
	m := &a.m
	switch m.mode {
	case modePermission:
		return a.dialogKey(k, false)
	case modeQuestion:
		return a.dialogKey(k, true)
	case modeGone:
		return event{}, false
	}
	working := m.mode == modeWorking || m.mode == modeRetrying
	switch k.kind {
	case kRune:
		m.input = append(m.input, k.r)
	case kPaste:
		text := strings.ReplaceAll(k.text, "\r\n", "\n")
		text = strings.ReplaceAll(text, "\r", "\n")
		if n := strings.Count(text, "\n"); n > 0 || utf8.RuneCountInString(text) > 800 {
			m.pastes++
			m.input = append(m.input, []rune(fmt.Sprintf("[Pasted text #%d +%d lines]", m.pastes, n))...)
			m.pasted = append(m.pasted, pasted{marker: fmt.Sprintf("[Pasted text #%d +%d lines]", m.pastes, n), text: text})
		} else {
			m.input = append(m.input, []rune(text)...)
		}
	case kBackspace:
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case kCtrlU:
		m.input = nil
	case kEnter:
		text := strings.TrimSpace(string(m.input))
		if text == "" {
			return event{}, false
		}
		for _, p := range m.pasted {
			text = strings.Replace(text, p.marker, p.text, 1)
		}
		m.input, m.pasted = nil, nil
		return event{kind: evSubmit, text: text}, true
	case kEsc:
		if working {
			return event{kind: evInterrupt}, true
		}
		m.input, m.pasted = nil, nil
	case kCtrlC, kCtrlD:
		switch {
		case working:
			return event{kind: evInterrupt}, true
		case len(m.input) > 0:
			m.input, m.pasted = nil, nil
		case m.footerNote != "" && a.now().Before(m.footerUntil):
			return event{kind: evExit}, true
		default:
			name := "Ctrl-C"
			if k.kind == kCtrlD {
				name = "Ctrl-D"
			}
			m.footerNote, m.footerUntil = "Press "+name+" again to exit", a.now().Add(2*time.Second)
		}
	}
	return event{}, false
}

// dialogKey handles keys in a permission dialog or a question: a digit
// picks an option at once, arrows move, Enter picks the highlighted one,
// Escape cancels.
func (a *agent) dialogKey(k key, question bool) (event, bool) {
	d := a.m.dialog
	n := len(d.options)
	typeOpt := n - 2 // "Type something." in questions
	if d.typing {
		switch k.kind {
		case kRune:
			d.typed = append(d.typed, k.r)
		case kPaste:
			d.typed = append(d.typed, []rune(strings.ReplaceAll(k.text, "\n", " "))...)
		case kBackspace:
			if len(d.typed) > 0 {
				d.typed = d.typed[:len(d.typed)-1]
			}
		case kEnter:
			if t := strings.TrimSpace(string(d.typed)); t != "" {
				return event{kind: evAnswer, text: t}, true
			}
		case kEsc, kCtrlC:
			d.typing, d.typed = false, nil
		case kUp, kDown:
			d.typing, d.typed = false, nil
			return a.dialogKey(k, question)
		}
		return event{}, false
	}
	pick := func(i int) (event, bool) {
		if question && i == typeOpt {
			d.cursor, d.typing = i, true
			return event{}, false
		}
		return event{kind: evChoice, choice: i}, true
	}
	switch k.kind {
	case kRune:
		if k.r >= '1' && k.r <= '9' && int(k.r-'1') < n {
			return pick(int(k.r - '1'))
		}
	case kUp:
		d.cursor = (d.cursor + n - 1) % n
	case kDown, kTab:
		d.cursor = (d.cursor + 1) % n
	case kEnter:
		return pick(d.cursor)
	case kEsc, kCtrlC:
		return event{kind: evChoice, choice: -1}, true
	}
	return event{}, false
}

// pause lets time pass while the agent works. A prompt typed meanwhile is
// queued (shown in the conversation, answered by the script later);
// Escape interrupts the turn.
func (a *agent) pause(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		ev, err := a.wait(ctx, left)
		if err != nil {
			return err
		}
		switch ev.kind {
		case evInterrupt:
			return errInterrupted
		case evSubmit:
			a.m.add(&block{kind: bPrompt, text: ev.text})
			a.queued = append(a.queued, ev.text)
		case evTimeout:
			return nil
		}
	}
}

// jitter returns d give or take a third, so agents do not move in step.
func (a *agent) jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	third := int64(d) / 3
	return time.Duration(int64(d) - third + a.rng.Int64N(2*third+1))
}

// work shows the spinner with a verb (an in-progress task's activeForm,
// or a whimsical one).
func (a *agent) work(verb string) {
	if a.m.mode != modeWorking {
		a.m.spin = spinner{start: a.now(), frame: a.rng.IntN(len(spinnerGlyphs))}
	}
	if verb == "" {
		verb = a.activeForm()
	}
	if verb == "" {
		verb = workingVerbs[a.rng.IntN(len(workingVerbs))]
	}
	a.m.spin.verb = verb
	a.m.spin.tip = tips[a.rng.IntN(len(tips))]
	a.m.mode = modeWorking
}

func (a *agent) activeForm() string {
	if a.list == nil {
		return ""
	}
	for _, t := range a.list.tasks {
		if t.Status == statusInProgress {
			return t.ActiveForm
		}
	}
	return ""
}

// say streams assistant text a few words at a time.
func (a *agent) say(ctx context.Context, text string) error {
	a.work(a.m.spin.verb)
	b := a.m.add(&block{kind: bSay})
	words := strings.Fields(text)
	for i := 0; i < len(words); {
		n := min(2+a.rng.IntN(5), len(words)-i)
		if b.text != "" {
			b.text += " "
		}
		b.text += strings.Join(words[i:i+n], " ")
		i += n
		if err := a.pause(ctx, a.jitter(140*time.Millisecond)); err != nil {
			return err
		}
	}
	return nil
}

// tool shows a tool call, then its output line by line.
func (a *agent) tool(ctx context.Context, title string, think time.Duration, output ...string) error {
	a.work(a.m.spin.verb)
	if err := a.pause(ctx, a.jitter(think)); err != nil {
		return err
	}
	b := a.m.add(&block{kind: bTool, text: title, output: []string{"Running…"}})
	for i, o := range output {
		if err := a.pause(ctx, a.jitter(450*time.Millisecond)); err != nil {
			return err
		}
		if i == 0 {
			b.output = b.output[:0]
		}
		b.output = append(b.output, o)
	}
	if len(output) == 0 {
		b.output = nil
	}
	return a.pause(ctx, a.jitter(300*time.Millisecond))
}

// finish ends a turn: "✻ Worked for 23s · done 5:33 AM", then the idle box.
func (a *agent) finish(start time.Time) {
	verb := doneVerbs[a.rng.IntN(len(doneVerbs))]
	a.m.add(&block{kind: bDone, text: fmt.Sprintf("%s for %s · done %s", verb, elapsed(a.now().Sub(start)), a.now().Format("3:04 PM"))})
	a.m.mode, a.m.panel = modeIdle, true
}

// interrupted ends a turn the person stopped.
func (a *agent) interrupted() {
	a.m.add(&block{kind: bInterrupted, attached: true})
	a.m.mode, a.m.panel, a.m.dialog = modeIdle, false, nil
}

// idle waits at the input box for a prompt. With after > 0 it gives up
// after that long and returns "".
func (a *agent) idle(ctx context.Context, after time.Duration) (string, error) {
	a.m.mode, a.m.dialog = modeIdle, nil
	if len(a.queued) > 0 {
		p := a.queued[0]
		a.queued = a.queued[1:]
		return p, nil
	}
	deadline := time.Now().Add(after)
	for {
		d := time.Duration(0)
		if after > 0 {
			if d = time.Until(deadline); d <= 0 {
				return "", nil
			}
		}
		ev, err := a.wait(ctx, d)
		if err != nil {
			return "", err
		}
		switch ev.kind {
		case evSubmit:
			a.m.placeholder = ""
			a.m.add(&block{kind: bPrompt, text: ev.text})
			return ev.text, nil
		case evExit:
			return "", errExit
		case evTimeout:
			return "", nil
		}
	}
}

// permission shows a Bash permission dialog and returns the option index
// chosen: 0 yes, 1 yes and don't ask again, 2 no (or Escape).
func (a *agent) permission(ctx context.Context, desc, command, dontAsk string) (int, error) {
	a.m.add(&block{kind: bTool, text: desc, output: []string{"$ " + command}})
	a.m.mode = modePermission
	a.m.dialog = &dialog{title: "Bash command", desc: desc, command: command, options: []option{
		{label: "Yes"},
		{label: "Yes, and don’t ask again for: " + dontAsk},
		{label: "No"},
	}}
	defer func() { a.m.dialog = nil }()
	for {
		ev, err := a.wait(ctx, 0)
		if err != nil {
			return 0, err
		}
		if ev.kind != evChoice {
			continue
		}
		// The pending call ("● desc / ⎿ $ command") becomes the call that
		// ran, or the one that did not.
		a.m.history = a.m.history[:len(a.m.history)-1]
		if ev.choice == 0 || ev.choice == 1 {
			return ev.choice, nil
		}
		a.m.add(&block{kind: bDidNotRun, text: "$ " + command})
		return 2, nil
	}
}

// question asks a multiple-choice question. It returns the answer (an
// option's label or typed text), or "" when the person declined.
func (a *agent) question(ctx context.Context, header, q string, opts []option) (string, error) {
	all := append(slices.Clone(opts), option{label: "Type something."}, option{label: "Chat about this"})
	a.m.mode = modeQuestion
	a.m.dialog = &dialog{header: header, question: q, options: all}
	defer func() { a.m.dialog = nil }()
	for {
		ev, err := a.wait(ctx, 0)
		if err != nil {
			return "", err
		}
		switch {
		case ev.kind == evAnswer:
			return ev.text, nil
		case ev.kind == evChoice && ev.choice >= 0 && ev.choice < len(opts):
			return opts[ev.choice].label, nil
		case ev.kind == evChoice:
			return "", nil // Escape or "Chat about this"
		}
	}
}

// retrying shows one API retry countdown, then the retry in flight.
func (a *agent) retrying(ctx context.Context, errText string, attempt, maxAttempts int, delay time.Duration) error {
	a.m.mode = modeRetrying
	a.m.retry = retry{err: errText, attempt: attempt, max: maxAttempts, until: a.now().Add(delay)}
	if err := a.pause(ctx, delay); err != nil {
		return err
	}
	a.m.retry.inFlight = true
	return a.pause(ctx, a.jitter(700*time.Millisecond))
}

// setTask changes a task's status in the file and on screen.
func (a *agent) setTask(id, status string) {
	if a.list == nil {
		return
	}
	if err := a.list.set(id, status); err != nil && a.listErr == nil {
		a.listErr = err
	}
	a.syncTasks()
	if status == statusInProgress && a.m.mode == modeWorking {
		a.m.spin.verb = a.activeForm()
	}
}

// createTasks writes a plan as pending tasks.
func (a *agent) createTasks(plan []plannedTask) {
	if a.list == nil {
		return
	}
	for _, t := range plan {
		if _, err := a.list.create(t.subject, t.description, t.activeForm); err != nil && a.listErr == nil {
			a.listErr = err
		}
	}
	a.syncTasks()
}

func (a *agent) syncTasks() {
	a.m.tasks = a.m.tasks[:0]
	for _, t := range a.list.tasks {
		a.m.tasks = append(a.m.tasks, taskView{subject: t.Subject, status: t.Status})
	}
}

// taskStatus is a task's status, "" without a list.
func (a *agent) taskStatus(id string) string {
	if a.list == nil {
		return ""
	}
	for _, t := range a.list.tasks {
		if t.ID == id {
			return t.Status
		}
	}
	return ""
}
