package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/system3-dev/system3/internal/backend"
)

// goisms are bits of Go that must never reach a client in an error.
var goisms = []string{"Go struct", "Go value", "json:", "unmarshal", "interface {", "map[", "%!", "uint64", "int64", "float64", "[]string", "[]interface", "*mcp.", "<nil>"}

// TestValidationErrorsSpeakJSON sends every argument of every tool values
// of the wrong type (and numbers no Go field holds): each refusal is a
// tool error naming the argument and what it takes, in JSON's words,
// never Go's.
func TestValidationErrorsSpeakJSON(t *testing.T) {
	f := fixture(t)
	s := newServer(t, f, Options{}, backend.Parts{Learn: learnStore(t), Coach: coachFixture(t, f)})
	c := inProcess(t, s, "validation")
	values := []any{"text", 5.0, 2.5, true, nil, []any{1.0, "a"}, map[string]any{"a": 1.0}, 1e300, -1e300, -1.0, 99999999999999999.0}
	checked := 0
	for _, d := range s.AllTools() {
		for _, name := range propertyNames(d.Tool) {
			p, _ := d.Tool.InputSchema.Properties[name].(map[string]any)
			typ, _ := p["type"].(string)
			for _, v := range values {
				args := map[string]any{name: v}
				if d.Tool.Name == "wait_for_wake" && name != "max_wait_seconds" {
					args["max_wait_seconds"] = 0.0 // a valid call answers at once
				}
				res, err := callErr(c, d.Tool.Name, args)
				if err != nil {
					t.Errorf("%s %s=%v: protocol error %v", d.Tool.Name, name, v, err)
					continue
				}
				msg := text(res)
				for _, g := range goisms {
					if strings.Contains(msg, g) {
						t.Errorf("%s %s=%#v: error shows Go (%q): %s", d.Tool.Name, name, v, g, msg)
					}
				}
				got := jsonType(v)
				if typ == "integer" && got == "number" && v.(float64) == float64(int64(v.(float64))) {
					got = "integer"
				}
				if !res.IsError || got == typ || typ == "number" && got == "integer" {
					continue
				}
				checked++
				want := fmt.Sprintf("%s must be %s %s", name, article(typ), typ)
				if !strings.Contains(msg, want) || !strings.Contains(msg, "Send instead:") {
					t.Errorf("%s %s=%#v: %q lacks %q", d.Tool.Name, name, v, msg, want)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d wrong-type calls checked", checked)
	}
}
