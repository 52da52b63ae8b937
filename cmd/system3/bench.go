package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/system3-dev/system3/cmd/system3/internal/bench"
	"github.com/system3-dev/system3/tmux"
)

func newBenchCmd(a *app) *cobra.Command {
	var (
		cfg      bench.Config
		jsonPath string
		exe      string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure system3 against naive polling baselines (for docs/performance.md)",
		Long: `Run the performance harness: for each number of panes, start a private tmux
server with fake agents (by default a quarter printing 20 lines a second, a
quarter doing the same and stopping on a permission prompt at random
moments, half idle at their prompt; --busy sets the share that prints),
run system3 serve on it as a separate process with a private state dir and
MCP port, and measure:

  - detection latency: prompt drawn in a pane → the wake printed by a
    system3 wait and returned by an MCP wait_for_wake caller (p50/p95/p99);
  - CPU (user+system of serve and the tmux clients it forks) with the
    workload running and with every pane idle, and peak RSS (VmHWM);
  - what it adds to the tmux server's own CPU: after the window, the
    server's CPU in slices with serve running and stopped (SIGSTOP) in
    turns, on the same workload;
  - MCP status latency and throughput with 1, 10 and 100 concurrent clients
    calling back to back, and latency with each calling once a second
    (--status-every), and a verified 4 KB guidance message (at --load-panes
    panes);
  - classifier throughput on a 2,000-line capture.

Then the same workload under a naive baseline, a separate process that
forks tmux capture-pane for every pane every 500 ms and classifies with the
same rules, and every figure as a ratio to it; and under a naive bash
loop, a bash script that every 500 ms runs tmux capture-pane -p -J for
every pane and nothing else, whose CPU (bash and every tmux it forks)
plus what it adds to the tmux server is measured the same way. The report
leads with the acceptance figure: all system3 costs (its CPU plus what it
adds to the tmux server) as a ratio to all the bash loop costs.
--no-baseline skips both baselines.

It never touches your tmux server, state dir or ~/.claude. Linux only (it
reads /proc). The defaults take about 9 minutes on a 2-core machine; see
docs/performance.md.`,
		Example: `  system3 bench
  system3 bench --panes 50 --window 20s --json bench.json
  system3 bench --panes 4 --window 5s --clients 1,4 --guidance 2 --no-baseline`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{skipSetup: "true", allCores: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if exe == "" {
				var err error
				if exe, err = os.Executable(); err != nil {
					return fmt.Errorf("find the system3 executable: %w", err)
				}
			}
			if cfg.Busy <= 0 || cfg.Busy > 1 {
				return fmt.Errorf("--busy %v is out of range: give a share between 0 and 1, like 0.5", cfg.Busy)
			}
			for _, n := range cfg.Panes {
				if n < 4 {
					return fmt.Errorf("--panes %d is too few: use 4 or more, so that every role (streaming, prompting, idle) has a pane", n)
				}
			}
			cfg.Exe = exe
			cfg.Log = a.Stderr
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := bench.Run(ctx, cfg)
			if r == nil {
				return err
			}
			if jsonPath != "" {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
					return fmt.Errorf("write the report: %w", err)
				}
			}
			bench.WriteMarkdown(a.stdout, r)
			if err != nil {
				return fmt.Errorf("the report above is incomplete: %w", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&cfg.Panes, "panes", []int{10, 50, 200}, "numbers of panes to measure")
	f.DurationVar(&cfg.Window, "window", 30*time.Second, "how long CPU and detection are measured at each size (idle CPU: half as long)")
	f.Float64Var(&cfg.Busy, "busy", 0.5, "share of the panes printing output (half of them also prompting); the rest are idle")
	f.IntVar(&cfg.BusyPanes, "busy-panes", 0, "number of panes printing output at every size, in place of --busy (the same load beside more idle agents)")
	f.DurationVar(&cfg.PromptEvery, "prompt-every", 4*time.Second, "how often, on average, a prompting agent asks for permission")
	f.IntVar(&cfg.LoadPanes, "load-panes", 0, "the size at which MCP status and guidance are measured (default 50 when measured, else the first size)")
	f.IntSliceVar(&cfg.Clients, "clients", []int{1, 10, 100}, "numbers of concurrent MCP status clients")
	f.DurationVar(&cfg.StatusFor, "status-for", 5*time.Second, "how long each status load runs")
	f.DurationVar(&cfg.StatusEvery, "status-every", time.Second, "the paced status load: each client calls once this often")
	f.IntVar(&cfg.Guidance, "guidance", 10, "how many 4 KB guidance messages to deliver")
	f.BoolVar(&cfg.NoBaseline, "no-baseline", false, "skip the naive baselines (the polling process and the bash loop)")
	f.StringVar(&jsonPath, "json", "", "also write the full report as JSON to this file")
	f.StringVar(&exe, "exe", "", "the system3 binary to measure (default: this one)")
	cmd.AddCommand(newBenchPollCmd(a))
	return cmd
}

// newBenchPollCmd is the baseline poller bench runs as its own process.
func newBenchPollCmd(a *app) *cobra.Command {
	var (
		socket string
		every  time.Duration
	)
	cmd := &cobra.Command{
		Use:    "poll --server SOCKET",
		Short:  "The naive baseline: capture every pane with a forked tmux every 500 ms",
		Hidden: true,
		Long: `Poll a tmux server the way peer tools do: every --interval, list the panes
and fork one tmux capture-pane per pane, classify each capture with
system3's rules, and print a JSON line for every pane whose state changed.
system3 bench runs it as the baseline; it is not how system3 works.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{skipSetup: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" {
				return errors.New("--server is required: the tmux socket path to poll")
			}
			if every <= 0 {
				return fmt.Errorf("--interval %v must be positive, like 500ms", every)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return bench.Poll(ctx, tmux.Server{Path: socket}, every, a.stdout)
		},
	}
	cmd.Flags().StringVar(&socket, "server", "", "tmux server socket path (as for tmux -S)")
	cmd.Flags().DurationVar(&every, "interval", bench.PollEvery, "how often to poll")
	return cmd
}
