package ipc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReadRequest feeds arbitrary bytes to the server's request reader. It
// must never panic; what it accepts must be a known method of this version
// and decode to the same request again; what it rejects must be a coded
// error for the client, or the end of the input.
func FuzzReadRequest(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzReadRequest.
	f.Add([]byte(`{"v":2,"method":"wait_wake","filter":{"reasons":["awaiting_input"],"session":"orch-*"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := readRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			var e *Error
			switch {
			case errors.As(err, &e):
				if e.Code == "" || e.Message == "" {
					t.Fatalf("error without code or message: %#v", e)
				}
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			default:
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if req.V != Version {
			t.Fatalf("accepted version %d", req.V)
		}
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeRequest(b)
		if err != nil {
			t.Fatalf("re-encoded request %s rejected: %v", b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatalf("request changed on a round trip:\n%s\n%s", b, b2)
		}
		_ = req.Filter.filter().Validate() // must not panic on any pattern
	})
}
