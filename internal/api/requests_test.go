package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInjectRequestJSONKeepsBytes: over the socket a request keeps its
// text byte for byte (invalid UTF-8 included), and a text over the limit
// arrives cut with its real length, so the far side refuses and audits it.
func TestInjectRequestJSONKeepsBytes(t *testing.T) {
	for _, text := range []string{"plain <b>&amp;</b> text\n\tok", "ok \xff\xfe\x00\x1b[201~", strings.Repeat("<", 200<<10), strings.Repeat("x", 1<<20)} {
		in := InjectRequest{Target: Target{Session: "orch"}, Text: text, NoEnter: true, VisibleControls: true, Origin: "cli"}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 2*MaxText {
			t.Errorf("a %d-byte text is %d bytes of JSON", len(text), len(b))
		}
		var out InjectRequest
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		want := in
		if len(text) > MaxText {
			want.Text, want.size = text[:MaxText], len(text)
		}
		if out != want {
			t.Errorf("round trip of a %d-byte text: got %q… (size %d)", len(text), clipped(out.Text), out.size)
		}
	}
}

func clipped(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
