package learn

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
)

const helperEnv = "SYSTEM3_LEARN_HELPER_DIR"

// TestMain doubles as the writer process of TestConcurrentWriters: with
// helperEnv set, the test binary writes outcomes to that state dir and
// exits.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helperWriter(dir))
	}
	os.Exit(m.Run())
}

func helperWriter(dir string) int {
	n, _ := strconv.Atoi(os.Getenv(helperEnv + "_N"))
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	if err := writeMany(s, "proc"+os.Getenv(helperEnv+"_ID"), n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func writeMany(s *Store, who string, n int) error {
	for i := range n {
		outcome := Success
		if i%2 == 1 {
			outcome = Failure
		}
		_, err := s.ReportOutcome(context.Background(), Outcome{Initiative: fmt.Sprintf("%s task %d", who, i), Outcome: outcome,
			ReasoningPath: goodReasoning, Learnings: []string{"shared lesson about retries", who + " lesson " + strconv.Itoa(i)}, Domain: "shared"})
		if err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	return nil
}

// Several processes and several *sql.DB handles in this one (the
// dashboard, the daemon, CLI commands) open and write the store at once:
// nothing is lost, nothing fails on a busy database.
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	const perWriter = 15
	var procs []*exec.Cmd
	for i := range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperEnv+"_N="+strconv.Itoa(perWriter), helperEnv+"_ID="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			s, err := Open(dir)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			if err := writeMany(s, "db"+strconv.Itoa(i), perWriter); err != nil {
				t.Error(err)
			}
			// Readers run alongside the writers.
			if _, err := s.Reflect(context.Background(), "retries lesson", "", BudgetMid); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const total = 5 * perWriter
	outs, err := s.Outcomes(context.Background(), OutcomeFilter{Limit: 1000})
	if err != nil || len(outs) != total {
		t.Fatalf("%d outcomes, %v; want %d", len(outs), err, total)
	}
	caps, _ := s.Capabilities(context.Background(), "", "shared")
	if len(caps) != 1 || caps[0].Attempts != total || caps[0].Successes != 5*((perWriter+1)/2) {
		t.Fatalf("capability = %+v", caps)
	}
	// The shared lesson is one learning per kind, seen by every outcome.
	items, _ := s.Learnings(context.Background(), "", 1000)
	seen := map[string]int{}
	for _, it := range items {
		if it.Text == "shared lesson about retries" {
			seen[it.Kind] = it.Seen
		}
	}
	if len(items) != total+2 || seen[KindPattern]+seen[KindAntiPattern] != total {
		t.Fatalf("%d learnings, shared seen %v", len(items), seen)
	}
	// A recompute from the outcomes finds the counts already right.
	if n, err := s.recomputeCapabilities(context.Background()); err != nil || n != 0 {
		t.Fatalf("recompute changed %d, %v", n, err)
	}
}
