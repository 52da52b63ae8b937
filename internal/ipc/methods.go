package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/audit"
	"github.com/system3-dev/system3/internal/facade"
	"github.com/system3-dev/system3/monitor/hooks"
	"github.com/system3-dev/system3/tasks"
)

// A Method is one method of [facade.Service], described once: its name on
// the socket, how its arguments travel, whether a call whose reply was lost
// may be made again, and how to call it on any Service. The socket's
// client ([Client]) and server ([Server]), the failover ([Failover]) and
// any forwarding Service ([Forwarding]) are all driven by this table, so a
// new service method is written in facade.Service (or api.Service), in its
// implementation and here, and every process reaches it.
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
	call func(ctx context.Context, svc facade.Service, args any) (any, error)
	// local prepares the arguments in the calling process before they
	// cross to another (a repository given as the working directory
	// becomes its absolute path), for the client.
	local func(args any) (any, error)
	// progressOf returns the callback the arguments carry for progress
	// (nil: none), for the client; withProgress sets it, for the server,
	// which relays each call as a progress line before the reply.
	progressOf   func(args any) func(step, message string)
	withProgress func(args any, fn func(step, message string)) any
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
	// action reaches a pane, or records or starts something that a second
	// call would do twice (a spawn, an outcome): a lost reply may hide an
	// action that happened, so it runs again only when it was never sent.
	action
	// stream replies {"ok":true}, then one item per line.
	stream
)

// Call runs the method on svc with args (the arguments' type is the
// method's own; nil for none).
func (m *Method) Call(ctx context.Context, svc facade.Service, args any) (any, error) {
	return m.call(ctx, svc, args)
}

// String is the method's name.
func (m *Method) String() string { return m.Name }

// sentAtMostOnce reports whether a call whose reply was lost must not be
// made again.
func (m *Method) sentAtMostOnce() bool { return m.kind == action }

// The methods of api.Service.
var (
	mSnapshot = unary("snapshot", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) (api.Snapshot, error) {
		return s.Snapshot(ctx)
	})
	// mWatch sends the registry's status updates only to a client that
	// says it takes them (request.Statuses).
	mWatch = streamed("watch", watchArgs, func(s facade.Service, ctx context.Context, w watchOpts) (<-chan api.Update, error) {
		ch, err := s.Watch(ctx)
		if err != nil || w.statuses {
			return ch, err
		}
		return sessionsOnly(ctx, ch), nil
	})
	mWakes          = unary("wakes", read, filterArgs, facade.Service.Wakes)
	mWaitWake       = unary("wait_wake", read, filterArgs, facade.Service.WaitWake)
	mSubscribeWakes = streamed("subscribe_wakes", filterArgs, facade.Service.SubscribeWakes)
	// An acknowledgement is recorded as the daemon's word about its peer
	// (what it claims, with its pid), never as the name the peer sends.
	mAck = withPeer(unary("ack", repeatable, ackArgs, func(s facade.Service, ctx context.Context, a ack) (api.Wake, error) {
		return s.Ack(ctx, a.ID, a.By)
	}), originFrom(func(a *ack) *string { return &a.By }))
	mAckAll = withPeer(unary("ack_all", repeatable, byArgs, facade.Service.AckAll),
		func(by string, p Peer) (string, error) { return p.Origin(by), nil })
	mPreview = unary("preview", read, body[api.PreviewRequest](), facade.Service.Preview)
	// mWatchPreview was added within v2: a daemon that predates it
	// answers bad_request "unknown method", which the client turns into
	// an error matching facade.ErrUnavailable.
	mWatchPreview = streamed("watch_preview", body[api.PreviewRequest](), facade.Service.WatchPreview)
	mTaskLists    = unary("task_lists", read, idArgs, facade.Service.TaskLists)
	// mTask was added within v2: a daemon that predates it answers
	// bad_request "unknown method".
	mTask      = unary("task", read, body[api.TaskRequest](), facade.Service.Task)
	mInject    = withPeer(unary("inject", action, body[api.InjectRequest](), facade.Service.Inject), originFrom(func(r *api.InjectRequest) *string { return &r.Origin }))
	mKeys      = withPeer(unary("keys", action, body[api.KeysRequest](), facade.Service.SendKeys), originFrom(func(r *api.KeysRequest) *string { return &r.Origin }))
	mAnswer    = withPeer(unary("answer", action, body[api.AnswerRequest](), facade.Service.Answer), originFrom(func(r *api.AnswerRequest) *string { return &r.Origin }))
	mInterrupt = withPeer(unary("interrupt", action, body[api.InterruptRequest](), facade.Service.Interrupt), originFrom(func(r *api.InterruptRequest) *string { return &r.Origin }))
	mAudit     = withPeer(unary("audit", repeatable, body[audit.Entry](), noResult(facade.Service.Audit)), auditFromPeer)
	// mHook delivers a Claude Code hook event and returns the daemon's
	// reply for Claude Code. Added within v2: a daemon that predates it
	// answers bad_request "unknown method", and `system3 hook` then spools
	// the event; one that predates replies answers with no result, read as
	// an empty reply.
	mHook = withPeer(unary("hook", repeatable, body[hooks.Event](), facade.Service.Hook),
		func(ev hooks.Event, p Peer) (hooks.Event, error) {
			ev.Sender = hooks.Sender{Via: hooks.ViaSocket, PID: p.PID, Exe: p.Exe}
			return ev, nil
		})
	// mLink is repeatable: the same link made twice is one link.
	mLink = withPeer(unary("link", repeatable, body[api.LinkRequest](), facade.Service.Link), originFrom(func(r *api.LinkRequest) *string { return &r.Origin }))
	// mAllow asks the policy about a spawn or stop. It runs again like a
	// read: the action that follows goes to the same process. Added within
	// v2: a daemon that predates it answers bad_request "unknown method",
	// and the action is refused.
	mAllow = withPeer(unary("allow", repeatable, body[api.AllowRequest](), noResult(facade.Service.Allow)), originFrom(func(r *api.AllowRequest) *string { return &r.Origin }))
)

