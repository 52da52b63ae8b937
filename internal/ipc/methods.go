package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/facade"
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
	mAudit     = withPeer(unary("audit", repeatable, body[api.AuditEntry](), noResult(facade.Service.Audit)), auditFromPeer)
	// mHook delivers a Claude Code hook event and returns the daemon's
	// reply for Claude Code. Added within v2: a daemon that predates it
	// answers bad_request "unknown method", and `system3 hook` then spools
	// the event; one that predates replies answers with no result, read as
	// an empty reply.
	mHook = withPeer(unary("hook", repeatable, body[api.HookEvent](), facade.Service.Hook),
		func(ev api.HookEvent, p Peer) (api.HookEvent, error) {
			ev.Sender = api.HookSender{Via: api.ViaSocket, PID: p.PID, Exe: p.Exe}
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

func auditFromPeer(e api.AuditEntry, p Peer) (api.AuditEntry, error) {
	if !clientAuditable[e.Action] {
		return e, fmt.Errorf("%w: the daemon records what it sends into panes itself; a client may record only its own %s", api.ErrBadRequest, "tool_call, spawn and stop entries")
	}
	e.Time, e.Origin = time.Now(), p.Origin(e.Origin)
	return e, nil
}

// Writes are the names of the service's methods that change something,
// sorted: each takes its origin from the peer (withPeer), and the service
// judges each with its policy.
func Writes() []string {
	var ws []string
	for name, m := range methods {
		if m.kind == action || m.kind == repeatable {
			ws = append(ws, name)
		}
	}
	slices.Sort(ws)
	return ws
}
