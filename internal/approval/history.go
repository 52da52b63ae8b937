package approval

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// AuditAction is the audit log's action for a permission request the
// policy was asked about: its entry holds the request (Args, as JSON),
// the decision, the rule, who decided and how long the hook waited.
const AuditAction = "permission"

// AuditEntry is the audit log's entry for a permission request: what the
// policy said (verdict), what was decided and by whom (by: api.PolicyOrigin
// or the origin of whoever answered an ask; "" when nobody decided and the
// agent's own dialog showed), and how long the hook was held.
func AuditEntry(req Request, v Verdict, decided Decision, by, pane string, waited time.Duration) api.AuditEntry {
	args, _ := json.Marshal(req)
	e := api.AuditEntry{Origin: by, Action: AuditAction, Target: req.Session, Pane: pane, Tool: req.Tool, Args: string(args),
		Decision: string(decided), Rule: v.Rule, WaitedMS: waited.Milliseconds(), Sent: decided != None}
	if e.Origin == "" {
		e.Origin = "nobody"
	}
	switch {
	case decided == Deny && v.Decision == Ask:
		e.Result = "asked; denied: " + denyMessage(v)
	case decided == Deny:
		e.Result = "denied: " + denyMessage(v)
	case decided == None && v.Decision == Ask:
		e.Result = "asked; nobody answered in time, so the agent's own dialog showed"
	case decided == None:
		e.Result = "no rule decides; the agent's own dialog showed"
		if v.Why != "" {
			e.Result += " (" + v.Why + ")"
		}
	case v.Decision == Ask:
		e.Result = "asked; " + string(decided)
	default:
		e.Result = string(decided)
	}
	return e
}

func denyMessage(v Verdict) string {
	if v.Message != "" {
		return v.Message
	}
	return "denied"
}

// Record is one permission request from history, and what became of it.
type Record struct {
	Time time.Time `json:"time"`
	// Source is where it was found: "audit" (a request the hook
	// delivered, its input exact) or "wake" (a prompt read from a screen
	// or announced by a hook, its input as shown).
	Source string `json:"source"`
	// ID is the wake's id, or the audit entry's time.
	ID      string  `json:"id,omitempty"`
	Pane    string  `json:"pane,omitempty"`
	Request Request `json:"request"`
	// Exact: the input is the tool's input as the agent sent it; a
	// prompt read from a screen may be wrapped or cut.
	Exact bool `json:"exact"`
	// Outcome is what was decided (allow, deny), "" when the record does
	// not tell (the prompt went away without an answer through system3).
	Outcome Decision `json:"outcome,omitempty"`
	// By is who decided: api.PolicyOrigin, or an origin ("cli",
	// "mcp:<client>", "tui").
	By string `json:"by,omitempty"`
	// Rule is the rule that decided, for a decision the policy made.
	Rule string `json:"rule,omitempty"`
}

// FromAudit reads the permission requests of an audit log's entries.
func FromAudit(entries []api.AuditEntry) []Record {
	var out []Record
	for _, e := range entries {
		if e.Action != AuditAction {
			continue
		}
		var req Request
		if json.Unmarshal([]byte(e.Args), &req) != nil || req.Tool == "" {
			continue
		}
		r := Record{Time: e.Time, Source: "audit", ID: e.Time.Format(time.RFC3339Nano), Pane: e.Pane, Request: req, Exact: true,
			Outcome: Decision(e.Decision), Rule: e.Rule}
		if r.Outcome != None {
			r.By = e.Origin
		}
		out = append(out, r)
	}
	return out
}

