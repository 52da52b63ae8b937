package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// Resource URIs.
const (
	SessionsURI        = "system3://sessions"
	SessionURITemplate = "system3://sessions/{name}"
	ActiveWakesURI     = "system3://wakes/active"
	TasksURITemplate   = "system3://tasks/{list}"
	sessionURIPrefix   = "system3://sessions/"
	tasksURIPrefix     = "system3://tasks/"
)

// ResourceDef describes one resource or template, for the docs.
type ResourceDef struct {
	URI         string
	Name        string
	Description string
	Template    bool
}

// Resources lists the resources and templates the server offers.
func Resources() []ResourceDef {
	return []ResourceDef{
		{URI: SessionsURI, Name: "sessions", Description: "Every watched pane, one row each (as list_sessions with include_shells): name, target, pane, agent, status, state, question, task progress. Listed changes are announced with notifications/resources/list_changed when sessions appear or vanish."},
		{URI: SessionURITemplate, Name: "session", Template: true, Description: "One tmux session, by name (percent-encoded): every pane of it with what get_session returns (state, evidence, question, options, tasks, recent wakes, the last 40 screen lines). Each watched session is also listed as a concrete resource."},
		{URI: ActiveWakesURI, Name: "active wakes", Description: "The unacknowledged wakes, oldest first (as list_wakes)."},
		{URI: TasksURITemplate, Name: "task list", Template: true, Description: "One Claude Code task list by id: progress and every task with its status and description (as list_tasks with list)."},
	}
}

func (s *Server) addResources() {
	s.mcp.AddResource(mcp.NewResource(SessionsURI, "sessions",
		mcp.WithResourceTitle("Watched sessions"), mcp.WithResourceDescription(Resources()[0].Description), mcp.WithMIMEType("application/json")),
		s.readSessions)
	s.mcp.AddResource(mcp.NewResource(ActiveWakesURI, "active wakes",
		mcp.WithResourceTitle("Unacknowledged wakes"), mcp.WithResourceDescription(Resources()[2].Description), mcp.WithMIMEType("application/json")),
		s.readActiveWakes)
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(SessionURITemplate, "session",
		mcp.WithTemplateTitle("One tmux session"), mcp.WithTemplateDescription(Resources()[1].Description), mcp.WithTemplateMIMEType("application/json")),
		s.readSession)
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(TasksURITemplate, "task list",
		mcp.WithTemplateTitle("One task list"), mcp.WithTemplateDescription(Resources()[3].Description), mcp.WithTemplateMIMEType("application/json")),
		s.readTaskList)
}

func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: buf.String()}}, nil
}

func (s *Server) readSessions(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	snap, err := s.svc.Snapshot(cctx)
	if err != nil {
		return nil, err
	}
	rows := make([]sessionRow, 0, len(snap.Sessions))
	for _, ss := range snap.Sessions {
		rows = append(rows, rowOf(ss))
	}
	return jsonContents(req.Params.URI, map[string]any{"sessions": rows, "count": len(rows), "problem": snap.Problem})
}

func (s *Server) readActiveWakes(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	evs, err := s.svc.Wakes(cctx, api.WakeFilter{})
	if err != nil {
		return nil, err
	}
	if evs == nil {
		evs = []api.Wake{}
	}
	return jsonContents(req.Params.URI, map[string]any{"wakes": evs, "count": len(evs)})
}

// templateArg is a template variable of a read, percent-decoded.
func templateArg(req mcp.ReadResourceRequest, name, prefix string) string {
	v := ""
	switch a := req.Params.Arguments[name].(type) {
	case string:
		v = a
	case []string:
		if len(a) > 0 {
			v = a[0]
		}
	}
	if v == "" {
		v = strings.TrimPrefix(req.Params.URI, prefix)
	}
	if u, err := url.PathUnescape(v); err == nil {
		v = u
	}
	return v
}

func (s *Server) readSession(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	name := templateArg(req, "name", sessionURIPrefix)
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	snap, err := s.svc.Snapshot(cctx)
	if err != nil {
		return nil, err
	}
	var panes []sessionDetail
	for _, ss := range snap.Sessions {
		if ss.Session != name && ss.Target != name && ss.Pane != name {
			continue
		}
		d, err := sessionDetails(cctx, s.svc, ss, DefaultScreenLines)
		if err != nil {
			return nil, err
		}
		panes = append(panes, d)
	}
	if len(panes) == 0 {
		return nil, fmt.Errorf("%w: no watched session %q; read %s for the names", server.ErrResourceNotFound, name, SessionsURI)
	}
	return jsonContents(req.Params.URI, map[string]any{"name": name, "panes": panes})
}