// The methods of the orchestrators, the learning store and the coach
// (facade.Service), added within v2: a daemon that predates them answers
// bad_request "unknown method".
var (
	mFeatures = unary("features", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) (facade.Features, error) {
		return s.Features(ctx)
	})
	// mSpawn, mRestore and mFinish report their steps as progress lines.
	// A spawn given a command line carries it in the body's
	// "command_line"; the daemon runs it only for a client that claims to
	// be the operator's CLI (lifecycle checks the claim).
	mSpawn = withProgress(withLocal(withPeer(unary("spawn", action, bodyVia(toSpawnWire, fromSpawnWire), facade.Service.Spawn),
		originFrom(func(r *api.SpawnRequest) *string { return &r.Origin })),
		func(r api.SpawnRequest) (api.SpawnRequest, error) { return r, absRepo(&r.Repo) }),
		func(r *api.SpawnRequest) *func(string, string) { return &r.Progress })
	mStop = withLocal(withPeer(unary("stop", action, body[api.StopRequest](), facade.Service.Stop),
		originFrom(func(r *api.StopRequest) *string { return &r.Origin })),
		func(r api.StopRequest) (api.StopRequest, error) { return r, absRepoGiven(&r.Repo) })
	mRestore = withProgress(withPeer(unary("restore", action, body[api.RestoreRequest](), facade.Service.Restore),
		originFrom(func(r *api.RestoreRequest) *string { return &r.Origin })),
		func(r *api.RestoreRequest) *func(string, string) { return &r.Progress })
	mFinish = withProgress(withLocal(withPeer(unary("finish", action, body[api.FinishRequest](), facade.Service.Finish),
		originFrom(func(r *api.FinishRequest) *string { return &r.Origin })),
		func(r api.FinishRequest) (api.FinishRequest, error) { return r, absRepoGiven(&r.Repo) }),
		func(r *api.FinishRequest) *func(string, string) { return &r.Progress })
	mAgents = unary("agents", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) ([]string, error) {
		return s.Agents(ctx)
	})

	// mReportOutcome records: a second call would record it twice.
	// mReportOutcome's reporter is the peer, whom the policy judges.
	mReportOutcome = withPeer(unary("report_outcome", action, body[api.Outcome](), facade.Service.ReportOutcome),
		originFrom(func(o *api.Outcome) *string { return &o.ReportedBy }))
	mCapabilities = unary("capabilities", read, body[capabilityArgs](), func(s facade.Service, ctx context.Context, a capabilityArgs) ([]api.Capability, error) {
		return s.Capabilities(ctx, a.Capability, a.Domain)
	})
	mReflect = unary("reflect", read, body[reflectArgs](), func(s facade.Service, ctx context.Context, a reflectArgs) (api.Reflection, error) {
		return s.Reflect(ctx, a.Query, a.About, a.Budget)
	})
	mLearnings     = unary("learnings", read, body[int](), facade.Service.Learnings)
	mOutcomes      = unary("outcomes", read, body[api.OutcomeFilter](), facade.Service.Outcomes)
	mListLearnings = unary("list_learnings", read, body[api.LearningFilter](), facade.Service.ListLearnings)
	// mDeleteLearnings's asker is the peer, whom the policy judges and the
	// audit names; a second call would find the learnings gone.
	mDeleteLearnings = withPeer(unary("delete_learnings", action, body[api.LearnDeleteRequest](), facade.Service.DeleteLearnings),
		originFrom(func(r *api.LearnDeleteRequest) *string { return &r.By }))

	mPatternInfos = unary("patterns", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) ([]api.PatternInfo, error) {
		return s.PatternInfos(ctx)
	})
	mPatternInfo  = unary("pattern", read, idArgs, facade.Service.PatternInfo)
	mActiveAlerts = unary("active_alerts", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) ([]api.CoachAlert, error) {
		return s.ActiveAlerts(ctx)
	})
	mHistory = unary("alert_history", read, body[api.CoachHistoryQuery](), facade.Service.History)
	mStats   = unary("intervention_stats", read, body[statsArgs](), func(s facade.Service, ctx context.Context, a statsArgs) ([]api.CoachStats, error) {
		return s.Stats(ctx, a.Pattern, a.Context)
	})
	mDirectives = unary("directives", read, noArgs, func(s facade.Service, ctx context.Context, _ struct{}) (api.DirectivesView, error) {
		return s.Directives(ctx)
	})
	// mRequestIntervention may type a reminder: its requester is the peer.
	mRequestIntervention = withPeer(unary("request_intervention", action, body[api.InterventionRequest](), facade.Service.RequestIntervention),
		originFrom(func(r *api.InterventionRequest) *string { return &r.By }))
	mReportIntervention = withPeer(unary("report_intervention", action, body[api.CoachReport](), facade.Service.ReportIntervention),
		originFrom(func(r *api.CoachReport) *string { return &r.By }))
	mRemind = withPeer(unary("remind", action, body[facade.RemindRequest](), facade.Service.Remind),
		originFrom(func(r *facade.RemindRequest) *string { return &r.Origin }))
)

