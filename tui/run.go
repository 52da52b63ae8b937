package tui

import (
	"context"
	"errors"
	"io"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"

	"github.com/system3-dev/system3/internal/facade"
)

// frameRate is how often, at most, Bubble Tea draws a changed frame. Its
// renderer wakes at this rate even when nothing changed, and at its
// default of 60 those wakings alone cost an idle dashboard about 1% of a
// core on a 2-core machine (docs/performance.md, "The dashboard: pushed,
// not polled"); 20 draws a key press within 50 ms.
const frameRate = 20

// Run shows the dashboard for svc on out, reading keys from in, in the
// alternate screen, until the operator quits (q or ctrl+c) or ctx ends;
// either way it returns nil. in and out are usually os.Stdin and
// os.Stdout; a terminal is put in raw mode for the run.
func Run(ctx context.Context, svc facade.Service, opts Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := lockOutput(out)
	if opts.Bell && opts.BellOut == nil {
		opts.BellOut = w
	}
	opts = opts.withDefaults()
	st := newStyles(rendererFor(out, opts.NoColor), opts.NoColor)
	m := newModel(ctx, svc, opts, st)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(w), tea.WithAltScreen(), tea.WithFPS(frameRate))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil || errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}

// lockOutput serialises writes to out, so the bell, written from a
// command, never lands inside a frame the renderer is writing. A terminal
// stays a terminal (Bubble Tea reads its size through Fd).
func lockOutput(out io.Writer) io.Writer {
	lw := &lockedWriter{w: out}
	if f, ok := out.(term.File); ok {
		return &lockedFile{lockedWriter: lw, f: f}
	}
	return lw
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lockedFile is a lockedWriter over a terminal file.
type lockedFile struct {
	*lockedWriter
	f term.File
}

func (l *lockedFile) Read(p []byte) (int, error) { return l.f.Read(p) }
func (l *lockedFile) Close() error               { return l.f.Close() }
func (l *lockedFile) Fd() uintptr                { return l.f.Fd() }
