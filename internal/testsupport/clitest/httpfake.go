package clitest

import (
	"net/http"
	"testing"

	"github.com/system3-dev/system3/internal/fakehttp"
)

// The fake APIs' HTTP plumbing lives in fakehttp, which imports no test
// package; these names keep the harnesses' spelling.
type (
	HTTPFake[R any] = fakehttp.HTTPFake[R]
	SSE             = fakehttp.SSE
	RequestLine     = fakehttp.RequestLine
)

// NewHTTPFake serves h and stops it when the test ends; if the test failed,
// it then logs summary() under name (e.g. "fake Gemini API").
func NewHTTPFake[R any](t testing.TB, name string, h http.Handler, summary func() string) *HTTPFake[R] {
	t.Helper()
	f, err := fakehttp.Serve[R](h, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	Cleanup(t, name, f.Close, summary)
	return f
}

// Cleanup registers close to run when the test ends, then, if the test
// failed, logs summary() under name: for fakes started without a test.
func Cleanup(t testing.TB, name string, close func(), summary func() string) {
	t.Cleanup(func() {
		close()
		if t.Failed() {
			t.Logf("%s requests:\n%s", name, summary())
		}
	})
}

// Summary lists requests one a line (see fakehttp.Summary).
func Summary[R any](reqs []R, line func(R) RequestLine) string { return fakehttp.Summary(reqs, line) }

// SplitChunks cuts s into n pieces (see fakehttp.SplitChunks).
func SplitChunks(s string, n int) []string { return fakehttp.SplitChunks(s, n) }

// WriteJSON answers status with v as JSON and returns status.
func WriteJSON(w http.ResponseWriter, status int, v any) int { return fakehttp.WriteJSON(w, status, v) }
