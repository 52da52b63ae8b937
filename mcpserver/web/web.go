// Package web is system3's page for a phone or a browser, served under
// /web/ by the same HTTP server as the MCP endpoint: the sessions that need
// a person first, with their question and options as buttons, guidance and
// interrupt, the wakes with ack, and live updates over server-sent events.
// It goes through the same monitor service as the dashboard and MCP (audit
// origin "web"). A browser signs in with a one-time link from `system3 web`
// and keeps a revocable HttpOnly, SameSite=Strict cookie; state-changing
// requests need the session's CSRF token and a same-origin request. Push
// notifications' action links (wake/notify) answer one option of one wake.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/wake/notify"
)

// Service is the part of api.Service the page uses.
type Service interface {
	Snapshot(ctx context.Context) (api.Snapshot, error)
	Watch(ctx context.Context) (<-chan api.Update, error)
	Wakes(ctx context.Context, f api.WakeFilter) ([]api.Wake, error)
	SubscribeWakes(ctx context.Context, f api.WakeFilter) (<-chan api.WakeMessage, error)
	Ack(ctx context.Context, id, by string) (api.Wake, error)
	Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error)
	Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error)
	Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error)
}

var _ Service = api.Service(nil)

// Origins written to the audit log.
const (
	Origin       = "web"
	ActionOrigin = "web:action"
)

// Prefix is where the page is mounted.
const Prefix = "/web/"

const (
	callTimeout = 30 * time.Second
	maxForm     = 64 << 10
	sseDebounce = 200 * time.Millisecond
	sseKeep     = 25 * time.Second
)

// Options configure a Handler.
type Options struct {
	// StateDir holds sign-in codes and sessions (web/).
	StateDir string
	// Signer checks push action links; nil: they are refused.
	Signer *notify.Signer
	// Token is the server's bearer token, accepted instead of a cookie
	// (never for the page's forms, which need the cookie's CSRF token).
	Token string
	Log   *slog.Logger
	Clock func() time.Time
}

// Handler serves the page.
type Handler struct {
	svc  Service
	opts Options
	mux  *http.ServeMux
	tpl  *template.Template
	act  sync.Mutex // one push action at a time: a double tap answers once
}

//go:embed page.html
var files embed.FS

// New builds the handler.
func New(svc Service, opts Options) (*Handler, error) {
	if svc == nil || opts.StateDir == "" {
		return nil, errors.New("web: needs a service and a state dir")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	tpl, err := template.New("page.html").Funcs(template.FuncMap{
		"inc":   func(i int) int { return i + 1 },
		"ago":   func(t time.Time) string { return ago(opts.Clock().Sub(t)) },
		"state": func(s api.State) string { return strings.ReplaceAll(string(s), "_", " ") },
	}).ParseFS(files, "page.html")
	if err != nil {
		return nil, err
	}
	h := &Handler{svc: svc, opts: opts, tpl: tpl, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /web/{$}", h.page)
	h.mux.HandleFunc("GET /web/signin", h.signin)
	h.mux.HandleFunc("GET /web/events", h.events)
	h.mux.HandleFunc("POST /web/answer", h.write(h.answer))
	h.mux.HandleFunc("POST /web/inject", h.write(h.inject))
	h.mux.HandleFunc("POST /web/interrupt", h.write(h.interrupt))
	h.mux.HandleFunc("POST /web/ack", h.write(h.ack))
	h.mux.HandleFunc("POST /web/signout", h.write(h.signout))
	h.mux.HandleFunc("POST "+notify.ActionPath, h.action)
	return h, nil
}

// ServeHTTP serves /web/...
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Cache-Control", "no-store")
	// The page's one script carries a nonce (page sets the header again);
	// nothing else may run, even if a screen's text were ever rendered as
	// markup.
	w.Header().Set("Content-Security-Policy", csp(""))
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	h.mux.ServeHTTP(w, r)
}

func csp(nonce string) string {
	script := "'none'"
	if nonce != "" {
		script = "'nonce-" + nonce + "'"
	}
	return "default-src 'none'; script-src " + script + "; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	h.opts.Log.Warn("web: refused", "path", r.URL.Path, "status", code, "why", msg, "remote", r.RemoteAddr)
	if strings.Contains(r.Header.Get("Accept"), "application/json") || r.Header.Get("X-CSRF-Token") != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": msg, "status": code})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

const signInHint = "not signed in: run `system3 web` on the machine system3 runs on and open the link it prints"

// authed: a signed-in browser, or the bearer token.
func (h *Handler) authed(r *http.Request) (session, bool) {
	if s, _, ok := h.sessionOf(r); ok {
		return s, true
	}
	return session{}, h.bearer(r)
}

func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if !h.useCode(r.URL.Query().Get("code")) {
		h.fail(w, r, http.StatusUnauthorized, "this sign-in link is not valid, was used already or has expired: run `system3 web` for a new one")
		return
	}
	id, _, err := h.newSession(r.UserAgent())
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "cannot create the session: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"), MaxAge: int(SessionTTL / time.Second)})
	h.opts.Log.Info("web: signed in", "remote", r.RemoteAddr, "agent", r.UserAgent())
	// A same-origin navigation, so the Strict cookie goes with it.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta http-equiv="refresh" content="0;url=/web/"><title>system3</title><p>Signed in. <a href="/web/">Open system3</a>.`)
}

