package mcpserver

import (
	"encoding/json"
	"testing"
)

// TestDelivered: the audit's "delivered" is what a result says where it
// has the field, true where it has none (a read), and a read's answer
// that merely mentions the word is not taken for the field.
func TestDelivered(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{`{"delivered":false,"verified":false}`, false},
		{`{"delivered":true}`, true},
		{`{"orchestrators":[{"question":"was it \"delivered\"?"}]}`, true},
		{`{"result":{"delivered":false}}`, true},
	} {
		if got := delivered(rawResult(json.RawMessage(c.raw), c.raw)); got != c.want {
			t.Errorf("delivered(%s) = %v, want %v", c.raw, got, c.want)
		}
	}
}
