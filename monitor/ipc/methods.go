package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/system3-dev/system3/monitor/api"
	"github.com/system3-dev/system3/monitor/audit"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tasks"
)

// A Method is one method of [api.Service], described once: its name on
// the socket, how its arguments travel, whether a call whose reply was lost
// may be made again, and how to call it on any Service. The socket's
// client ([Client]) and server ([Server]), the failover ([Failover]) and
// any forwarding Service ([Forwarding]) are all driven by this table, so a
// new service method is written in api.Service, in its implementation
// and here, and every process reaches it.
type Method struct {
	// Name is the method on the socket ("inject").
	Name string
	kind kind
	// body: the arguments travel as the request's body, which the method
	// needs.
	body bool
	// encode puts the arguments into a request, for the client.
	encode func(args any) (request, error)
	// decode takes them out, for the server; a body that does not decode
	// is a bad request.
	decode func(req request) (any, error)
	// peer makes what the arguments say of their origin what the server
	// knows of the process that connected; an error refuses the call.
	peer func(args any, p Peer) (any, error)
	// call runs the method on svc.
	call func(ctx context.Context, svc api.Service, args any) (any, error)
	// result decodes a unary reply's result, for the client.
	result func(raw json.RawMessage) (any, error)
	// open starts a stream over c, for the client.
	open func(c *Client, ctx context.Context, req request) (any, error)
	// serve relays a stream's channel to the connection, for the server.
	serve func(ctx context.Context, w *connWriter, ch any, err error) error
}

// kind says how a method's reply travels and whether a call may be made
// again after its connection was lost.
type kind uint8

const (
	// read changes nothing: it may run again on another service.
	read kind = iota
	// repeatable changes something that a second call leaves as the
	// first left it (an acknowledgement, a link, a policy question), or
	// that is better twice than lost (a hook event, an audit entry): it
	// runs again like a read.
	repeatable
	// action reaches a pane: a lost reply may hide an action that
	// happened, so it runs again only when it was never sent.
	action
	// stream replies {"ok":true}, then one item per line.
	stream
)

// Call runs the method on svc with args (the arguments' type is the
// method's own; nil for none).
func (m *Method) Call(ctx context.Context, svc api.Service, args any) (any, error) {
	return m.call(ctx, svc, args)
}

// String is the method's name.
func (m *Method) String() string { return m.Name }

// sentAtMostOnce reports whether a call whose reply was lost must not be
// made again.
func (m *Method) sentAtMostOnce() bool { return m.kind == action }

// The methods of api.Service.
var (
	mSnapshot = unary("snapshot", read, noArgs, func(s api.Service, ctx context.Context, _ struct{}) (api.Snapshot, error) {
		return s.Snapshot(ctx)
	})
	mWatch = streamed("watch", noArgs, func(s api.Service, ctx context.Context, _ struct{}) (<-chan api.Update, error) {
		return s.Watch(ctx)
	})
	mWakes          = unary("wakes", read, filterArgs, api.Service.Wakes)
	mWaitWake       = unary("wait_wake", read, filterArgs, api.Service.WaitWake)
	mSubscribeWakes = streamed("subscribe_wakes", filterArgs, api.Service.SubscribeWakes)
	mAck            = unary("ack", repeatable, ackArgs, func(s api.Service, ctx context.Context, a ack) (api.Wake, error) {
		return s.Ack(ctx, a.ID, a.By)
	})
	mAckAll    = unary("ack_all", repeatable, byArgs, api.Service.AckAll)
	mPreview   = unary("preview", read, body[api.PreviewRequest](), api.Service.Preview)
	mTaskLists = unary("task_lists", read, idArgs, api.Service.TaskLists)
	// mTask was added within v2: a daemon that predates it answers
	// bad_request "unknown method".
	mTask      = unary("task", read, body[api.TaskRequest](), api.Service.Task)
	mInject    = withPeer(unary("inject", action, body[api.InjectRequest](), api.Service.Inject), originFrom(func(r *api.InjectRequest) *string { return &r.Origin }))
	mKeys      = withPeer(unary("keys", action, body[api.KeysRequest](), api.Service.SendKeys), originFrom(func(r *api.KeysRequest) *string { return &r.Origin }))
	mAnswer    = withPeer(unary("answer", action, body[api.AnswerRequest](), api.Service.Answer), originFrom(func(r *api.AnswerRequest) *string { return &r.Origin }))
	mInterrupt = withPeer(unary("interrupt", action, body[api.InterruptRequest](), api.Service.Interrupt), originFrom(func(r *api.InterruptRequest) *string { return &r.Origin }))
	mAudit     = withPeer(unary("audit", repeatable, body[audit.Entry](), noResult(api.Service.Audit)), auditFromPeer)
	// mHook delivers a Claude Code hook event. Added within v2: a daemon
	// that predates it answers bad_request "unknown method", and `system3
	// hook` then spools the event.
	mHook = withPeer(unary("hook", repeatable, body[hooks.Event](), noResult(api.Service.Hook)),
		func(ev hooks.Event, p Peer) (hooks.Event, error) {
			ev.Sender = hooks.Sender{Via: hooks.ViaSocket, PID: p.PID, Exe: p.Exe}
			return ev, nil
		})
	// mLink is repeatable: the same link made twice is one link.
	mLink = withPeer(unary("link", repeatable, body[api.LinkRequest](), api.Service.Link), originFrom(func(r *api.LinkRequest) *string { return &r.Origin }))
	// mAllow asks the policy about a spawn or stop. It runs again like a
	// read: the action that follows goes to the same process. Added within
	// v2: a daemon that predates it answers bad_request "unknown method",
	// and the action is refused.
	mAllow = withPeer(unary("allow", repeatable, body[api.AllowRequest](), noResult(api.Service.Allow)), originFrom(func(r *api.AllowRequest) *string { return &r.Origin }))
)

