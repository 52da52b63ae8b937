package approval

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Suggestion is an allow rule proposed from history: what people approved
// again and again and never declined.
type Suggestion struct {
	Rule Rule `json:"rule"`
	// What is what it covers, as a person reads it ("go test *").
	What     string `json:"what"`
	Approved int    `json:"approved"`
	// Declined counts the declines of what the rule would cover: a
	// suggestion is made only when it is 0; the others are reported so a
	// person sees why one was not made.
	Declined int `json:"declined"`
	// By counts the approvals by who gave them.
	By   map[string]int `json:"by"`
	Last time.Time      `json:"last"`
	// Covered names the rule of the policy that already allows it, ""
	// when none does.
	Covered string `json:"covered,omitempty"`
}

// Suggest proposes allow rules from records: for shell commands, the
// prefix of each simple command (its program and subcommands: "go test",
// "npm run lint"); for MCP tools, the server and tool; for fetches, the
// host. A proposal needs min approvals by people (not by a rule) and no
// decline at all: a declined command counts against every prefix in it.
// An approved command with a substitution or a redirection to a file
// does not count, since no allow rule would cover it. Proposals the
// policy already allows are returned marked Covered. The result is sorted
// by approvals, most first; declined ones are returned too, for the
// caller to report or drop.
func Suggest(records []Record, p *Policy) []Suggestion {
	type key struct{ kind, what string }
	acc := map[key]*Suggestion{}
	get := func(k key, build func() Rule) *Suggestion {
		s := acc[k]
		if s == nil {
			s = &Suggestion{Rule: build(), What: k.what, By: map[string]int{}}
			acc[k] = s
		}
		return s
	}
	for _, r := range records {
		if r.Outcome == None || r.By == api.PolicyOrigin {
			continue
		}
		var keys []key
		builds := map[key]func() Rule{}
		switch {
		case r.Request.Command() != "":
			sh := ParseShell(r.Request.Command())
			for _, part := range sh.Parts {
				prefix := CommandPrefix(part)
				if prefix == "" {
					continue
				}
				k := key{"command", prefix + " *"}
				keys = append(keys, k)
				builds[k] = func() Rule {
					return Rule{ID: "suggested-" + slug(prefix), Tools: Strings{"Bash"}, Command: Strings{prefix + " *"}, Decision: Allow}
				}
			}
			if r.Outcome == Allow && (sh.Substitution || sh.Redirect != "" || sh.Err != nil) {
				// An approval no allow rule could stand in for.
				continue
			}
		case r.Request.Host() != "":
			h := r.Request.Host()
			k := key{"host", h}
			keys = append(keys, k)
			builds[k] = func() Rule { return Rule{ID: "suggested-fetch-" + slug(h), Hosts: Strings{h}, Decision: Allow} }
		default:
			server, tool, ok := r.Request.MCP()
			if !ok {
				continue
			}
			k := key{"mcp", server + "/" + tool}
			keys = append(keys, k)
			builds[k] = func() Rule {
				return Rule{ID: "suggested-" + slug(server+"-"+tool), MCPServer: Strings{server}, MCPTool: Strings{tool}, Decision: Allow}
			}
		}
		for _, k := range keys {
			s := get(k, builds[k])
			switch r.Outcome {
			case Allow:
				s.Approved++
				s.By[api.ShortOrigin(r.By)]++
				if r.Time.After(s.Last) {
					s.Last = r.Time
				}
			default:
				s.Declined++
			}
		}
	}
	out := make([]Suggestion, 0, len(acc))
	for _, s := range acc {
		if s.Approved == 0 {
			continue
		}
		probe := Request{Tool: "Bash"}
		switch {
		case len(s.Rule.Command) > 0:
			probe.Input, _ = json.Marshal(map[string]string{"command": strings.TrimSuffix(s.What, " *") + " x"})
		case len(s.Rule.Hosts) > 0:
			probe.Tool = "WebFetch"
			probe.Input, _ = json.Marshal(map[string]string{"url": "https://" + s.What + "/"})
		default:
			probe.Tool = "mcp__" + strings.Replace(s.What, "/", "__", 1)
		}
		if v := p.Decide(probe); v.Decision == Allow {
			s.Covered = v.Rule
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Approved != out[j].Approved {
			return out[i].Approved > out[j].Approved
		}
		return out[i].What < out[j].What
	})
	return out
}

// argLike is a word that is an argument, not a program or subcommand: an
// option, a path, a file, an assignment, a quoted string, a number.
var argLike = regexp.MustCompile(`^[-./~'"$=0-9]|[/.=:@*?\[]`)

// runners are subcommands that run a named thing, so the name belongs to
// the prefix: "npm run lint", "docker compose up", "pnpm exec eslint".
var runners = map[string]bool{"run": true, "exec": true, "compose": true, "x": true, "workspace": true, "script": true}

// CommandPrefix is the program of a simple command and its subcommand, up
// to the first word that reads as an argument: "go test" for "go test
// ./...", "git push" for "git push origin main", and a third word after a
// runner: "npm run lint" for "npm run lint --fix". An environment
// assignment or a word that is not a plain name first gives "".
func CommandPrefix(part string) string {
	words := strings.Fields(part)
	if len(words) == 0 || argLike.MatchString(words[0]) {
		return ""
	}
	n := 1
	if n < len(words) && !argLike.MatchString(words[n]) {
		n++
		if runners[words[1]] && n < len(words) && !argLike.MatchString(words[n]) {
			n++
		}
	}
	return strings.Join(words[:n], " ")
}

// slug makes an id of a prefix: "go test" is "go-test".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// String says in one line how often it was approved, and by whom.
func (s Suggestion) String() string {
	var by []string
	for k, n := range s.By {
		by = append(by, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(by)
	return fmt.Sprintf("approved %s (%s), declined %s", times(s.Approved), strings.Join(by, ", "), times(s.Declined))
}

func times(n int) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
