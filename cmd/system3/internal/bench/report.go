package bench

import (
	"fmt"
	"io"
	"strings"
)

// ratio formats a/b as "0.12×" (system3 over the baseline: below 1 is
// better for costs and latencies, above 1 for throughput).
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	r := a / b
	switch {
	case r < 0.01:
		return fmt.Sprintf("%.4f×", r)
	case r < 0.1:
		return fmt.Sprintf("%.3f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

func lat3(l Latencies) string {
	if l.N == 0 {
		return "none"
	}
	return fmt.Sprintf("%s / %s / %s", num(l.P50), num(l.P95), num(l.P99))
}

// num prints a figure with about three significant digits.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// WriteMarkdown writes the report as the tables of docs/performance.md.
func WriteMarkdown(w io.Writer, r *Report) {
	m := r.Machine
	busy := fmt.Sprintf("%.0f %% of panes busy", 100*r.Busy)
	if r.BusyPanes > 0 {
		busy = fmt.Sprintf("%d panes busy at every size", r.BusyPanes)
	}
	fmt.Fprintf(w, "Machine: %s, %d cores, %s, %s, tmux %s; load average before the run %s. Run took %s (window %s per size, %s, prompts every %s on average).\n\n",
		m.CPU, m.Cores, m.Memory, m.Go, strings.TrimPrefix(m.Tmux, "tmux "), m.Load, r.Duration, r.Window, busy, r.PromptEvery)

	writeAcceptance(w, r)
	fmt.Fprintln(w, "Detection latency, ms p50 / p95 / p99 (prompt drawn in a pane → wake in the caller's hands):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| panes (streaming / prompting / idle) | `system3 wait` | MCP `wait_for_wake` | journaled (store time) | baseline poll | p95 ratio (MCP / baseline) | prompts (missed: wait, MCP, baseline) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "| %d (%d / %d / %d) | %s | %s | %s | %s | %s | %d (%d, %d) / %d (%d) |\n",
			s.Panes, s.Streaming, s.Prompting, s.Idle, lat3(s.DetectWait), lat3(s.DetectMCP), lat3(s.DetectRaised), lat3(s.DetectBaseline),
			ratio(s.DetectMCP.P95, s.DetectBaseline.P95), s.Prompts.System3, s.MissedWait, s.MissedMCP, s.Prompts.Baseline, s.MissedBaseline)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Supervisor cost (system3: the `serve` process and every tmux client it runs or forks; baseline: the poller and every `tmux` it forks). CPU in % of one core:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| panes | CPU streaming: system3 / baseline (ratio) | CPU all idle: system3 / baseline (ratio) | tmux server CPU: system3 / baseline (ratio) | peak RSS MiB: system3 / baseline (ratio) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "| %d | %s / %s (%s) | %s / %s (%s) | %s / %s (%s) | %s / %s (%s) |\n", s.Panes,
			num(s.CPU.System3), num(s.CPU.Baseline), ratio(s.CPU.System3, s.CPU.Baseline),
			num(s.CPUIdle.System3), num(s.CPUIdle.Baseline), ratio(s.CPUIdle.System3, s.CPUIdle.Baseline),
			num(s.TmuxCPU.System3), num(s.TmuxCPU.Baseline), ratio(s.TmuxCPU.System3, s.TmuxCPU.Baseline),
			num(s.RSS.System3), num(s.RSS.Baseline), ratio(s.RSS.System3, s.RSS.Baseline))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "All it costs, streaming: the supervisor's CPU above, plus what it adds to the tmux server's own CPU (the server process alone, its agents not included), measured after the window on the same workload in slices with the supervisor running and stopped (SIGSTOP) in turns, so that what the workload makes the server spend cancels out. CPU in % of one core:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| panes | tmux server over the window: system3 / baseline | tmux server in the slices, supervisor running / stopped: system3; baseline | added: system3 / baseline | all it costs: system3 / baseline (ratio) |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, s := range r.Sizes {
		e, p := s.Extra(), s.TmuxPaired
		fmt.Fprintf(w, "| %d | %s / %s | %s / %s; %s / %s | %s / %s | %s / %s (%s) |\n", s.Panes,
			num(s.TmuxOwn.System3), num(s.TmuxOwn.Baseline),
			num(p.System3.Running), num(p.System3.Stopped), num(p.Baseline.Running), num(p.Baseline.Stopped),
			num(p.System3.Added), num(p.Baseline.Added), num(e.System3), num(e.Baseline), ratio(e.System3, e.Baseline))
	}
	fmt.Fprintln(w)
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "- %d panes, streaming: system3's %s %% is %s %% in the serve process with the tmux commands it forked and reaped, and %s %% in tmux clients still running.\n",
			s.Panes, num(s.CPU.System3), num(s.CPUServe), num(max(0, s.CPU.System3-s.CPUServe)))
	}
	for _, s := range r.Sizes {
		if s.NewSessionMS > 0 {
			fmt.Fprintf(w, "- %d panes: a session created while the workload ran was listed by serve %s ms after tmux created it.\n", s.Panes, num(s.NewSessionMS))
		}
	}
	for _, s := range r.Sizes {
		if s.RSSAfterLoad > 0 {
			fmt.Fprintf(w, "\nsystem3's peak RSS at %d panes after the MCP status load below too: %s MiB.\n", s.Panes, num(s.RSSAfterLoad))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "MCP `status` at %d panes (Streamable HTTP, one MCP session per client, the clients in the harness process); baseline: capture and classify every pane on request. Back to back: every client calls again as soon as it has its answer (throughput); paced: every client calls once every %s:\n\n", r.LoadPanes, r.StatusEvery)
	fmt.Fprintln(w, "| clients | back to back: system3 p50 / p99 ms, calls/s (serve CPU per call; above its work without calls) | baseline p50 / p99 ms, calls/s | p99 ratio | throughput ratio | paced: system3 p50 / p99 ms | baseline p50 / p99 ms | p99 ratio | errors |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, st := range r.Status {
		fmt.Fprintf(w, "| %d | %s / %s, %s (%s; %s ms) | %s / %s, %s | %s | %s | %s / %s | %s / %s | %s | %d / %d |\n", st.Clients,
			num(st.Latency.System3.P50), num(st.Latency.System3.P99), num(st.PerSec.System3), num(st.ServeCPUPerCall), num(st.ServeCPUPerCallNet),
			num(st.Latency.Baseline.P50), num(st.Latency.Baseline.P99), num(st.PerSec.Baseline),
			ratio(st.Latency.System3.P99, st.Latency.Baseline.P99), ratio(st.PerSec.System3, st.PerSec.Baseline),
			num(st.Paced.System3.P50), num(st.Paced.System3.P99), num(st.Paced.Baseline.P50), num(st.Paced.Baseline.P99),
			ratio(st.Paced.System3.P99, st.Paced.Baseline.P99),
			st.Errors.System3, st.Errors.Baseline)
	}
	if len(r.Status) > 0 {
		fmt.Fprintf(w, "\nserve without calls, on the same workload for as long just before the loads: %s %% of one core.\n", num(r.Status[0].ServeCPUWithoutCalls))
	}
	for _, s := range r.Sizes {
		if s.Error != "" {
			fmt.Fprintf(w, "\n%d panes: not measured in full: %s.\n", s.Panes, s.Error)
		}
	}
	g := r.Guidance
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Guidance: a %d-byte, %d-line message typed into an idle agent and verified, at %d panes (system3: MCP `inject_guidance`; baseline: forked paste-buffer and Enter, then a capture every 500 ms until the agent works):\n\n",
		g.System3.Bytes, strings.Count(guidanceMessage(), "\n")+1, r.LoadPanes)
	fmt.Fprintln(w, "| | p50 / p95 / p99 ms | verified |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	fmt.Fprintf(w, "| system3 | %s | %d of %d |\n", lat3(g.System3.Latency), g.System3.Verified, g.System3.Sent)
	fmt.Fprintf(w, "| baseline | %s | %d of %d |\n", lat3(g.Baseline.Latency), g.Baseline.Verified, g.Baseline.Sent)
	fmt.Fprintf(w, "| ratio (p95) | %s | |\n", ratio(g.System3.Latency.P95, g.Baseline.Latency.P95))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Classifier: a %d-line capture in %s ms, %s captures/s (one goroutine; the baseline uses the same rules: ratio 1).\n",
		r.Classify.Lines, num(r.Classify.MeanMS), num(r.Classify.PerSecond))
}