// methods holds every Method by name, for the server.
var methods = func() map[string]*Method {
	all := []*Method{mSnapshot, mWatch, mWakes, mWaitWake, mSubscribeWakes, mAck, mAckAll, mPreview, mTaskLists,
		mTask, mInject, mKeys, mAnswer, mInterrupt, mAudit, mHook, mLink, mAllow}
	byName := make(map[string]*Method, len(all))
	for _, m := range all {
		if byName[m.Name] != nil || m.Name == methodPing || m.Name == methodHosts {
			panic("ipc: method " + m.Name + " twice")
		}
		byName[m.Name] = m
	}
	return byName
}()

// Methods of the socket that are not the service's.
const (
	methodPing = "ping"
	// methodHosts returns what the daemon knows of the config's other
	// hosts, which it follows (Server.Hosts). Added within v2: a daemon
	// that predates it answers bad_request "unknown method", and the
	// client asks the hosts itself.
	methodHosts = "hosts"
)

// clientAuditable are the audit actions a client may record over the
// socket: what the client did itself (an MCP tool call it served, a spawn
// or stop it ran). Entries of what reaches a pane (inject, keys, answer,
// interrupt) are written by the service that sends, never taken from a
// client.
var clientAuditable = map[string]bool{"tool_call": true, "spawn": true, "stop": true}

func auditFromPeer(e audit.Entry, p Peer) (audit.Entry, error) {
	if !clientAuditable[e.Action] {
		return e, fmt.Errorf("%w: the daemon records what it sends into panes itself; a client may record only its own %s", api.ErrBadRequest, "tool_call, spawn and stop entries")
	}
	e.Time, e.Origin = time.Now(), p.Origin(e.Origin)
	return e, nil
}

// args is how a method's arguments of type A travel in a request.
type args[A any] struct {
	body   bool
	encode func(A) (request, error)
	decode func(request) (A, error)
}

// ack is Ack's arguments.
type ack struct{ ID, By string }