func (s *Server) readTaskList(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := templateArg(req, "list", tasksURIPrefix)
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	lists, err := s.svc.TaskLists(cctx, id)
	if errors.Is(err, api.ErrUnknownList) || (err == nil && len(lists) == 0) {
		return nil, fmt.Errorf("%w: no task list %q; call list_tasks for the ids", server.ErrResourceNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, listView(lists[0], true))
}

// sessionResourceURI is a tmux session's concrete resource.
func sessionResourceURI(name string) string {
	return sessionURIPrefix + url.PathEscape(name)
}

// Settle time of the resource list: a burst of updates (a session with
// several panes appearing) is announced once.
const resourceSettle = 200 * time.Millisecond

// watchResources keeps one concrete resource per watched tmux session and
// so announces notifications/resources/list_changed when sessions appear
// or vanish. It reads the registry from the service; the registered names
// are only mcp-go's list of resources.
func (s *Server) watchResources(ctx context.Context, registered map[string]bool) {
	defer func() {
		var uris []string
		for n := range registered {
			uris = append(uris, sessionResourceURI(n))
		}
		if len(uris) > 0 {
			s.mcp.DeleteResources(uris...)
		}
	}()
	backoff := api.Backoff{First: 100 * time.Millisecond, Max: 10 * time.Second}
	for ctx.Err() == nil {
		ch, err := s.svc.Watch(ctx)
		if err != nil {
			s.log.Warn("mcp: watch sessions", "err", err)
			if !backoff.Wait(ctx) {
				return
			}
			continue
		}
		backoff.Reset()
		s.reconcileResources(ctx, registered)
		var settle <-chan time.Time
		for open := true; open; {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-ch:
				if !ok {
					open = false
					break
				}
				if u.Kind == api.SessionChanged && registered[u.Session.Session] {
					continue
				}
				if settle == nil {
					settle = time.After(resourceSettle)
				}
			case <-settle:
				settle = nil
				s.reconcileResources(ctx, registered)
			}
		}
		// The service ended the stream (it stopped, or the daemon went
		// away): watch again shortly.
		if !backoff.Wait(ctx) {
			return
		}
	}
}

// primeResources registers the watched sessions before a transport
// serves its first request, so a resources/list right after initialize
// already lists them; watchResources then keeps the list current.
func (s *Server) primeResources(ctx context.Context) map[string]bool {
	registered := map[string]bool{}
	s.reconcileResources(ctx, registered)
	return registered
}

// markMissing runs before mcp-go serves resources/read: a system3 URI
// naming nothing is made one that matches nothing, carrying why, so mcp-go
// answers "resource not found" rather than an internal error, and the
// transport's writer shows the URI and why apart (see missingMark).
func (s *Server) markMissing(ctx context.Context, req *mcp.ReadResourceRequest) {
	uri := req.Params.URI
	var read server.ResourceTemplateHandlerFunc
	switch {
	case strings.HasPrefix(uri, sessionURIPrefix):
		read = s.readSession
	case strings.HasPrefix(uri, tasksURIPrefix):
		read = s.readTaskList
	case strings.HasPrefix(uri, patternURIPrefix) && s.coach != nil:
		read = s.readPattern
	default:
		return
	}
	probe := *req
	probe.Params.Arguments = nil
	if _, err := read(ctx, probe); errors.Is(err, server.ErrResourceNotFound) {
		why := strings.TrimPrefix(err.Error(), server.ErrResourceNotFound.Error()+": ")
		req.Params.URI = uri + missingMark + why
	}
}

// reconcileResources registers the sessions in the registry and drops the
// ones gone. mcp-go announces each change to every client.
func (s *Server) reconcileResources(ctx context.Context, registered map[string]bool) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	snap, err := s.svc.Snapshot(cctx)
	if err != nil {
		s.log.Warn("mcp: snapshot for resources", "err", err)
		return
	}
	now := map[string]api.Session{}
	for _, ss := range snap.Sessions {
		if _, ok := now[ss.Session]; !ok || isAgent(ss) {
			now[ss.Session] = ss
		}
	}
	var gone []string
	for n := range registered {
		if _, ok := now[n]; !ok {
			gone = append(gone, sessionResourceURI(n))
			delete(registered, n)
		}
	}
	var added []server.ServerResource
	names := make([]string, 0, len(now))
	for n := range now {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if registered[n] {
			continue
		}
		registered[n] = true
		ss := now[n]
		desc := fmt.Sprintf("tmux session %s", n)
		if isAgent(ss) {
			desc = fmt.Sprintf("tmux session %s (%s)", n, ss.Agent)
		}
		added = append(added, server.ServerResource{
			Resource: mcp.NewResource(sessionResourceURI(n), "session "+n,
				mcp.WithResourceDescription(desc+": its panes, states, questions, tasks, wakes and screens"), mcp.WithMIMEType("application/json")),
			Handler: s.readSession,
		})
	}
	if len(gone) > 0 {
		s.mcp.DeleteResources(gone...)
	}
	if len(added) > 0 {
		s.mcp.AddResources(added...)
	}
}
