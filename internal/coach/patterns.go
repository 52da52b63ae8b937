package coach

import (
	"context"
	"fmt"

	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/monitor/rules"
)

// PatternInfos describes every pattern in force.
func (c *Coach) PatternInfos(ctx context.Context) ([]api.PatternInfo, error) {
	ds, _ := LoadDirectives(c.cfg.Directives)
	var out []api.PatternInfo
	for _, p := range c.Patterns() {
		pi, err := c.patternInfo(ctx, p, ds)
		if err != nil {
			return nil, err
		}
		out = append(out, pi)
	}
	return out, nil
}

// PatternInfo describes one pattern.
func (c *Coach) PatternInfo(ctx context.Context, id string) (api.PatternInfo, error) {
	p, ok := c.Pattern(id)
	if !ok {
		return api.PatternInfo{}, fmt.Errorf("%w: no pattern %q", api.ErrCoachNotFound, id)
	}
	ds, _ := LoadDirectives(c.cfg.Directives)
	return c.patternInfo(ctx, p, ds)
}

func (c *Coach) patternInfo(ctx context.Context, p rules.Pattern, ds []api.Directive) (api.PatternInfo, error) {
	st, err := c.Standings(ctx, p, "")
	if err != nil {
		return api.PatternInfo{}, err
	}
	var open int
	if err := c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM coach_alerts WHERE pattern_id = ? AND status IN ('active', 'sent')`, p.ID).Scan(&open); err != nil {
		return api.PatternInfo{}, fmt.Errorf("read alerts: %w", err)
	}
	return api.PatternInfo{CoachPattern: patternOf(p), Link: LinkDirective(p, ds), Interventions: st, Open: open}, nil
}

// Directives reads the CLAUDE.md files now, with the pattern each
// directive is linked to.
func (c *Coach) Directives() (api.DirectivesView, error) {
	ds, errs := LoadDirectives(c.cfg.Directives)
	v := api.DirectivesView{Files: c.cfg.Directives, Directives: ds, Links: []api.DirectiveLink{}}
	if v.Directives == nil {
		v.Directives = []api.Directive{}
	}
	for _, p := range c.Patterns() {
		v.Links = append(v.Links, LinkDirective(p, ds))
	}
	for _, err := range errs {
		v.Problems = append(v.Problems, err.Error())
	}
	return v, nil
}

// patternOf is p's definition as the vocabulary shows it.
func patternOf(p rules.Pattern) api.CoachPattern {
	cond := func(c *rules.ToolCond) *api.CoachToolCond {
		if c == nil {
			return nil
		}
		return &api.CoachToolCond{Tool: c.Tool, Command: c.Command, File: c.File, Error: c.Error, Failed: c.Failed}
	}
	var ivs []api.CoachIntervention
	if p.Interventions != nil {
		ivs = make([]api.CoachIntervention, len(p.Interventions))
		for i, iv := range p.Interventions {
			ivs[i] = api.CoachIntervention{ID: iv.ID, Suggestion: iv.Suggestion, Expected: iv.Expected}
		}
	}
	return api.CoachPattern{
		ID: p.ID, Name: p.Name, Description: p.Description,
		Trigger:   api.CoachTrigger{Match: *cond(&p.Trigger.Match), After: cond(p.Trigger.After), Reset: cond(p.Trigger.Reset), Same: p.Trigger.Same},
		When:      api.CoachPatternContext{Repos: p.When.Repos, Agents: p.When.Agents, Languages: p.When.Languages},
		Threshold: p.Threshold, Window: p.Window, Preventive: p.Preventive, AutoSend: p.AutoSend,
		Directive: p.Directive, Keywords: p.Keywords, Interventions: ivs, Source: p.Source, Line: p.Line,
	}
}