var (
	noArgs = args[struct{}]{
		encode: func(struct{}) (request, error) { return request{}, nil },
		decode: func(request) (struct{}, error) { return struct{}{}, nil },
	}
	filterArgs = args[api.WakeFilter]{
		encode: func(f api.WakeFilter) (request, error) { return request{Filter: toWire(f)}, nil },
		decode: func(r request) (api.WakeFilter, error) { return r.Filter.filter(), nil },
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
func unary[A, R any](name string, k kind, in args[A], fn func(api.Service, context.Context, A) (R, error)) *Method {
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
func streamed[A, T any](name string, in args[A], fn func(api.Service, context.Context, A) (<-chan T, error)) *Method {
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

func describe[A, R any](name string, k kind, in args[A], fn func(api.Service, context.Context, A) (R, error)) *Method {
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
		call: func(ctx context.Context, svc api.Service, a any) (any, error) {
			v, _ := a.(A)
			return fn(svc, ctx, v)
		},
	}
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
func noResult[A any](fn func(api.Service, context.Context, A) error) func(api.Service, context.Context, A) (struct{}, error) {
	return func(s api.Service, ctx context.Context, a A) (struct{}, error) { return struct{}{}, fn(s, ctx, a) }
}

// Forwarding returns a api.Service whose every call is made by invoke,
// with the call's Method and arguments. A decorator (a failover, a proxy)
// is then one function: run m.Call on the service it chooses.
func Forwarding(invoke func(ctx context.Context, m *Method, args any) (any, error)) api.Service {
	return forward{invoke}
}

// forward is api.Service made from one invoke function: each method
// names its Method and packs its arguments. Client and Failover embed it.
type forward struct {
	invoke func(ctx context.Context, m *Method, args any) (any, error)
}

var _ api.Service = forward{}

// errUnconnected is the error of a Failover used before Connect.
var errUnconnected = errors.New("ipc: the service was used before it was connected")

func (f forward) call(ctx context.Context, m *Method, args any) (any, error) {
	if f.invoke == nil {
		return nil, errUnconnected
	}
	return f.invoke(ctx, m, args)
}

// as returns an invoke's result as the method's result type.
func as[R any](v any, err error) (R, error) {
	r, _ := v.(R)
	return r, err
}

func (f forward) Snapshot(ctx context.Context) (api.Snapshot, error) {
	return as[api.Snapshot](f.call(ctx, mSnapshot, struct{}{}))
}

func (f forward) Watch(ctx context.Context) (<-chan api.Update, error) {
	return as[<-chan api.Update](f.call(ctx, mWatch, struct{}{}))
}

func (f forward) Wakes(ctx context.Context, fl api.WakeFilter) ([]api.Wake, error) {
	return as[[]api.Wake](f.call(ctx, mWakes, fl))
}

func (f forward) WaitWake(ctx context.Context, fl api.WakeFilter) (api.Wake, error) {
	return as[api.Wake](f.call(ctx, mWaitWake, fl))
}

func (f forward) SubscribeWakes(ctx context.Context, fl api.WakeFilter) (<-chan api.WakeMessage, error) {
	return as[<-chan api.WakeMessage](f.call(ctx, mSubscribeWakes, fl))
}

func (f forward) Ack(ctx context.Context, id, by string) (api.Wake, error) {
	return as[api.Wake](f.call(ctx, mAck, ack{ID: id, By: by}))
}

func (f forward) AckAll(ctx context.Context, by string) ([]api.Wake, error) {
	return as[[]api.Wake](f.call(ctx, mAckAll, by))
}

func (f forward) Preview(ctx context.Context, req api.PreviewRequest) (api.Preview, error) {
	return as[api.Preview](f.call(ctx, mPreview, req))
}

func (f forward) TaskLists(ctx context.Context, id string) ([]tasks.ListDoc, error) {
	return as[[]tasks.ListDoc](f.call(ctx, mTaskLists, id))
}

func (f forward) Task(ctx context.Context, req api.TaskRequest) (tasks.TaskDoc, error) {
	return as[tasks.TaskDoc](f.call(ctx, mTask, req))
}

func (f forward) Inject(ctx context.Context, req api.InjectRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mInject, req))
}

func (f forward) SendKeys(ctx context.Context, req api.KeysRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mKeys, req))
}

func (f forward) Answer(ctx context.Context, req api.AnswerRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mAnswer, req))
}

func (f forward) Interrupt(ctx context.Context, req api.InterruptRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mInterrupt, req))
}

func (f forward) Audit(ctx context.Context, e audit.Entry) error {
	_, err := f.call(ctx, mAudit, e)
	return err
}

func (f forward) Hook(ctx context.Context, ev hooks.Event) error {
	_, err := f.call(ctx, mHook, ev)
	return err
}

func (f forward) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	return as[api.Session](f.call(ctx, mLink, req))
}

func (f forward) Allow(ctx context.Context, req api.AllowRequest) error {
	_, err := f.call(ctx, mAllow, req)
	return err
}