// Arguments of the methods that take more than one.
type (
	capabilityArgs struct {
		Capability string `json:"capability"`
		Domain     string `json:"domain,omitempty"`
	}
	reflectArgs struct {
		Query  string     `json:"query"`
		About  string     `json:"about,omitempty"`
		Budget api.Budget `json:"budget,omitempty"`
	}
	statsArgs struct {
		Pattern string `json:"pattern"`
		Context string `json:"context,omitempty"`
	}
	// spawnWire is a spawn request as it travels: its command line, which
	// the request's own JSON form leaves out, beside it.
	spawnWire struct {
		api.SpawnRequest
		CommandLine string `json:"command_line,omitempty"`
	}
)

func toSpawnWire(r api.SpawnRequest) spawnWire { return spawnWire{r, r.Command} }

func fromSpawnWire(w spawnWire) api.SpawnRequest {
	r := w.SpawnRequest
	r.Command = w.CommandLine
	return r
}

// absRepo makes a repository the calling process names (empty: its
// working directory) absolute, since the daemon runs elsewhere.
func absRepo(repo *string) error {
	dir := *repo
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%w: repository %q: %v", api.ErrBadRequest, dir, err)
	}
	*repo = abs
	return nil
}

// absRepoGiven is absRepo for a repository that is only a fallback: an
// empty one stays empty.
func absRepoGiven(repo *string) error {
	if *repo == "" {
		return nil
	}
	return absRepo(repo)
}

