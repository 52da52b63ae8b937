package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/testsupport/monitortest"
)

func TestWaitPrintsPendingWake(t *testing.T) {
	f := useFake(t)
	ev := f.Raise(t, monitortest.WakeAuth)
	f.Raise(t, monitortest.WakeDocs)

	code, out, errOut := invoke(t, nil, "wait")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"wake " + ev.ID + ": awaiting_input", "orch-auth %3", "claude", "awaiting_input/permission", " ago (raised ",
		"Edit auth.go?", "1. Yes", "2. No", "PRD-AUTH: 1/3 done", "answer the permission prompt",
		"screen rule claude.permission: Do you want", "system3 ack " + ev.ID,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "error_loop") {
		t.Errorf("printed more than the oldest wake:\n%s", out)
	}
	if f.starts.Load() != 1 || f.stops.Load() != 1 {
		t.Errorf("monitors started %d times, stopped %d", f.starts.Load(), f.stops.Load())
	}
}

func TestWaitJSONAndFilters(t *testing.T) {
	f := useFake(t)
	f.Raise(t, monitortest.WakeAuth)
	docs := f.Raise(t, monitortest.WakeDocs)

	code, out, errOut := invoke(t, nil, "wait", "--json", "--reason", "worker_failed,error_loop_detected", "--session", "d*")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	var got api.Wake
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != docs.ID || got.Reason != api.ReasonErrorLoopDetected || got.Pane != "%5" {
		t.Errorf("got %+v", got)
	}
}

func TestWaitForNewWake(t *testing.T) {
	f := useFake(t)
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.Store.Raise(monitortest.WakeDocs)
	}()
	code, out, errOut := invoke(t, nil, "wait", "--timeout", "10s", "--reason", "error_loop_detected")
	if code != 0 || !strings.Contains(out, "error_loop_detected") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestWaitTimeout(t *testing.T) {
	f := useFake(t)
	f.Raise(t, monitortest.WakeDocs) // filtered out
	start := time.Now()
	code, out, errOut := invoke(t, nil, "wait", "--timeout", "50ms", "--reason", "awaiting_input")
	if code != 2 || out != "" || !strings.Contains(errOut, "no matching wake within 50ms") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if f.stops.Load() != 1 {
		t.Error("monitors not stopped after the timeout")
	}
}

func TestWaitRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--reason", "nope"}, []string{`unknown reason "nope"`, "valid reasons: awaiting_input, error_loop_detected, worker_failed"}},
		{[]string{"--reason", "awaiting_input,Awaiting_Input"}, []string{`unknown reason "Awaiting_Input"`}},
		{[]string{"--session", "orch-["}, []string{`session pattern "orch-[" is not a valid glob`}},
		{[]string{"--timeout", "-1s"}, []string{"negative"}},
		{[]string{"--timeout", "soon"}, []string{`invalid argument "soon"`}},
		{[]string{"extra"}, []string{`unknown command "extra"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := useFake(t)
			code, _, errOut := invoke(t, nil, append([]string{"wait"}, tt.args...)...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, want := range tt.want {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q lacks %q", errOut, want)
				}
			}
			if f.starts.Load() != 0 {
				t.Error("started monitors for a command that cannot run")
			}
		})
	}
}

func TestWriteWakeSanitizes(t *testing.T) {
	var b strings.Builder
	ev := api.Wake{ID: "w1", Reason: api.ReasonAPIError, Session: "s\x1b[31m", Question: "line one\nline two\x07",
		Details: "tail 1\ntail 2\n", Time: testEpoch}
	if err := writeWake(&b, ev, testEpoch.Add(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters reached the terminal: %q", out)
	}
	for _, want := range []string{`s\u001b[31m`, "  question   line one\n             line two\\u0007\n", "  details    tail 1\n             tail 2\n", "1m30s ago"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A usage_limit wake says when the limit resets, counting down.
func TestWriteWakeSaysWhenALimitResets(t *testing.T) {
	var b strings.Builder
	ev := api.Wake{ID: "w1", Reason: api.ReasonUsageLimit, Session: "orch", State: "rate_limited", Time: testEpoch,
		ResetsAt: testEpoch.Add(2*time.Hour + 5*time.Minute), Details: "You've hit your 5-hour limit · resets 8:10pm (UTC)"}
	if err := writeWake(&b, ev, testEpoch); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "(in 2h 5m)") || !strings.Contains(out, "  limit      resets ") {
		t.Errorf("output:\n%s", out)
	}
}

// --since takes a cursor naming only local and the config's hosts, and
// says which of the two rules a bad one breaks.
func TestParseSince(t *testing.T) {
	known := []string{"local", "web1"}
	c, err := parseSince("web1:40,local:12", known)
	if err != nil || c.String() != "local:12,web1:40" {
		t.Fatalf("parseSince = %v, %v", c, err)
	}
	for in, want := range map[string]string{
		"web1:x":         "each part must be HOST:SEQ",
		"mars:3,web1:1":  `names host "mars"`,
		"web1:1,mars:3":  `names host "mars"`,
		"zeta:1,alpha:2": `names host "alpha"`,
	} {
		if _, err := parseSince(in, known); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseSince(%q) = %v, want %q", in, err, want)
		}
	}
}