// writeAcceptance writes the acceptance figure: all system3 costs as a
// ratio to all the naive bash loop costs, with system3's idle CPU beside
// it. Nothing when the loop was not measured (--no-baseline).
func writeAcceptance(w io.Writer, r *Report) {
	measured := false
	for _, s := range r.Sizes {
		measured = measured || s.BashLoop.CPU > 0
	}
	if !measured {
		return
	}
	fmt.Fprintln(w, "All it costs, system3 / naive bash loop (the acceptance figure). The naive bash loop is `bash` running `tmux capture-pane -p -J` for every pane every 500 ms on the same streaming workload; \"all it costs\" is a supervisor's own CPU (its process tree: every `tmux` and `sleep` it forks included) plus what it adds to the tmux server's own CPU, measured with it running and stopped in turns. CPU in % of one core:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| panes | all it costs: system3 | naive bash loop: its CPU + what it adds to the tmux server = all it costs (passes over the panes a second) | all it costs, system3 / naive bash loop | system3 CPU all idle |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, s := range r.Sizes {
		if s.BashLoop.CPU <= 0 {
			fmt.Fprintf(w, "| %d | %s | not measured | n/a | %s |\n", s.Panes, num(s.AllItCosts.System3), num(s.CPUIdle.System3))
			continue
		}
		b := s.BashLoop
		fmt.Fprintf(w, "| %d | %s | %s + %s = %s (%s) | %s | %s |\n", s.Panes, num(s.AllItCosts.System3),
			num(b.CPU), num(max(0, b.TmuxPaired.Added)), num(b.AllItCosts), num(b.PassesPerSec),
			ratio(s.AllItCosts.System3, b.AllItCosts), num(s.CPUIdle.System3))
	}
	fmt.Fprintln(w)
}