// methods holds every Method by name, for the server.
var methods = func() map[string]*Method {
	all := []*Method{mSnapshot, mWatch, mWakes, mWaitWake, mSubscribeWakes, mAck, mAckAll, mPreview, mWatchPreview, mTaskLists,
		mTask, mInject, mKeys, mAnswer, mInterrupt, mAudit, mHook, mLink, mAllow,
		mFeatures, mSpawn, mStop, mRestore, mFinish, mAgents,
		mReportOutcome, mCapabilities, mReflect, mLearnings, mOutcomes, mListLearnings, mDeleteLearnings,
		mPatternInfos, mPatternInfo, mActiveAlerts, mHistory, mStats, mDirectives, mRequestIntervention, mReportIntervention, mRemind}
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

// Forwarding returns a facade.Service whose every call is made by invoke,
// with the call's Method and arguments. A decorator (a failover, a proxy)
// is then one function: run m.Call on the service it chooses.
func Forwarding(invoke func(ctx context.Context, m *Method, args any) (any, error)) facade.Service {
	return forward{invoke}
}

// forward is facade.Service made from one invoke function: each method
// names its Method and packs its arguments. Client and Failover embed it.
type forward struct {
	invoke func(ctx context.Context, m *Method, args any) (any, error)
}

var _ facade.Service = forward{}

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
	return as[<-chan api.Update](f.call(ctx, mWatch, watchOpts{statuses: true}))
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

func (f forward) WatchPreview(ctx context.Context, req api.PreviewRequest) (<-chan api.PreviewUpdate, error) {
	return as[<-chan api.PreviewUpdate](f.call(ctx, mWatchPreview, req))
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

func (f forward) Hook(ctx context.Context, ev hooks.Event) (hooks.Reply, error) {
	return as[hooks.Reply](f.call(ctx, mHook, ev))
}

func (f forward) Link(ctx context.Context, req api.LinkRequest) (api.Session, error) {
	return as[api.Session](f.call(ctx, mLink, req))
}

func (f forward) Allow(ctx context.Context, req api.AllowRequest) error {
	_, err := f.call(ctx, mAllow, req)
	return err
}

func (f forward) Features(ctx context.Context) (facade.Features, error) {
	return as[facade.Features](f.call(ctx, mFeatures, struct{}{}))
}

func (f forward) Spawn(ctx context.Context, req api.SpawnRequest) (api.SpawnResult, error) {
	return as[api.SpawnResult](f.call(ctx, mSpawn, req))
}

func (f forward) Stop(ctx context.Context, req api.StopRequest) (api.StopResult, error) {
	return as[api.StopResult](f.call(ctx, mStop, req))
}

func (f forward) Restore(ctx context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	return as[api.RestoreResult](f.call(ctx, mRestore, req))
}

func (f forward) Finish(ctx context.Context, req api.FinishRequest) (api.FinishResult, error) {
	return as[api.FinishResult](f.call(ctx, mFinish, req))
}

func (f forward) Agents(ctx context.Context) ([]string, error) {
	return as[[]string](f.call(ctx, mAgents, struct{}{}))
}

func (f forward) ReportOutcome(ctx context.Context, o api.Outcome) (api.LearnReport, error) {
	return as[api.LearnReport](f.call(ctx, mReportOutcome, o))
}

func (f forward) Capabilities(ctx context.Context, capability, domain string) ([]api.Capability, error) {
	return as[[]api.Capability](f.call(ctx, mCapabilities, capabilityArgs{Capability: capability, Domain: domain}))
}

func (f forward) Reflect(ctx context.Context, query, about string, budget api.Budget) (api.Reflection, error) {
	return as[api.Reflection](f.call(ctx, mReflect, reflectArgs{Query: query, About: about, Budget: budget}))
}

func (f forward) Learnings(ctx context.Context, n int) (api.LearnSummary, error) {
	return as[api.LearnSummary](f.call(ctx, mLearnings, n))
}

func (f forward) Outcomes(ctx context.Context, fl api.OutcomeFilter) ([]api.OutcomeRecord, error) {
	return as[[]api.OutcomeRecord](f.call(ctx, mOutcomes, fl))
}

func (f forward) ListLearnings(ctx context.Context, fl api.LearningFilter) ([]api.LearnItem, error) {
	return as[[]api.LearnItem](f.call(ctx, mListLearnings, fl))
}

func (f forward) DeleteLearnings(ctx context.Context, req api.LearnDeleteRequest) ([]api.LearnItem, error) {
	return as[[]api.LearnItem](f.call(ctx, mDeleteLearnings, req))
}

func (f forward) PatternInfos(ctx context.Context) ([]api.PatternInfo, error) {
	return as[[]api.PatternInfo](f.call(ctx, mPatternInfos, struct{}{}))
}

func (f forward) PatternInfo(ctx context.Context, id string) (api.PatternInfo, error) {
	return as[api.PatternInfo](f.call(ctx, mPatternInfo, id))
}

func (f forward) ActiveAlerts(ctx context.Context) ([]api.CoachAlert, error) {
	return as[[]api.CoachAlert](f.call(ctx, mActiveAlerts, struct{}{}))
}

func (f forward) History(ctx context.Context, q api.CoachHistoryQuery) ([]api.CoachAlert, error) {
	return as[[]api.CoachAlert](f.call(ctx, mHistory, q))
}

func (f forward) Stats(ctx context.Context, pattern, context string) ([]api.CoachStats, error) {
	return as[[]api.CoachStats](f.call(ctx, mStats, statsArgs{Pattern: pattern, Context: context}))
}

func (f forward) Directives(ctx context.Context) (api.DirectivesView, error) {
	return as[api.DirectivesView](f.call(ctx, mDirectives, struct{}{}))
}

func (f forward) RequestIntervention(ctx context.Context, req api.InterventionRequest) (api.InterventionResult, error) {
	return as[api.InterventionResult](f.call(ctx, mRequestIntervention, req))
}

func (f forward) ReportIntervention(ctx context.Context, r api.CoachReport) (api.InterventionStanding, error) {
	return as[api.InterventionStanding](f.call(ctx, mReportIntervention, r))
}

func (f forward) Remind(ctx context.Context, req facade.RemindRequest) (api.ActionResult, error) {
	return as[api.ActionResult](f.call(ctx, mRemind, req))
}
