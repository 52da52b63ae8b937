package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DefaultMaxSessions caps the MCP sessions one HTTP server keeps (about
// 10 KB each): a person's supervising agents and Claude Code instances need
// far fewer, the load test's 100 live clients fit, and a client that opens
// sessions without end cannot make the server hold more.
const DefaultMaxSessions = 256

// sessionPrefix starts every session id this server issues.
const sessionPrefix = "s3-"

// httpSessions is the register of the MCP session ids one Streamable HTTP
// transport has issued: mcp-go asks it (as its SessionIdManager) whether an
// id is live, and the gate in front of the transport answers the spec's
// status codes from it. It holds at most max sessions; a new one evicts the
// session idle longest. An id it does not hold (never issued, DELETEd,
// evicted or expired) is unknown, and the client must initialize again.
type httpSessions struct {
	max int
	// drop cleans the transport's state of an evicted session (set once
	// the transport exists).
	drop func(id string)
	// ended is told of every id the register forgets.
	ended func(id string)

	mu   sync.Mutex
	seq  uint64
	byID map[string]*httpSession
}

type httpSession struct {
	used uint64 // seq of the last request that began or ended on it
	busy int    // requests (and listening streams) in flight
}

func newHTTPSessions(max int) *httpSessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &httpSessions{max: max, byID: map[string]*httpSession{}}
}

var _ server.SessionIdManager = (*httpSessions)(nil)

// Generate issues a new id (mcp-go calls it for initialize), evicting the
// session idle longest when the register is full.
func (h *httpSessions) Generate() string {
	id := sessionPrefix + rand.Text()
	h.mu.Lock()
	h.seq++
	h.byID[id] = &httpSession{used: h.seq}
	var evict []string
	for len(h.byID) > h.max {
		victim := h.idlest(id)
		if victim == "" {
			break
		}
		delete(h.byID, victim)
		evict = append(evict, victim)
	}
	drop := h.drop
	h.mu.Unlock()
	for _, v := range evict {
		if drop != nil {
			drop(v)
		}
	}
	return id
}

// idlest is the session with no request in flight whose last use is the
// oldest, other than keep; "" when every session is busy. Callers hold mu.
func (h *httpSessions) idlest(keep string) string {
	victim, oldest := "", uint64(0)
	for id, s := range h.byID {
		if id == keep || s.busy > 0 {
			continue
		}
		if victim == "" || s.used < oldest {
			victim, oldest = id, s.used
		}
	}
	return victim
}

// full reports whether a new session would find no room: the register is
// at its cap and every session in it has a request in flight.
func (h *httpSessions) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byID) >= h.max && h.idlest("") == ""
}

// Validate: a live id is valid; any other is an error (mcp-go answers 404).
func (h *httpSessions) Validate(id string) (isTerminated bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.byID[id]; !ok {
		return false, fmt.Errorf("unknown MCP session %q", id)
	}
	return false, nil
}

// Terminate forgets id (DELETE, the idle sweeper, shutdown).
func (h *httpSessions) Terminate(id string) (isNotAllowed bool, err error) {
	h.mu.Lock()
	delete(h.byID, id)
	h.mu.Unlock()
	if h.ended != nil {
		h.ended(id)
	}
	return false, nil
}

// acquire marks a request on id in flight; false when id is not live.
func (h *httpSessions) acquire(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.byID[id]
	if !ok {
		return false
	}
	h.seq++
	s.used, s.busy = h.seq, s.busy+1
	return true
}

// release ends a request acquire began; the session counts as used now.
func (h *httpSessions) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.byID[id]; ok {
		h.seq++
		s.used, s.busy = h.seq, max(s.busy-1, 0)
	}
}

// holds reports whether id is live.
func (h *httpSessions) holds(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.byID[id]
	return ok
}

// len counts the live sessions.
func (h *httpSessions) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byID)
}

// dropper is how an evicted session's transport state is cleaned: a DELETE
// for it, served by the transport itself, which unregisters the session
// and frees its stores as a client's own DELETE would.
func dropper(stream http.Handler) func(id string) {
	return func(id string) {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodDelete, "http://localhost"+EndpointPath, nil)
		req.Header.Set(server.HeaderKeySessionID, id)
		stream.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// JSON-RPC error codes of the session gate, as the MCP TypeScript SDK's
// server uses them: clients that know them recover (initialize again).
const (
	codeBadRequest      = -32000
	codeSessionNotFound = -32001
)

// sessionGate answers what the Streamable HTTP spec asks of a server that
// issues session ids, before mcp-go sees the request: a request without
// Mcp-Session-Id (other than initialize) gets 400; one with an id this
// server does not hold (never issued, DELETEd, evicted, expired) gets 404,
// so its client initializes again; a new session when every one is busy
// gets 503. A request holds its session busy while it runs, so the idle
// ones are evicted first.
func (s *Server) sessionGate(reg *httpSessions, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			// Sessionless protocol versions are refused by the transport.
			next.ServeHTTP(w, r)
			return
		}
		var msgID any
		switch r.Method {
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     any    `json:"id"`
				Method string `json:"method"`
				Params struct {
					Meta *mcp.Meta `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) != nil || mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion()) {
				// Not a single JSON-RPC message, or a sessionless
				// version: the transport answers those.
				next.ServeHTTP(w, r)
				return
			}
			msgID = msg.ID
			if msg.Method == string(mcp.MethodInitialize) {
				if reg.full() {
					w.Header().Set("Retry-After", "10")
					rpcError(w, http.StatusServiceUnavailable, msgID, codeBadRequest, fmt.Sprintf("system3 already serves %d MCP sessions, all busy; close one (or raise mcp.max_sessions) and try again", reg.max))
					return
				}
				next.ServeHTTP(w, r)
				// mcp-go registers the session after answering: one evicted
				// in between (by a burst of other initializes) is dropped
				// now, or it would stay registered with no id to reach it.
				if id := w.Header().Get(server.HeaderKeySessionID); id != "" && !reg.holds(id) && reg.drop != nil {
					reg.drop(id)
				}
				return
			}
		case http.MethodGet, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			rpcError(w, http.StatusBadRequest, msgID, codeBadRequest, "Mcp-Session-Id header is missing: send initialize first, then the Mcp-Session-Id its response carries with every request")
			return
		}
		if !reg.acquire(id) {
			rpcError(w, http.StatusNotFound, msgID, codeSessionNotFound, "MCP session not found (never issued, ended or expired): send initialize again without Mcp-Session-Id to start a new session")
			return
		}
		defer reg.release(id)
		next.ServeHTTP(w, r)
	})
}

// rpcError answers an HTTP error with a JSON-RPC error body, which MCP
// clients show to their user.
func rpcError(w http.ResponseWriter, code int, id any, rpcCode int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": rpcCode, "message": msg},
	})
}
