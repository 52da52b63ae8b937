package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// Endpoints.
const (
	EndpointPath = "/mcp"
	HealthPath   = "/health"
)

// ErrNeedsToken is Listen's error for a non-loopback address without a
// bearer token.
var ErrNeedsToken = errors.New("listening beyond loopback needs a bearer token")

// HTTP server limits.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 5 * time.Second
	// heartbeat pings clients on their listening stream, which also keeps
	// a connected client's session from idling out.
	heartbeat = 30 * time.Second
)

// Handler is the HTTP face of the server: /mcp (Streamable HTTP) and
// /health, behind the security checks (Host, Origin, bearer token, body
// size). Serve uses it; tests may mount it on httptest.
func (s *Server) Handler() http.Handler {
	h, stream := s.handler()
	s.mu.Lock()
	s.streams = append(s.streams, stream)
	s.mu.Unlock()
	return h
}

// Close releases what Handler started (the transports' session sweepers).
// Serve cleans up after itself.
func (s *Server) Close() error {
	s.mu.Lock()
	streams := s.streams
	s.streams = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, st := range streams {
		_ = st.Shutdown(ctx)
	}
	return nil
}

// handler also returns the transport, whose Shutdown stops its session
// sweeper.
func (s *Server) handler() (http.Handler, *server.StreamableHTTPServer) {
	reg := newHTTPSessions(s.opts.MaxSessions)
	stream := server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath(EndpointPath),
		// Sessions are checked: only ids this server issued, and not yet
		// ended, are served (see sessionGate).
		server.WithSessionIdManager(reg),
		// Only the protocol versions with sessions: a sessionless request
		// would name no session and no client for the audit log.
		server.WithStreamableHTTPProtocolVersions(mcp.LegacyProtocolVersions()...),
		server.WithSessionIdleTTL(s.opts.SessionIdleTTL),
		server.WithHeartbeatInterval(heartbeat),
		server.WithStreamableHTTPLogger(s.log),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context { return withTracking(ctx) }),
		// guard checks Host itself, also accepting the listen host of a
		// non-loopback address, which mcp-go's own check would refuse on
		// a loopback connection.
		server.WithDisableLocalhostProtection(s.listensBeyondLoopback()),
	)
	reg.drop, reg.ended = dropper(stream), s.clients.forget
	s.mu.Lock()
	s.registers = append(s.registers, reg)
	s.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, s.sessionGate(reg, stream))
	mux.HandleFunc(HealthPath, s.health)
	return s.guard(mux), stream
}

func (s *Server) listensBeyondLoopback() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.extra) > 0
}

// guard applies the checks every request passes, in order: a Host this
// server answers to (DNS rebinding), no foreign Origin (browsers), the
// bearer token, and the body size. Requests for the web page (Options.Web)
// pass the Host check and then the page's own.
func (s *Server) guard(next http.Handler) http.Handler {
	var sum [sha256.Size]byte
	if s.opts.Token != "" {
		sum = sha256.Sum256([]byte(s.opts.Token))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			s.log.Warn("mcp: refused request for a foreign host", "host", r.Host, "remote", r.RemoteAddr)
			httpError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this system3's address; connect to http://127.0.0.1 or localhost", r.Host))
			return
		}
		if s.opts.Web != nil && (r.URL.Path == "/web" || strings.HasPrefix(r.URL.Path, "/web/")) {
			// The web page does its own checks: a signed-in cookie or the
			// bearer token, CSRF and same-origin for changes, signed links
			// for push actions. A phone's Origin is the server's own name.
			s.opts.Web.ServeHTTP(w, r)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !localOrigin(o) {
			s.log.Warn("mcp: refused request from a foreign origin", "origin", o, "remote", r.RemoteAddr)
			httpError(w, http.StatusForbidden, fmt.Sprintf("Origin %q is not allowed: system3 answers only local clients, never web pages", o))
			return
		}
		if isOAuthPath(r.URL.Path) {
			// Answered with or without the token: a client that looks for
			// OAuth learns, in words it shows its user, that there is none.
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, noOAuth+"\n")
			return
		}
		if s.opts.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			gotSum := sha256.Sum256([]byte(strings.TrimSpace(got)))
			if !ok || subtle.ConstantTimeCompare(gotSum[:], sum[:]) != 1 {
				// No resource_metadata: there is no OAuth server to find.
				challenge := `Bearer realm="system3"`
				if ok {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				rpcError(w, http.StatusUnauthorized, nil, codeBadRequest, "missing or wrong bearer token: "+noOAuth)
				return
			}
		}
		if r.Body != nil && r.Method == http.MethodPost {
			limit := s.opts.MaxBodyBytes
			if r.ContentLength > limit {
				httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the %d byte limit", r.ContentLength, limit))
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				httpError(w, http.StatusBadRequest, "cannot read the request body: "+err.Error())
				return
			}
			if int64(len(body)) > limit {
				httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the %d byte limit", limit))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(trackingResponseWriter{ResponseWriter: notFoundResponseWriter{w}, t: s.tracker}, r)
	})
}

// noOAuth is what a client that tries OAuth, or sends no token, is told.
// Claude Code, answered 401, looks for OAuth metadata and registers a
// client at /register, and shows its user that answer's body: it must say
// what to do. (It hides text like "Bearer <word>", so the words avoid it.)
const noOAuth = "system3 does not use OAuth; it needs its bearer token. Run `system3 token` and add the Authorization header it prints to the client's configuration (claude mcp add --header ...)"

// isOAuthPath: the paths OAuth clients probe (RFC 8414, RFC 9728, OpenID
// discovery, and the endpoints clients guess when metadata is missing).
func isOAuthPath(p string) bool {
	switch {
	case strings.HasPrefix(p, "/.well-known/oauth-"), strings.HasPrefix(p, "/.well-known/openid-configuration"):
		return true
	case p == "/register", p == "/authorize", p == "/token":
		return true
	}
	return false
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "status": code})
}

