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
	"strings"
	"time"
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
