package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Where sign-in codes and sessions live, under the state dir. Each is one
// file named by the SHA-256 of its secret, so several processes (system3
// web, the server) share them without locks, a code is used once (the
// server removes its file), and deleting the files revokes.
const (
	Dir         = "web"
	codesDir    = "codes"
	sessionsDir = "sessions"
	// CookieName is the session cookie.
	CookieName = "system3_session"
	// CodeTTL is how long a sign-in link works.
	CodeTTL = 10 * time.Minute
	// SessionTTL is how long a signed-in browser stays signed in.
	SessionTTL = 30 * 24 * time.Hour
)

// session is what a session file holds.
type session struct {
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	CSRF    string    `json:"csrf"`
	Agent   string    `json:"user_agent,omitempty"`
}

type code struct {
	Expires time.Time `json:"expires"`
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func hashName(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// NewSignInCode writes a one-time sign-in code to the state dir and returns
// it; the link is BASE/web/signin?code=CODE.
func NewSignInCode(stateDir string, now time.Time) (string, error) {
	dir := filepath.Join(stateDir, Dir, codesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w (check that the state dir is writable)", dir, err)
	}
	c := secret()
	data, _ := json.Marshal(code{Expires: now.Add(CodeTTL)})
	if err := os.WriteFile(filepath.Join(dir, hashName(c)), data, 0o600); err != nil {
		return "", fmt.Errorf("write the sign-in code: %w", err)
	}
	return c, nil
}

// SignInURL is the link that signs a browser in with c.
func SignInURL(base, c string) string {
	return strings.TrimRight(base, "/") + "/web/signin?code=" + url.QueryEscape(c)
}

// RevokeAll signs every browser out; it returns how many sessions ended.
func RevokeAll(stateDir string) (int, error) {
	dir := filepath.Join(stateDir, Dir, sessionsDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}

// useCode consumes a sign-in code: true when it existed and had not
// expired. Removing the file is what makes it one-time.
func (h *Handler) useCode(c string) bool {
	if len(c) != 64 {
		return false
	}
	p := filepath.Join(h.opts.StateDir, Dir, codesDir, hashName(c))
	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	if os.Remove(p) != nil { // another request won
		return false
	}
	var cd code
	return json.Unmarshal(data, &cd) == nil && h.opts.Clock().Before(cd.Expires)
}

// newSession creates a session and returns its cookie value.
func (h *Handler) newSession(agent string) (string, session, error) {
	dir := filepath.Join(h.opts.StateDir, Dir, sessionsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", session{}, err
	}
	now := h.opts.Clock()
	id := secret()
	s := session{Created: now, Expires: now.Add(SessionTTL), CSRF: secret(), Agent: truncate(agent, 200)}
	data, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, hashName(id)), data, 0o600); err != nil {
		return "", session{}, err
	}
	return id, s, nil
}

// sessionOf returns the request's session: its cookie's file, unexpired.
func (h *Handler) sessionOf(r *http.Request) (session, string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || len(c.Value) != 64 {
		return session{}, "", false
	}
	p := filepath.Join(h.opts.StateDir, Dir, sessionsDir, hashName(c.Value))
	data, err := os.ReadFile(p)
	if err != nil {
		return session{}, "", false
	}
	var s session
	if json.Unmarshal(data, &s) != nil || !h.opts.Clock().Before(s.Expires) {
		_ = os.Remove(p)
		return session{}, "", false
	}
	return s, p, true
}

// bearer reports whether the request carries the server's bearer token.
func (h *Handler) bearer(r *http.Request) bool {
	if h.opts.Token == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(h.opts.Token))
	return ok && subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sameOrigin: a state-changing request must come from this page: its
// Origin (or, without one, its Referer) is this server's own.
func sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return strings.EqualFold(u.Host, r.Host) && (u.Scheme == scheme || u.Scheme == "https")
}

func csrfOK(s session, r *http.Request) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
