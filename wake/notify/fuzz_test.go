package notify

import (
	"strings"
	"testing"
	"time"
)

// Verify never panics and accepts nothing it did not sign.
func FuzzVerify(f *testing.F) {
	s, _ := NewSigner([]byte(strings.Repeat("k", 32)))
	f.Add(s.Sign("w0000000001-abc", 1, "p0123456789abcdef", time.Unix(2e9, 0)))
	f.Add("")
	f.Add("e30.")
	f.Add("eyJ3IjoidyIsIm8iOjEsImUiOjk5OTk5OTk5OTl9.AAAA")
	f.Fuzz(func(t *testing.T, tok string) {
		a, err := s.Verify(tok, time.Unix(1e9, 0))
		if err == nil && (a.Wake == "" || a.Option < 1 || a.Expires < 1e9) {
			t.Fatalf("accepted %q as %+v", tok, a)
		}
	})
}

// Whatever a screen holds, the OSC escape ends where system3 ends it.
func FuzzOSCSequence(f *testing.F) {
	f.Add("title", "body\x07\x1b]9;x\x1b\\")
	f.Fuzz(func(t *testing.T, title, body string) {
		for _, kind := range []OSC{OSC9, OSC777} {
			seq := OSCSequence(kind, title, body, false)
			inner := seq[2 : len(seq)-1]
			if strings.ContainsAny(inner, "\x07\x1b\u009c") || !strings.HasSuffix(seq, "\x07") {
				t.Fatalf("escape %q leaks control characters", seq)
			}
		}
	})
}