// write wraps a state-changing handler: a signed-in session, its CSRF
// token and a same-origin request.
func (h *Handler) write(f func(http.ResponseWriter, *http.Request) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, _, ok := h.sessionOf(r)
		if !ok {
			h.fail(w, r, http.StatusUnauthorized, signInHint)
			return
		}
		if !sameOrigin(r) {
			h.fail(w, r, http.StatusForbidden, "refused: the request does not come from system3's own page (Origin "+r.Header.Get("Origin")+")")
			return
		}
		if !csrfOK(s, r) {
			h.fail(w, r, http.StatusForbidden, "refused: missing or wrong CSRF token; reload the page")
			return
		}
		msg, err := f(w, r)
		if err != nil {
			code := http.StatusConflict
			if errors.Is(err, api.ErrBadRequest) || errors.Is(err, api.ErrBadAnswer) || errors.Is(err, api.ErrUnknownTarget) {
				code = http.StatusBadRequest
			}
			h.fail(w, r, code, err.Error())
			return
		}
		if r.Header.Get("X-CSRF-Token") != "" { // the page's fetch
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "message": msg})
			return
		}
		if r.URL.Path == "/web/signout" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "Signed out. Run `system3 web` to sign in again.")
			return
		}
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
	}
}

func ctxFor(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), callTimeout)
}

func describe(res api.ActionResult) string {
	s := res.Action + " sent to " + res.Session
	if res.Option != "" {
		s = "answered “" + res.Option + "” in " + res.Session
	}
	if res.Detail != "" {
		s += " (" + res.Detail + ")"
	}
	return s
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request) (string, error) {
	ctx, cancel := ctxFor(r)
	defer cancel()
	// A session's card names the prompt on screen; an approval policy's
	// ask names its wake.
	res, err := h.svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: r.PostFormValue("pane")}, Wake: r.PostFormValue("wake"),
		Prompt: r.PostFormValue("prompt"), Answer: r.PostFormValue("answer"), Origin: Origin})
	if err != nil {
		return "", err
	}
	return describe(res), nil
}

func (h *Handler) inject(w http.ResponseWriter, r *http.Request) (string, error) {
	ctx, cancel := ctxFor(r)
	defer cancel()
	res, err := h.svc.Inject(ctx, api.InjectRequest{Target: api.Target{Pane: r.PostFormValue("pane")}, Text: r.PostFormValue("text"),
		Urgent: r.PostFormValue("urgent") != "", Origin: Origin})
	if err != nil {
		return "", err
	}
	return "guidance sent to " + res.Session, nil
}

func (h *Handler) interrupt(w http.ResponseWriter, r *http.Request) (string, error) {
	ctx, cancel := ctxFor(r)
	defer cancel()
	res, err := h.svc.Interrupt(ctx, api.InterruptRequest{Target: api.Target{Pane: r.PostFormValue("pane")}, Origin: Origin})
	if err != nil {
		return "", err
	}
	return describe(res), nil
}

func (h *Handler) ack(w http.ResponseWriter, r *http.Request) (string, error) {
	ctx, cancel := ctxFor(r)
	defer cancel()
	ev, err := h.svc.Ack(ctx, r.PostFormValue("id"), Origin)
	if err != nil {
		return "", err
	}
	return "acknowledged " + string(ev.Reason) + " in " + ev.Session, nil
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request) (string, error) {
	if _, p, ok := h.sessionOf(r); ok {
		_ = removeFile(p)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return "signed out", nil
}

// action answers one option of one wake from a push's signed link. The
// link is the credential (no cookie: the push app sends the request); it
// answers only while that wake is open and its prompt, the one the link
// was signed for, is still on screen (the service's compare-and-set).
func (h *Handler) action(w http.ResponseWriter, r *http.Request) {
	if h.opts.Signer == nil {
		h.fail(w, r, http.StatusNotFound, "action links are off: set notify.ntfy.actions_url")
		return
	}
	a, err := h.opts.Signer.Verify(r.URL.Query().Get("t"), h.opts.Clock())
	if err != nil {
		h.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	h.act.Lock()
	defer h.act.Unlock()
	ctx, cancel := ctxFor(r)
	defer cancel()
	evs, err := h.svc.Wakes(ctx, api.AllWakes())
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	i := slices.IndexFunc(evs, func(e api.Wake) bool { return e.ID == a.Wake })
	if i < 0 {
		h.fail(w, r, http.StatusNotFound, "that prompt is gone")
		return
	}
	ev := evs[i]
	switch {
	case ev.Resolved:
		h.fail(w, r, http.StatusConflict, "this prompt is resolved ("+ev.Resolution+"); nothing was typed: open the page to see what the agent shows now")
		return
	case ev.Acked:
		h.fail(w, r, http.StatusConflict, "already handled ("+api.ShortOrigin(ev.AckedBy)+"); nothing was typed")
		return
	// An approval policy's ask names no screen: its wake is its request,
	// held at the agent's hook.
	case !ev.PolicyAsk() && (a.Prompt == "" || a.Prompt != ev.Prompt):
		h.fail(w, r, http.StatusConflict, "this link does not name the prompt on screen; nothing was typed: open the page to see it")
		return
	case a.Option > len(ev.Options):
		h.fail(w, r, http.StatusBadRequest, "no such option")
		return
	}
	res, err := h.svc.Answer(ctx, api.AnswerRequest{Target: api.Target{Pane: ev.Pane}, Wake: ev.ID, Prompt: a.Prompt, Answer: strconv.Itoa(a.Option), Origin: ActionOrigin})
	if err != nil {
		h.fail(w, r, http.StatusConflict, err.Error())
		return
	}
	if _, err := h.svc.Ack(ctx, ev.ID, ActionOrigin); err != nil {
		h.opts.Log.Warn("web: ack after an action", "wake", ev.ID, "err", err)
	}
	h.opts.Log.Info("web: push action", "wake", ev.ID, "option", a.Option, "session", ev.Session)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, describe(res))
}
