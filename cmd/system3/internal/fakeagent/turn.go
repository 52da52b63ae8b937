package fakeagent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

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
