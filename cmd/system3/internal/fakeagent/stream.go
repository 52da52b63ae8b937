package fakeagent

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The stream script is the benchmark's workload: an agent that never stops
// working and prints tool output at a steady rate, and, with
// Options.PromptEvery, stops at random moments on a permission prompt.

// streamLinesPerSecond is the output rate of a running command.
const streamLinesPerSecond = 20

// streamTail is how many output lines a running command shows, with a
// "… +N lines" line under them, as Claude Code shows a long Bash output.
const streamTail = 5

var streamCommands = []string{
	"go test -race ./...",
	"npm run build",
	"cargo build --release",
	"pytest -q tests/",
}

func runStream(ctx context.Context, a *agent) error {
	a.m.add(&block{kind: bPrompt, text: "Keep the build green: run the test suites and fix what fails"})
	a.work("")
	next := a.nextPrompt()
	for cmd := 0; ; cmd++ {
		b := a.m.add(&block{kind: bTool, text: "Bash(" + streamCommands[cmd%len(streamCommands)] + ")"})
		// Only the bottom of the history shows; keep the model small so
		// each frame costs the same however long the agent runs.
		if len(a.m.history) > 8 {
			a.m.history = a.m.history[len(a.m.history)-8:]
		}
		var tail []string
		lines := 200 + a.rng.IntN(200)
		for n := 1; n <= lines; n++ {
			tail = append(tail, fmt.Sprintf("step %d/%d ok: package internal/mod%02d built in %d ms", n, lines, a.rng.IntN(100), 5+a.rng.IntN(900)))
			if len(tail) > streamTail {
				tail = tail[1:]
			}
			b.output = append(b.output[:0], tail...)
			if n > streamTail {
				b.output = append(b.output, "… +"+strconv.Itoa(n-streamTail)+" lines (ctrl+o to expand)")
			}
			if err := a.pause(ctx, time.Second/streamLinesPerSecond); err != nil {
				return err
			}
			if !next.IsZero() && !a.now().Before(next) {
				if err := a.benchPrompt(ctx, cmd); err != nil {
					return err
				}
				a.work(a.m.spin.verb)
				next = a.nextPrompt()
			}
		}
	}
}

// nextPrompt is when the stream script next asks for permission: a
// uniformly random moment between half and one and a half PromptEvery
// from now (zero: never).
func (a *agent) nextPrompt() time.Time {
	d := a.opt.PromptEvery
	if d <= 0 {
		return time.Time{}
	}
	return a.now().Add(d/2 + time.Duration(a.rng.Int64N(int64(d)+1)))
}

// benchPrompt shows a permission prompt, records when it was drawn in
// Options.Marks, and waits for an answer or PromptHold, whichever comes
// first (then it carries on as if allowed).
func (a *agent) benchPrompt(ctx context.Context, n int) error {
	command := fmt.Sprintf("rm -rf build/cache-%d", n)
	a.m.add(&block{kind: bTool, text: "Clear the build cache", output: []string{"$ " + command}})
	a.m.mode = modePermission
	a.m.dialog = &dialog{title: "Bash command", desc: "Clear the build cache", command: command, options: []option{
		{label: "Yes"},
		{label: "Yes, and don’t ask again for: rm -rf build/*"},
		{label: "No"},
	}}
	defer func() { a.m.dialog, a.m.mode = nil, modeWorking }()
	start := time.Now()
	a.draw()
	if a.opt.Marks != nil {
		// One line per prompt: the Unix time in nanoseconds just before
		// its frame was written to the terminal.
		io.WriteString(a.opt.Marks, strconv.FormatInt(start.UnixNano(), 10)+"\n")
	}
	hold := a.opt.PromptHold
	if hold <= 0 {
		hold = 2 * time.Second
	}
	for {
		left := hold - time.Since(start)
		if left <= 0 {
			break
		}
		ev, err := a.wait(ctx, left)
		if err != nil {
			return err
		}
		if ev.kind == evChoice || ev.kind == evTimeout {
			break
		}
	}
	a.m.history = a.m.history[:len(a.m.history)-1]
	return nil
}
