package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func post(t *testing.T, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestHTTPGuard checks the security middleware request by request.
func TestHTTPGuard(t *testing.T) {
	const token = "s3cr3t-token-0123456789abcdef"
	s := newServer(t, fixture(t), Options{Token: token, MaxBodyBytes: 4096})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + EndpointPath
	auth := "Bearer " + token
	tests := []struct {
		name string
		hdr  map[string]string
		body string
		code int
		want string
	}{
		{"token accepted", map[string]string{"Authorization": auth}, initBody, 200, `"serverInfo"`},
		{"no token", nil, initBody, 401, "missing or wrong bearer token"},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, initBody, 401, "bearer token"},
		{"token without Bearer", map[string]string{"Authorization": token}, initBody, 401, "bearer token"},
		{"foreign origin", map[string]string{"Authorization": auth, "Origin": "https://evil.example.com"}, initBody, 403, "not allowed"},
		{"foreign origin on a local port", map[string]string{"Authorization": auth, "Origin": "http://evil.example.com:8889"}, initBody, 403, "not allowed"},
		{"null origin", map[string]string{"Authorization": auth, "Origin": "null"}, initBody, 403, "not allowed"},
		{"localhost origin, any port", map[string]string{"Authorization": auth, "Origin": "http://localhost:6274"}, initBody, 200, `"serverInfo"`},
		{"loopback v6 origin", map[string]string{"Authorization": auth, "Origin": "http://[::1]:3000"}, initBody, 200, `"serverInfo"`},
		{"rebound host", map[string]string{"Authorization": auth, "Host": "evil.example.com:8889"}, initBody, 403, "not this system3's address"},
		{"localhost host", map[string]string{"Authorization": auth, "Host": "localhost:8889"}, initBody, 200, `"serverInfo"`},
		{"body too large", map[string]string{"Authorization": auth}, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`, 413, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, tt.body, tt.hdr)
			if resp.StatusCode != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d, body %q; want %d with %q", resp.StatusCode, body, tt.code, tt.want)
			}
			if tt.code == 401 {
				if wa := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(wa, "Bearer ") || strings.Contains(wa, "resource_metadata") {
					t.Errorf("401 challenge %q: want Bearer, and no OAuth metadata to look for", wa)
				}
				var msg struct {
					Error struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				if json.Unmarshal([]byte(body), &msg) != nil || msg.Error.Code == 0 || !strings.Contains(msg.Error.Message, "system3 token") {
					t.Errorf("401 body is not a JSON-RPC error about the token: %s", body)
				}
			}
		})
	}

	// What OAuth clients probe is not there, with or without the token,
	// and says so in words a client shows its user.
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
		"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration", "/register", "/authorize", "/token"} {
		for _, hdr := range []map[string]string{nil, {"Authorization": auth}} {
			method := http.MethodGet
			if p == "/register" || p == "/token" {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, ts.URL+p, strings.NewReader("{}"))
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 404 || !strings.Contains(string(b), "does not use OAuth") || !strings.Contains(string(b), "system3 token") {
				t.Errorf("%s %s (token %v): %d %s", method, p, hdr != nil, resp.StatusCode, b)
			}
		}
	}

	// A chunked body (no Content-Length) over the limit is refused too.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`))
		pw.Write([]byte(strings.Repeat("y", 8000)))
		pw.Write([]byte(`"}}`))
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, url, pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked body: status %d, want 413", resp.StatusCode)
	}
}

func TestHealth(t *testing.T) {
	f := fixture(t)
	raise(t, f, "%1", "orch-auth", api.ReasonAwaitingInput)
	s := newServer(t, f, Options{})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || doc["ok"] != true || doc["version"] != "v0.0.0-test" || doc["uptime"] != "1h30m0s" ||
		doc["sessions"] != 5.0 || doc["needs_person"] != 1.0 {
		t.Fatalf("status %d, health %v", resp.StatusCode, doc)
	}

	f.Fail("snapshot", errors.New("tmux is wedged"))
	resp2, err := http.Get(ts.URL + HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("health with a failing service: %d", resp2.StatusCode)
	}
	if r, _ := http.Get(ts.URL + "/other"); r.StatusCode != 404 {
		t.Fatalf("unknown path: %d", r.StatusCode)
	}
}

func TestListen(t *testing.T) {
	s := newServer(t, fixture(t), Options{})
	err := s.Listen("0.0.0.0:0")
	if !errors.Is(err, ErrNeedsToken) || !strings.Contains(err.Error(), "system3 token") {
		t.Fatalf("non-loopback without token: %v", err)
	}
	if st := s.Status(); st.Err == nil || st.Addr != "" {
		t.Fatalf("status after a refused listen: %+v", st)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = s.Listen(taken.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "is in use") || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("taken port: %v", err)
	}
	// Serve without a listener returns at once: a dashboard keeps going.
	if err := s.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}

	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	st := s.Status()
	if st.Err != nil || !strings.HasPrefix(st.URL, "http://127.0.0.1:") || !strings.HasSuffix(st.URL, "/mcp") {
		t.Fatalf("status = %+v", st)
	}
	resp, _ := post(t, st.URL, initBody, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}

	// Beyond loopback with a token is fine; the listen host is then a
	// valid Host.
	tok := newServer(t, fixture(t), Options{Token: "0123456789abcdef0123"})
	if err := tok.Listen("0.0.0.0:0"); err != nil {
		t.Fatal(err)
	}
	if !tok.hostAllowed("192.0.2.7:8889") || tok.hostAllowed("evil.example.com") {
		t.Error("wildcard listen: IP literals allowed, names refused")
	}
	if err := tok.Serve(ctx); err != nil { // ctx is done: Serve shuts down at once
		t.Fatal(err)
	}
}