// isLoopbackName reports whether host (no port) names the loopback
// interface.
func isLoopbackName(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOnly strips the port of a Host header or address.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// hostAllowed: localhost and loopback addresses, the listen host, and the
// configured extra names. On a wildcard listen address, IP literals are
// accepted too: DNS rebinding needs a name the attacker controls.
func (s *Server) hostAllowed(hostport string) bool {
	h := hostOnly(hostport)
	if h == "" {
		return false
	}
	if isLoopbackName(h) {
		return true
	}
	s.mu.Lock()
	extra := s.extra
	s.mu.Unlock()
	for _, a := range append(extra, s.opts.AllowedHosts...) {
		if a == "*ip" {
			if net.ParseIP(h) != nil {
				return true
			}
			continue
		}
		if strings.EqualFold(strings.Trim(a, "[]"), h) {
			return true
		}
	}
	return false
}

// localOrigin reports whether an Origin header is a page on this machine's
// loopback: the hostname is compared, not the port.
func localOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// health answers GET /health.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	doc := map[string]any{"ok": true, "version": s.opts.Version}
	up := s.opts.Clock().Sub(s.opts.Started).Round(time.Second)
	doc["uptime"], doc["uptime_seconds"] = up.String(), int64(up/time.Second)
	st := s.Status()
	doc["mcp_sessions"] = st.Sessions
	doc["read_only"] = s.opts.ReadOnly
	code := http.StatusOK
	if snap, err := s.svc.Snapshot(ctx); err != nil {
		doc["ok"], doc["error"] = false, err.Error()
		code = http.StatusServiceUnavailable
	} else {
		doc["sessions"] = len(snap.Sessions)
		doc["tmux_running"] = snap.Running
		if snap.Problem != "" {
			doc["problem"] = snap.Problem
		}
	}
	if evs, err := s.svc.Wakes(ctx, api.WakeFilter{}); err != nil {
		doc["ok"], doc["error"] = false, err.Error()
		code = http.StatusServiceUnavailable
	} else {
		doc["needs_person"] = api.NeedingPerson(evs)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method == http.MethodGet {
		_ = json.NewEncoder(w).Encode(doc)
	}
}

// ClientURL is the MCP endpoint a client on this machine uses for a
// server listening on listen ("" or "off" means DefaultListen): a wildcard
// host is reached on loopback.
func ClientURL(listen string) string {
	if listen == "" || strings.EqualFold(listen, "off") {
		listen = DefaultListen
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen + EndpointPath
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + EndpointPath
}

// Listen binds addr for Serve. It refuses a non-loopback address without a
// token, and reports a taken port as one sentence saying what to do. The
// error is also kept for Status, so a dashboard can show it and go on.
func (s *Server) Listen(addr string) error {
	err := s.listen(addr)
	s.mu.Lock()
	s.bindErr = err
	s.mu.Unlock()
	return err
}

func (s *Server) listen(addr string) error {
	if addr == "" {
		addr = DefaultListen
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mcp listen address %q: %w (use host:port, like %s)", addr, err, DefaultListen)
	}
	loopback := host != "" && isLoopbackName(host)
	if !loopback && s.opts.Token == "" {
		return fmt.Errorf("%w: %s is reachable from other machines; create a token with `system3 token` and pass --token-file (or mcp.token_file), or listen on %s", ErrNeedsToken, addr, DefaultListen)
	}
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return fmt.Errorf("mcp server already listens on %s", s.addr)
	}
	s.mu.Unlock()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("MCP port %s is in use (another system3, or another program): stop it, or choose another address with --listen or mcp.listen in config.yaml (\"off\" disables the server)", addr)
		}
		return fmt.Errorf("mcp listen on %s: %w", addr, err)
	}
	var extra []string
	switch {
	case host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified():
		extra = append(extra, "*ip")
		if hn, err := os.Hostname(); err == nil {
			extra = append(extra, hn)
		}
	case !loopback:
		extra = append(extra, host)
	}
	s.mu.Lock()
	s.ln, s.addr, s.extra = ln, ln.Addr().String(), extra
	s.mu.Unlock()
	s.log.Info("mcp server listening", "addr", s.addr, "read_only", s.opts.ReadOnly, "token", s.opts.Token != "")
	return nil
}

// Serve serves HTTP on the address Listen bound until ctx ends, then shuts
// down (open streams closed, requests cancelled). Without a listener (Listen
// failed or was not called) it returns nil at once, so a dashboard can run
// it regardless. It also keeps the resource list current.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ln := s.ln
	if ln == nil {
		s.mu.Unlock()
		return nil
	}
	s.serving = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.serving, s.ln = false, nil
		s.mu.Unlock()
	}()

	h, stream := s.handler()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		// Requests end with the server: a wait_for_wake in flight returns.
		BaseContext: func(net.Listener) context.Context { return runCtx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	var wg sync.WaitGroup
	registered := s.primeResources(runCtx)
	wg.Go(func() { s.watchResources(runCtx, registered) })
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer scancel()
	stream.CloseSessions(sctx)
	if serr := hs.Shutdown(sctx); serr != nil {
		hs.Close()
	}
	_ = stream.Shutdown(sctx)
	if err == nil {
		err = <-errc
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	s.log.Info("mcp server stopped", "addr", s.Status().Addr)
	return err
}

// ListenAndServe binds addr and serves until ctx ends. A bind error is
// returned at once.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	if err := s.Listen(addr); err != nil {
		return err
	}
	return s.Serve(ctx)
}
