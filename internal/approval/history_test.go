package approval

import (
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

func TestFromWakes(t *testing.T) {
	at := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	ws := []api.Wake{
		{ID: "w1", Time: at, Reason: api.ReasonAwaitingInput, Kind: "permission", Agent: "claude", Session: "api",
			Details: "Bash command · go test ./...", Resolved: true, Resolution: "answered by cli: Yes, and don't ask again for: go test *"},
		{ID: "w2", Reason: api.ReasonAwaitingInput, Kind: "permission", Details: "Bash command · make build · && make deploy",
			Resolved: true, Resolution: "answered by mcp:claude-code: No"},
		{ID: "w3", Reason: api.ReasonAwaitingInput, Kind: "permission",
			Evidence: api.Evidence{Source: "hook", Lines: []string{"PermissionRequest: Bash: npm ci · npm test"}}, Resolved: true, Resolution: "the prompt changed"},
		{ID: "w4", Reason: api.ReasonAwaitingInput, Kind: "question", Details: "Bash command · x"},
		{ID: "w5", Reason: api.ReasonSessionIdle, Details: "Bash command · x"},
		{ID: "w6", Reason: api.ReasonAwaitingInput, Kind: "permission", Details: "Fetch · https://pkg.go.dev/fmt · Claude wants to fetch content",
			Resolved: true, Resolution: "answered by socket:pid=1,exe=/x,agent=claude:2: 1. Yes"},
	}
	rs := FromWakes(ws)
	if len(rs) != 4 {
		t.Fatalf("records %+v", rs)
	}
	want := []struct {
		tool, summary string
		exact         bool
		outcome       Decision
		by            string
	}{
		{"Bash", "go test ./...", true, Allow, "cli"},
		{"Bash", "make build\n&& make deploy", false, Deny, "mcp:claude-code"},
		{"Bash", "npm ci · npm test", false, None, ""},
		{"WebFetch", "https://pkg.go.dev/fmt", true, Allow, "socket:pid=1,exe=/x,agent=claude:2"},
	}
	for i, w := range want {
		r := rs[i]
		if r.Request.Tool != w.tool || r.Request.Summary() != w.summary || r.Exact != w.exact || r.Outcome != w.outcome || r.By != w.by {
			t.Errorf("record %d = %+v (summary %q), want %+v", i, r, r.Request.Summary(), w)
		}
	}
	if rs[0].Request.Agent != "claude" || rs[0].Request.Session != "api" || !rs[0].Time.Equal(at) || rs[0].ID != "w1" {
		t.Errorf("record 0 = %+v", rs[0])
	}
}

// An audit entry written for a decision reads back as the request, its
// outcome, and who decided.
func TestAuditEntryRoundTrip(t *testing.T) {
	req := bash("go test ./... && rm -rf /")
	v := Verdict{Decision: Deny, Rule: "no-rm-rf", Message: "no"}
	e := AuditEntry(req, v, Deny, api.PolicyOrigin, "%3", 1500*time.Millisecond)
	if e.Action != AuditAction || e.Decision != "deny" || e.Rule != "no-rm-rf" || e.WaitedMS != 1500 || e.Result != "denied: no" || e.Target != "work" {
		t.Fatalf("entry %+v", e)
	}
	nobody := AuditEntry(bash("ls"), Verdict{Decision: Ask, Rule: "ask"}, None, "", "%3", time.Second)
	rs := FromAudit([]api.AuditEntry{e, nobody, {Action: "inject"}})
	if len(rs) != 2 || rs[0].Request.Command() != "go test ./... && rm -rf /" || rs[0].Outcome != Deny || rs[0].By != api.PolicyOrigin || !rs[0].Exact {
		t.Fatalf("records %+v", rs)
	}
	if rs[1].Outcome != None || rs[1].By != "" || nobody.Origin != "nobody" || nobody.Result == "" {
		t.Fatalf("unanswered ask: %+v, entry %+v", rs[1], nobody)
	}
}

func TestCommandPrefix(t *testing.T) {
	for part, want := range map[string]string{
		"go test ./...":               "go test",
		"go test":                     "go test",
		"npm run lint --fix":          "npm run lint",
		"docker compose up -d web db": "docker compose up",
		"ls -la":                      "ls",
		"make":                        "make",
		"FOO=1 make":                  "",
		"./deploy.sh --prod":          "",
		"git push origin main":        "git push",
	} {
		if got := CommandPrefix(part); got != want {
			t.Errorf("CommandPrefix(%q) = %q, want %q", part, got, want)
		}
	}
}
