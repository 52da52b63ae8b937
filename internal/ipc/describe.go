package ipc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
)

// args is how a method's arguments of type A travel in a request.
type args[A any] struct {
	body   bool
	encode func(A) (request, error)
	decode func(request) (A, error)
}

// ack is Ack's arguments.
type ack struct{ ID, By string }

// watchOpts is Watch's arguments on the socket: whether the client takes
// status updates (request.Statuses). This package's client always does.
type watchOpts struct{ statuses bool }

// sessionsOnly relays a watch's updates without the status updates, for a
// client older than them, until in closes or ctx ends.
func sessionsOnly(ctx context.Context, in <-chan api.Update) <-chan api.Update {
	out := make(chan api.Update, streamBuffer)
	go func() {
		defer close(out)
		for u := range in {
			if u.Kind == api.StatusChanged {
				continue
			}
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

var (
	noArgs = args[struct{}]{
		encode: func(struct{}) (request, error) { return request{}, nil },
		decode: func(request) (struct{}, error) { return struct{}{}, nil },
	}
	filterArgs = args[api.WakeFilter]{
		encode: func(f api.WakeFilter) (request, error) { return request{Filter: toWire(f)}, nil },
		decode: func(r request) (api.WakeFilter, error) { return r.Filter.filter(), nil },
	}
	watchArgs = args[watchOpts]{
		encode: func(w watchOpts) (request, error) { return request{Statuses: w.statuses}, nil },
		decode: func(r request) (watchOpts, error) { return watchOpts{statuses: r.Statuses}, nil },
	}
	ackArgs = args[ack]{
		encode: func(a ack) (request, error) { return request{ID: a.ID, By: a.By}, nil },
		decode: func(r request) (ack, error) { return ack{ID: r.ID, By: r.By}, nil },
	}
	byArgs = args[string]{
		encode: func(by string) (request, error) { return request{By: by}, nil },
		decode: func(r request) (string, error) { return r.By, nil },
	}
	idArgs = args[string]{
		encode: func(id string) (request, error) { return request{ID: id}, nil },
		decode: func(r request) (string, error) { return r.ID, nil },
	}
)

// body carries a request struct as the body, in its own JSON form.
func body[A any]() args[A] {
	return args[A]{
		body: true,
		encode: func(a A) (request, error) {
			b, err := json.Marshal(a)
			return request{Body: b}, err
		},
		decode: func(r request) (A, error) {
			var a A
			if err := json.Unmarshal(r.Body, &a); err != nil {
				return a, &Error{Code: codeBadRequest, Message: "malformed request body: " + err.Error()}
			}
			return a, nil
		},
	}
}

// unary describes a method with one reply.
func unary[A, R any](name string, k kind, in args[A], fn func(facade.Service, context.Context, A) (R, error)) *Method {
	m := describe(name, k, in, fn)
	m.result = func(raw json.RawMessage) (any, error) {
		var v R
		if len(raw) == 0 {
			return v, nil
		}
		err := json.Unmarshal(raw, &v)
		return v, err
	}
	return m
}

// streamed describes a method that replies with a stream of T.
func streamed[A, T any](name string, in args[A], fn func(facade.Service, context.Context, A) (<-chan T, error)) *Method {
	m := describe(name, stream, in, fn)
	m.open = func(c *Client, ctx context.Context, req request) (any, error) {
		return openStream[T](c, ctx, req)
	}
	m.serve = func(ctx context.Context, w *connWriter, ch any, err error) error {
		c, _ := ch.(<-chan T)
		return relay(ctx, w, c, err)
	}
	return m
}

func describe[A, R any](name string, k kind, in args[A], fn func(facade.Service, context.Context, A) (R, error)) *Method {
	return &Method{
		Name: name,
		kind: k,
		body: in.body,
		encode: func(a any) (request, error) {
			v, _ := a.(A)
			req, err := in.encode(v)
			if err != nil {
				return req, fmt.Errorf("encode %s request: %w", name, err)
			}
			req.Method = name
			return req, nil
		},
		decode: func(r request) (any, error) { return in.decode(r) },
		call: func(ctx context.Context, svc facade.Service, a any) (any, error) {
			v, _ := a.(A)
			return fn(svc, ctx, v)
		},
	}
}

// bodyVia carries A as the body in the JSON form of W.
func bodyVia[A, W any](to func(A) W, from func(W) A) args[A] {
	in := body[W]()
	return args[A]{
		body:   true,
		encode: func(a A) (request, error) { return in.encode(to(a)) },
		decode: func(r request) (A, error) {
			w, err := in.decode(r)
			return from(w), err
		},
	}
}

// withLocal adds to m how the client prepares its arguments.
func withLocal[A any](m *Method, fn func(A) (A, error)) *Method {
	m.local = func(a any) (any, error) {
		v, _ := a.(A)
		return fn(v)
	}
	return m
}

// withProgress adds to m the progress callback its arguments carry in the
// field field returns.
func withProgress[A any](m *Method, field func(*A) *func(step, message string)) *Method {
	m.progressOf = func(a any) func(string, string) {
		v, _ := a.(A)
		return *field(&v)
	}
	m.withProgress = func(a any, fn func(string, string)) any {
		v, _ := a.(A)
		*field(&v) = fn
		return v
	}
	return m
}

// withPeer adds to m how the server sets its arguments' origin.
func withPeer[A any](m *Method, fn func(A, Peer) (A, error)) *Method {
	m.peer = func(a any, p Peer) (any, error) {
		v, _ := a.(A)
		return fn(v, p)
	}
	return m
}

// originFrom sets the origin a request's field holds to the peer's, the
// request's own kept as its claim.
func originFrom[A any](field func(*A) *string) func(A, Peer) (A, error) {
	return func(a A, p Peer) (A, error) {
		o := field(&a)
		*o = p.Origin(*o)
		return a, nil
	}
}

// noResult adapts a method that returns only an error.
func noResult[A any](fn func(facade.Service, context.Context, A) error) func(facade.Service, context.Context, A) (struct{}, error) {
	return func(s facade.Service, ctx context.Context, a A) (struct{}, error) { return struct{}{}, fn(s, ctx, a) }
}
