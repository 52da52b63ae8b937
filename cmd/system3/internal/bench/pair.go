package bench

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// pairRounds is how many pairs of slices tmuxAdded measures; each slice is
// a twelfth of the window, so the pairs take as long as the window.
const pairRounds = 6

// Paired is the tmux server process's own CPU (its agents not included),
// in percent of one core, on a workload as it runs, in slices taken in
// turns with a supervisor running and stopped: Added, the difference, is
// what the supervisor adds to the server. Both halves see the same
// workload at the same time, so what the workload itself makes the server
// spend, which moves by a point or more between phases a minute apart,
// cancels out.
type Paired struct {
	Running float64 `json:"running"`
	Stopped float64 `json:"stopped"`
	Added   float64 `json:"added"`
}

// tmuxAdded measures Paired for the supervisor target (a pid, or a
// process group as -pgid): 2*rounds slices of slice each, the supervisor
// running, stopped (SIGSTOP), stopped, running, and so on (ABBA, so that a
// steady drift of the workload weighs on both halves alike), the server's
// own CPU read from /proc over each. A stopped supervisor is continued
// whatever happens. What it does when continued (its first listing looks
// at everything that changed meanwhile) counts as running, so that catch-up
// makes the figure err high rather than low.
func tmuxAdded(ctx context.Context, serverPID, target, rounds int, slice time.Duration) (Paired, error) {
	var p Paired
	if rounds < 1 || slice <= 0 {
		return p, fmt.Errorf("paired slices: %d rounds of %v", rounds, slice)
	}
	defer func() { _ = syscall.Kill(target, syscall.SIGCONT) }()
	for i := range 2 * rounds {
		stop := i%4 == 1 || i%4 == 2
		sig := syscall.SIGCONT
		if stop {
			sig = syscall.SIGSTOP
		}
		if err := syscall.Kill(target, sig); err != nil {
			return p, fmt.Errorf("paired slices: signal %v to %d: %w", sig, target, err)
		}
		m, err := startCPU(serverPID)
		if err != nil {
			return p, err
		}
		if err := sleepCtx(ctx, slice); err != nil {
			return p, err
		}
		_, own, err := m.split()
		if err != nil {
			return p, err
		}
		if stop {
			p.Stopped += own / float64(rounds)
		} else {
			p.Running += own / float64(rounds)
		}
	}
	p.Added = p.Running - p.Stopped
	return p, nil
}

// pairTmux is tmuxAdded for the supervisor target on the workload w, over
// as long as the window.
func pairTmux(ctx context.Context, cfg Config, w *Workload, target int) (Paired, error) {
	pid, err := w.serverPID(ctx)
	if err != nil {
		return Paired{}, err
	}
	return tmuxAdded(ctx, pid, target, pairRounds, cfg.Window/(2*pairRounds))
}
