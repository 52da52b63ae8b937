package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

const cliReasoning = "The goal was to add login. First I wrote tests, then the handler. I chose sessions because they exist. The risk was lockouts, so I kept a fallback. Verified: tests pass."

// The learning commands open the store directly: no daemon needed.
func TestLearnCommands(t *testing.T) {
	state := testkit.StateDir(t)
	dir := t.TempDir()
	reasoning := filepath.Join(dir, "reasoning.md")
	if err := os.WriteFile(reasoning, []byte(cliReasoning), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("learn:\n  reflect_command: \"grep -c OAuth\"\n  reflect_timeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SYSTEM3_STATE_DIR": state, "SYSTEM3_CONFIG": cfg}

	code, out, errOut := invoke(t, env, "outcomes")
	if code != 0 || !strings.Contains(out, "no outcomes yet") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = invoke(t, env, "outcome", "report", "add OAuth login", "--outcome", "success", "--domain", "auth",
		"--reasoning-file", reasoning, "--learning", "Keep OAuth tokens in the session store", "--blocker", "flaky CI")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"outcome 1 recorded; reasoning validated:", `✓ goal clearly defined: "The goal was to add login"`,
		"pattern 1 stored: Keep OAuth tokens in the session store", "capability auth: confidence 0.67 (1 successful initiative out of 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = invoke(t, env, "outcome", "report", "refresh OAuth tokens", "--outcome", "failure", "--domain", "auth",
		"--reasoning", "did it", "--learning", "Refreshing OAuth tokens in handlers races", "--json")
	var rep struct {
		Schema string `json:"schema"`
		Report struct {
			Validated bool    `json:"validated"`
			Kind      string  `json:"kind"`
			Conf      float64 `json:"confidence"`
		} `json:"report"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Schema != "system3.outcome_report/v1" || rep.Report.Validated ||
		rep.Report.Kind != "anti-pattern" || rep.Report.Conf != 0.5 {
		t.Fatalf("exit %d, stdout %q", code, out)
	}

	code, out, _ = invoke(t, env, "outcomes")
	if code != 0 || !strings.Contains(out, "failure  auth    weak 0/5       refresh OAuth tokens") || !strings.Contains(out, "validated 5/5") ||
		!strings.Contains(out, "· Keep OAuth tokens in the session store") {
		t.Fatalf("outcomes:\n%s", out)
	}
	code, out, _ = invoke(t, env, "outcomes", "--json", "--domain", "nope")
	if code != 0 || !strings.Contains(out, `"outcomes": []`) {
		t.Fatalf("outcomes --json: %s", out)
	}

	code, out, _ = invoke(t, env, "reflect", "OAuth", "tokens")
	for _, want := range []string{"Patterns:\n  1. [auth, seen 1×] Keep OAuth tokens in the session store", "Anti-patterns:\n  2. [auth, seen 1×] Refreshing",
		"auth: confidence 0.50 (1 successful initiative out of 2)", "confidence 0.40; retrieval only"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("reflect output lacks %q:\n%s", want, out)
		}
	}
	// Budget high runs learn.reflect_command from the config.
	code, out, _ = invoke(t, env, "reflect", "OAuth", "--budget", "high", "--json")
	var refl struct {
		Reflection struct {
			Mode, Reflection string
		} `json:"reflection"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &refl) != nil || refl.Reflection.Mode != "written" || refl.Reflection.Reflection != "3" {
		t.Fatalf("reflect high: exit %d, %s", code, out)
	}

	code, out, _ = invoke(t, env, "capabilities")
	if code != 0 || !strings.Contains(out, "auth        auth    0.50        1 successful initiative out of 2") {
		t.Fatalf("capabilities:\n%s", out)
	}
	code, out, _ = invoke(t, env, "capabilities", "oauth", "login", "--json")
	if code != 0 || !strings.Contains(out, `"name": "oauth login"`) || !strings.Contains(out, `"confidence": 0.67`) {
		t.Fatalf("capabilities --json:\n%s", out)
	}
}

func TestLearnCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"outcome", "report", "x"}, `required flag(s) "outcome" not set`},
		{[]string{"outcome", "report", "x", "--outcome", "done"}, `outcome "done" is not one of success, partial, failure`},
		{[]string{"outcome", "report", "x", "--outcome", "success", "--reasoning", "a", "--reasoning-file", "-"}, "not both"},
		{[]string{"reflect", "the"}, "has no words to search for"},
		{[]string{"reflect", "oauth", "--budget", "max"}, `budget "max" is not one of low, mid, high`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := invoke(t, nil, tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, errOut, tt.want)
			}
		})
	}
}