// FromWakes reads the permission prompts of awaiting_input wakes: the
// tool and its input from what the screen showed (the wake's details:
// "Bash command · go test ./..."), else from the hook that announced it;
// the outcome from how the wake was resolved ("answered by cli: Yes").
// A prompt a policy decision answered has no wake: the audit log holds it.
func FromWakes(ws []api.Wake) []Record {
	var out []Record
	for _, w := range ws {
		if w.Reason != api.ReasonAwaitingInput || w.Kind != "permission" || w.Evidence.Source == "policy" {
			// A request the policy asked about is in the audit log.
			continue
		}
		req, exact, ok := wakeRequest(w)
		if !ok {
			continue
		}
		req.Agent, req.Session = w.Agent, w.Session
		r := Record{Time: w.Time, Source: "wake", ID: w.ID, Pane: w.Pane, Request: req, Exact: exact}
		r.Outcome, r.By = wakeOutcome(w)
		out = append(out, r)
	}
	return out
}

// headings are the titles Claude Code puts above what a prompt is about,
// by the tool they name.
var headings = []struct{ heading, tool, field string }{
	{"Bash command", "Bash", "command"},
	{"Edit file", "Edit", "file_path"},
	{"Create file", "Write", "file_path"},
	{"Write file", "Write", "file_path"},
	{"Read file", "Read", "file_path"},
	{"Fetch", "WebFetch", "url"},
}

func wakeRequest(w api.Wake) (Request, bool, bool) {
	if w.Details != "" {
		parts := strings.Split(w.Details, " · ")
		for _, h := range headings {
			if !strings.EqualFold(strings.TrimSpace(parts[0]), h.heading) || len(parts) < 2 {
				continue
			}
			rest := parts[1:]
			val := strings.Join(rest, "\n")
			if h.field != "command" {
				val = strings.TrimSpace(rest[0])
			}
			if h.field == "url" {
				if u, err := url.Parse(val); err != nil || u.Host == "" {
					continue
				}
			}
			in, _ := json.Marshal(map[string]string{h.field: val})
			// A screen wraps long lines: a command over one line may be
			// one line wrapped.
			return Request{Tool: h.tool, Input: in}, h.field != "command" || len(rest) == 1, true
		}
	}
	// Announced by the hook: "PermissionRequest: Bash: go test ./...".
	for _, l := range w.Evidence.Lines {
		rest, ok := strings.CutPrefix(l, "PermissionRequest: ")
		if !ok {
			continue
		}
		tool, input, _ := strings.Cut(rest, ": ")
		if tool == "" {
			continue
		}
		field := ""
		for _, h := range headings {
			if h.tool == tool {
				field = h.field
			}
		}
		if field == "" {
			return Request{Tool: tool}, false, true
		}
		in, _ := json.Marshal(map[string]string{field: input})
		// The hook's line is a summary: lines joined, long ones cut.
		return Request{Tool: tool, Input: in}, !strings.Contains(input, " · ") && !strings.HasSuffix(input, "…"), true
	}
	return Request{}, false, false
}

// wakeOutcome reads a wake's resolution: "answered by ORIGIN: OPTION".
func wakeOutcome(w api.Wake) (Decision, string) {
	rest, ok := strings.CutPrefix(w.Resolution, "answered by ")
	if !w.Resolved || !ok {
		return None, ""
	}
	// An option may hold ": " ("Yes, and don't ask again for: make *");
	// an origin does not.
	by, option, _ := strings.Cut(rest, ": ")
	o := strings.ToLower(strings.TrimSpace(option))
	if n := strings.IndexFunc(o, func(r rune) bool { return r < '0' || r > '9' }); n > 0 && strings.HasPrefix(o[n:], ". ") {
		o = o[n+2:] // "1. Yes"
	}
	switch {
	case strings.HasPrefix(o, "yes"), strings.HasPrefix(o, "allow"), strings.HasPrefix(o, "approve"):
		return Allow, by
	case strings.HasPrefix(o, "no"), strings.HasPrefix(o, "deny"), strings.HasPrefix(o, "reject"):
		return Deny, by
	}
	return None, ""
}

// History merges records from the audit log and the wake journal, oldest
// first.
func History(entries []api.AuditEntry, ws []api.Wake) []Record {
	out := append(FromAudit(entries), FromWakes(ws)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}
