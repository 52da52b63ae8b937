package learn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"

	"github.com/system3-dev/system3/internal/api"
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
	who := "proc" + os.Getenv(helperEnv+"_ID")
	enc := json.NewEncoder(os.Stdout)
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		for i := range n {
			enc.Encode(writeResult{Initiative: initiative(who, i), Err: err.Error()})
		}
		return 0
	}
	defer s.Close()
	for _, r := range writeMany(s, who, n) {
		enc.Encode(r)
	}
	return 0
}

// writeResult is one ReportOutcome as its caller saw it: Err is "" when
// the store said the outcome was stored.
type writeResult struct {
	Initiative string `json:"initiative"`
	Err        string `json:"err,omitempty"`
}

func initiative(who string, i int) string { return fmt.Sprintf("%s task %d", who, i) }

// writeMany reports n outcomes, going on after a failure, and returns what
// each call answered.
func writeMany(s *Store, who string, n int) []writeResult {
	var out []writeResult
	for i := range n {
		outcome := api.OutcomeSuccess
		if i%2 == 1 {
			outcome = api.OutcomeFailure
		}
		_, err := s.ReportOutcome(context.Background(), api.Outcome{Initiative: initiative(who, i), Outcome: outcome,
			ReasoningPath: goodReasoning, Learnings: []string{"shared lesson about retries", who + " lesson " + strconv.Itoa(i)}, Domain: "shared"})
		r := writeResult{Initiative: initiative(who, i)}
		if err != nil {
			r.Err = err.Error()
		}
		out = append(out, r)
	}
	return out
}

// Several processes and several *sql.DB handles in this one (the
// dashboard, the daemon, CLI commands) open and write the store at once:
// every outcome a caller was told is stored is stored, no other is, and
// nothing fails on a busy database (not even opening a new one while
// another process creates it).
func TestConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	const perWriter = 15
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 2 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperEnv+"_N="+strconv.Itoa(perWriter), helperEnv+"_ID="+strconv.Itoa(i))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, out)
	}
	var mu sync.Mutex
	var results []writeResult
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			who := "db" + strconv.Itoa(i)
			s, err := Open(dir)
			if err != nil {
				t.Errorf("open: %v", err)
				mu.Lock()
				for j := range perWriter {
					results = append(results, writeResult{Initiative: initiative(who, j), Err: err.Error()})
				}
				mu.Unlock()
				return
			}
			defer s.Close()
			rs := writeMany(s, who, perWriter)
			mu.Lock()
			results = append(results, rs...)
			mu.Unlock()
			// Readers run alongside the writers.
			if _, err := s.Reflect(context.Background(), "retries lesson", "", api.BudgetMid); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
		dec := json.NewDecoder(outs[i])
		for {
			var r writeResult
			if err := dec.Decode(&r); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("helper output: %v", err)
			}
			results = append(results, r)
		}
	}
	if len(results) != 5*perWriter {
		t.Fatalf("%d results, want one for each of %d writes", len(results), 5*perWriter)
	}

	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stored, err := s.Outcomes(context.Background(), api.OutcomeFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	inStore := map[string]int{}
	for _, o := range stored {
		inStore[o.Initiative]++
	}
	// What each caller was told is what the store holds.
	for _, r := range results {
		switch n := inStore[r.Initiative]; {
		case r.Err == "" && n != 1:
			t.Errorf("%q: ReportOutcome returned nil, but the store holds it %d times", r.Initiative, n)
		case r.Err != "" && n != 0:
			t.Errorf("%q: ReportOutcome failed (%s), but the store holds it", r.Initiative, r.Err)
		case r.Err != "":
			t.Errorf("%q: %s", r.Initiative, r.Err)
		}
		delete(inStore, r.Initiative)
	}
	if len(inStore) != 0 {
		t.Errorf("outcomes nobody reported: %v", inStore)
	}
	if t.Failed() {
		t.FailNow()
	}
	const total = 5 * perWriter
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
	if len(items) != total+2 || seen[api.LearningPattern]+seen[api.LearningAntiPattern] != total {
		t.Fatalf("%d learnings, shared seen %v", len(items), seen)
	}
	// A recompute from the outcomes finds the counts already right.
	if n, err := s.recomputeCapabilities(context.Background()); err != nil || n != 0 {
		t.Fatalf("recompute changed %d, %v", n, err)
	}
}
