package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// view is what the page shows.
type view struct {
	CSRF    string
	Nonce   string
	Problem string
	Running bool
	Need    []api.Session
	Others  []api.Session
	Wakes   []api.Wake
	// Asks are the approval policy's open asks, by pane: a request held
	// at the agent's hook, answered on the ask's wake.
	Asks map[string]api.Wake
	// NeedText says how many wakes need a person, in the words every
	// view uses (api.NeedingPersonText).
	NeedText string
	Taken    time.Time
	Err      string
}

func (h *Handler) view(ctx context.Context, csrf string) view {
	v := view{CSRF: csrf}
	snap, err := h.svc.Snapshot(ctx)
	if err != nil {
		v.Err = err.Error()
		return v
	}
	v.Problem, v.Running, v.Taken = snap.Problem, snap.Running, snap.Taken
	// Acknowledged wakes too: an acknowledged ask still holds its agent.
	evs, err := h.svc.Wakes(ctx, api.WakeFilter{IncludeAcked: true})
	if err != nil {
		v.Err = err.Error()
	}
	for _, e := range evs {
		if e.PolicyAsk() && !e.Resolved {
			if v.Asks == nil {
				v.Asks = map[string]api.Wake{}
			}
			v.Asks[e.Pane] = e
		}
	}
	for _, s := range snap.Sessions {
		if _, asked := v.Asks[s.Pane]; asked || s.NeedsPerson() {
			v.Need = append(v.Need, s)
		} else {
			v.Others = append(v.Others, s)
		}
	}
	v.NeedText = api.NeedingPersonText(api.NeedingPerson(evs))
	// Newest first, and not an endless list on a phone.
	for i := len(evs) - 1; i >= 0 && len(v.Wakes) < 50; i-- {
		if !evs[i].Acked {
			v.Wakes = append(v.Wakes, evs[i])
		}
	}
	return v
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authed(r)
	if !ok {
		h.fail(w, r, http.StatusUnauthorized, signInHint)
		return
	}
	ctx, cancel := ctxFor(r)
	defer cancel()
	var b bytes.Buffer
	v := h.view(ctx, s.CSRF)
	v.Nonce = secret()[:32]
	w.Header().Set("Content-Security-Policy", csp(v.Nonce))
	if err := h.tpl.ExecuteTemplate(&b, "page.html", v); err != nil {
		h.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// events streams the page's main part, rendered again shortly after each
// change of a session or a wake.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authed(r)
	if !ok {
		h.fail(w, r, http.StatusUnauthorized, signInHint)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		h.fail(w, r, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	updates, err := h.svc.Watch(ctx)
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	wakes, err := h.svc.SubscribeWakes(ctx, api.WakeFilter{IncludeAcked: true})
	if err != nil {
		h.fail(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	last := ""
	send := func() bool {
		vctx, vcancel := context.WithTimeout(ctx, callTimeout)
		defer vcancel()
		var b bytes.Buffer
		if err := h.tpl.ExecuteTemplate(&b, "main", h.view(vctx, s.CSRF)); err != nil {
			return false
		}
		if b.String() == last { // nothing the page shows changed
			return true
		}
		last = b.String()
		data, _ := json.Marshal(last)
		if _, err := fmt.Fprintf(w, "event: update\ndata: %s\n\n", data); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !send() {
		return
	}
	keep := time.NewTicker(sseKeep)
	defer keep.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-updates:
			if !ok {
				return
			}
			if debounce == nil {
				debounce = time.After(sseDebounce)
			}
		case _, ok := <-wakes:
			if !ok {
				return
			}
			if debounce == nil {
				debounce = time.After(sseDebounce)
			}
		case <-debounce:
			debounce = nil
			// A browser signed out (or revoked) stops getting updates.
			if _, authed := h.authed(r); !authed || !send() {
				return
			}
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

func removeFile(p string) error { return os.Remove(p) }

func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
