package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/system3-dev/system3/internal/api"
)

// Resource URIs of behaviour patterns.
const (
	PatternsURI        = "system3://patterns"
	PatternURITemplate = "system3://patterns/{id}"
	ActiveAlertsURI    = "system3://alerts/active"
	DirectivesURI      = "system3://directives"
	patternURIPrefix   = "system3://patterns/"
)

// CoachResources lists the behaviour-pattern resources, offered when the
// server has a Coach.
func CoachResources() []ResourceDef {
	return []ResourceDef{
		{URI: PatternsURI, Name: "patterns", Description: "Every behaviour pattern in force (from the rules files): its trigger, threshold, window, preventive and auto_send settings, interventions with their shown/worked counts and effectiveness (the chosen one marked), the CLAUDE.md directive it quotes with how it was linked (explicit, or a text match and its score), and its open alerts."},
		{URI: PatternURITemplate, Name: "pattern", Template: true, Description: "One behaviour pattern by id, as in system3://patterns, with its 20 most recent alerts."},
		{URI: ActiveAlertsURI, Name: "active alerts", Description: "The open alerts, oldest first: pattern, session and pane, what repeats and how often, the composed reminder, and whether it was sent and is being measured."},
		{URI: DirectivesURI, Name: "directives", Description: "The user's directives, split from ~/.claude/CLAUDE.md and the project's CLAUDE.md and .claude/CLAUDE.md (id, file, line, heading, text), and which directive each pattern is linked to."},
	}
}

func (s *Server) addCoachResources() {
	rs := CoachResources()
	s.mcp.AddResource(mcp.NewResource(PatternsURI, rs[0].Name,
		mcp.WithResourceTitle("Behaviour patterns"), mcp.WithResourceDescription(rs[0].Description), mcp.WithMIMEType("application/json")),
		s.readPatterns)
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(PatternURITemplate, rs[1].Name,
		mcp.WithTemplateTitle("One behaviour pattern"), mcp.WithTemplateDescription(rs[1].Description), mcp.WithTemplateMIMEType("application/json")),
		s.readPattern)
	s.mcp.AddResource(mcp.NewResource(ActiveAlertsURI, rs[2].Name,
		mcp.WithResourceTitle("Open pattern alerts"), mcp.WithResourceDescription(rs[2].Description), mcp.WithMIMEType("application/json")),
		s.readActiveAlerts)
	s.mcp.AddResource(mcp.NewResource(DirectivesURI, rs[3].Name,
		mcp.WithResourceTitle("CLAUDE.md directives"), mcp.WithResourceDescription(rs[3].Description), mcp.WithMIMEType("application/json")),
		s.readDirectives)
}

func (s *Server) readPatterns(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	ps, err := s.coach.PatternInfos(cctx)
	if err != nil {
		return nil, err
	}
	if ps == nil {
		ps = []api.PatternInfo{}
	}
	return jsonContents(req.Params.URI, map[string]any{"patterns": ps, "count": len(ps)})
}

func (s *Server) readPattern(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id := templateArg(req, "id", patternURIPrefix)
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	p, err := s.coach.PatternInfo(cctx, id)
	if errors.Is(err, api.ErrCoachNotFound) {
		return nil, fmt.Errorf("%w: no pattern %q; read %s for the ids", server.ErrResourceNotFound, id, PatternsURI)
	}
	if err != nil {
		return nil, err
	}
	recent, err := s.coach.History(cctx, api.CoachHistoryQuery{Pattern: id, Limit: 20})
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, map[string]any{"pattern": p, "recent_alerts": recent})
}

func (s *Server) readActiveAlerts(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	as, err := s.coach.ActiveAlerts(cctx)
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, map[string]any{"alerts": as, "count": len(as)})
}

func (s *Server) readDirectives(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	cctx, cancel := withTimeout(ctx, callTimeout)
	defer cancel()
	v, err := s.coach.Directives(cctx)
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, v)
}
