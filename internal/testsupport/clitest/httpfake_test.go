package clitest

import (
	"io"
	"net/http"
	"reflect"
	"testing"
	"time"
)

func TestSplitChunks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want []string
	}{
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"abc", 0, []string{"abc"}},
		{"ab", 5, []string{"a", "b"}},
		{"äöü", 3, []string{"ä", "ö", "ü"}},
		{"", 3, []string{""}},
	} {
		if got := SplitChunks(tc.in, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitChunks(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestHTTPFakeCloseCutsStreams checks that requests are recorded in
// arrival order, as they stand when the answer's first byte is sent, and
// that Close ends a stream that is still waiting.
func TestHTTPFakeCloseCutsStreams(t *testing.T) {
	var f *HTTPFake[string]
	started := make(chan struct{})
	ended := make(chan bool, 1)
	f = NewHTTPFake[string](t, "fake", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := r.URL.Path
		f.Answer(w, &rec, func(w http.ResponseWriter) {
			rec += " (known)"
			w.WriteHeader(http.StatusOK)
			s := SSE{W: w, Closed: f.Closed()}
			s.Event("start", map[string]int{"n": 0})
			close(started)
			rec += " never seen"
			ended <- s.Sleep(time.Hour)
			rec = r.URL.Path + " done"
		})
	}), func() string { return "" })
	resp, err := http.Get(f.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	if got := f.Requests(); !reflect.DeepEqual(got, []string{"/slow (known)"}) {
		t.Fatalf("requests while streaming = %q, want the request as it stood at the answer's first byte", got)
	}
	f.Close()
	f.Close() // a second Close does nothing
	if <-ended {
		t.Fatal("Sleep reported the full wait although the fake closed")
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "event: start\ndata: {\"n\":0}\n\n" {
		t.Fatalf("stream = %q", b)
	}
	if got := f.Requests(); !reflect.DeepEqual(got, []string{"/slow done"}) {
		t.Fatalf("requests after close = %q", got)
	}
}
