package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarize(ds)
	want := Latencies{N: 100, P50: 50, P95: 95, P99: 99, Max: 100}
	if got != want {
		t.Fatalf("summarize = %+v, want %+v", got, want)
	}
	if got := summarize([]time.Duration{7 * time.Millisecond}); got != (Latencies{N: 1, P50: 7, P95: 7, P99: 7, Max: 7}) {
		t.Fatalf("one sample: %+v", got)
	}
	if got := summarize(nil); got != (Latencies{}) {
		t.Fatalf("no samples: %+v", got)
	}
}

func TestGuidanceMessageIs4KMultiLine(t *testing.T) {
	m := guidanceMessage()
	if len(m) != 4096 || strings.Count(m, "\n") < 40 || strings.HasSuffix(m, "\n") {
		t.Fatalf("message: %d bytes, %d newlines", len(m), strings.Count(m, "\n"))
	}
}

func TestClassifyBigCapture(t *testing.T) {
	if n := strings.Count(bigCapture(2000), "\n") + 1; n != 2000 {
		t.Fatalf("capture has %d lines", n)
	}
	c, err := classify(2000, 50*time.Millisecond)
	if err != nil || c.PerSecond <= 0 || c.MeanMS <= 0 {
		t.Fatalf("classify = %+v, %v", c, err)
	}
}

func TestProcReadsThisProcess(t *testing.T) {
	busy := time.Now()
	for time.Since(busy) < 30*time.Millisecond {
	}
	cpu, err := treeCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("treeCPU = %v, %v", cpu, err)
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("peakRSS = %v, %v", rss, err)
	}
	st, err := readStat(os.Getpid())
	if err != nil || st.ppid != os.Getppid() {
		t.Fatalf("readStat = %+v, %v; ppid want %d", st, err, os.Getppid())
	}
}

// TestDetectionsMatchPrompts: each prompt in the window takes its first
// arrival; prompts outside it are ignored, prompts without one missed.
func TestDetectionsMatchPrompts(t *testing.T) {
	dir := t.TempDir()
	base := time.Unix(1_700_000_000, 0)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	marks := filepath.Join(dir, "p")
	var b strings.Builder
	for _, ms := range []int{0, 5000, 10000, 20000} {
		b.WriteString(strconv.FormatInt(at(ms).UnixNano(), 10) + "\n")
	}
	if err := os.WriteFile(marks, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &Workload{Panes: []Pane{{Session: "bench-prompt-003", Role: RolePrompt, Marks: marks}}}
	arr := []arrival{
		{session: "bench-prompt-003", at: at(60), raised: at(40)},     // before the window
		{session: "bench-prompt-003", at: at(5080), raised: at(5050)}, // prompt 2
		{session: "bench-prompt-003", at: at(5090)},                   // a later arrival of the same
		{session: "bench-other", at: at(5085)},                        // not a prompting pane
		// prompt 3 (10000) never arrives
		{session: "bench-prompt-003", at: at(20120), raised: at(20100)}, // after the window
	}
	lat, raised, prompts, missed := detectionsOf(w, at(1000), at(15000), arr)
	if prompts != 2 || missed != 1 || len(lat) != 1 || lat[0] != 80*time.Millisecond || len(raised) != 1 || raised[0] != 50*time.Millisecond {
		t.Fatalf("lat %v raised %v prompts %d missed %d", lat, raised, prompts, missed)
	}
}

func TestRatio(t *testing.T) {
	for _, tt := range []struct {
		a, b float64
		want string
	}{{1, 2, "0.50×"}, {1, 0, "n/a"}, {0.5, 100, "0.0050×"}, {5, 100, "0.050×"}, {30, 2, "15.00×"}} {
		if got := ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestRoles(t *testing.T) {
	count := func(n int, busy float64) map[Role]int {
		m := map[Role]int{}
		for i := range n {
			m[roleOf(i, busy)]++
		}
		return m
	}
	for _, tt := range []struct {
		n                    int
		busy                 float64
		stream, prompt, idle int
	}{
		{4, 0.5, 1, 1, 2},
		{50, 0.5, 13, 12, 25},
		{200, 0.5, 50, 50, 100},
		{200, 0.125, 13, 12, 175},
		{10, 0, 0, 0, 10},
		{8, 1, 4, 4, 0},
	} {
		got := count(tt.n, tt.busy)
		if got[RoleStream] != tt.stream || got[RolePrompt] != tt.prompt || got[RoleIdle] != tt.idle {
			t.Errorf("%d panes, busy %v: %v; want %d stream, %d prompt, %d idle", tt.n, tt.busy, got, tt.stream, tt.prompt, tt.idle)
		}
	}
}

// The window starts only once serve's log says it watches every session.
func TestWaitWatching(t *testing.T) {
	dir := t.TempDir()
	s := &serveProc{stateDir: dir}
	w := &Workload{Panes: make([]Pane, 3)}
	log := filepath.Join(dir, "system3.log")
	write := func(sessions int) {
		line := `time=2026-11-21T08:55:02.533Z level=INFO msg="tmux: watching" tmux="tmux server -S /tmp/x/tmux.sock" sessions=` + strconv.Itoa(sessions) + "\n"
		if err := os.WriteFile(log, []byte("time=2026-11-21T08:55:00Z level=INFO msg=\"monitors started\"\n"+line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := s.waitWatching(ctx, w, 300*time.Millisecond); err == nil {
		t.Fatal("no log: waitWatching returned nil")
	}
	write(2)
	if err := s.waitWatching(ctx, w, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "all 3 sessions") {
		t.Fatalf("2 of 3 sessions watched: err = %v", err)
	}
	write(3)
	if err := s.waitWatching(ctx, w, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestBusyPanes: --busy-panes keeps the same number of busy panes at every
// size (all of them at a smaller one), and --busy is a share otherwise.
func TestBusyPanes(t *testing.T) {
	count := func(cfg Config, n int) int {
		busy := 0
		for i := range n {
			if roleOf(i, cfg.busyAt(n)) != RoleIdle {
				busy++
			}
		}
		return busy
	}
	for _, c := range []struct {
		cfg  Config
		n    int
		want int
	}{
		{Config{Busy: 0.625, BusyPanes: 25}, 40, 25},
		{Config{Busy: 0.625, BusyPanes: 25}, 200, 25},
		{Config{Busy: 0.625, BusyPanes: 25}, 10, 10},
		{Config{Busy: 0.625}, 40, 25},
		{Config{Busy: 0.625}, 200, 125},
	} {
		if got := count(c.cfg, c.n); got != c.want {
			t.Errorf("%+v at %d panes: %d busy, want %d", c.cfg, c.n, got, c.want)
		}
	}
}
