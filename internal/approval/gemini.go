package approval

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// geminiTools are the Gemini CLI's tools (0.61) by the names the policy
// knows them by, Claude Code's: a rule with a command glob decides
// Gemini's shell commands, one with paths its writes and edits. Their
// inputs already have the fields the policy reads (command, file_path,
// old_string, new_string, content), but for web_fetch, whose prompt holds
// the URLs (FromGemini adds them).
var geminiTools = map[string]string{
	"run_shell_command": "Bash",
	"write_file":        "Write",
	"replace":           "Edit",
	"read_file":         "Read",
	"web_fetch":         "WebFetch",
	"google_web_search": "WebSearch",
}

// FromGemini is a tool call the Gemini CLI's BeforeTool hook delivered,
// in the policy's words: its tool named as Claude Code names the like
// (geminiTools; an MCP tool, mcp_<server>_<tool> to Gemini, as
// mcp__server__tool from the hook's mcp_context: mcpServer and mcpTool),
// Gemini's own name kept as AgentTool. A web_fetch gets the URLs of its
// prompt, as Gemini reads them, as "url" (the first) and "urls" (all,
// when there are several: each is decided, see Decide). A tool the
// policy has no name for keeps Gemini's (activate_skill).
func FromGemini(req Request, mcpServer, mcpTool string) Request {
	native := req.Tool
	switch {
	case geminiTools[native] != "":
		req.Tool = geminiTools[native]
	case mcpServer != "" && mcpTool != "":
		req.Tool = "mcp__" + mcpServer + "__" + mcpTool
	default:
		return req
	}
	req.AgentTool = native
	if native == "web_fetch" {
		req.Input = withURLs(req.Input)
	}
	return req
}

// withURLs adds to a web_fetch's input the http and https URLs of its
// prompt, read as Gemini reads them: the words that hold "://". A word Go
// cannot read as a URL (Gemini's reader may take it) is kept as it is: it
// has no host, so no host rule allows it.
func withURLs(input json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	if _, ok := m["url"]; ok {
		return input
	}
	prompt, _ := m["prompt"].(string)
	var urls []string
	for _, w := range strings.Fields(prompt) {
		if !strings.Contains(w, "://") {
			continue
		}
		if u, err := url.Parse(w); err == nil && u.Scheme != "http" && u.Scheme != "https" {
			continue // Gemini fetches http and https only
		}
		if !slices.Contains(urls, w) {
			urls = append(urls, w)
		}
	}
	if len(urls) == 0 {
		return input
	}
	m["url"] = urls[0]
	if len(urls) > 1 {
		m["urls"] = urls
	}
	b, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return b
}

// urls are the URLs of a fetch of several (FromGemini), nil otherwise.
func (r Request) urls() []string {
	if !slices.Contains(fetchTools, r.Tool) {
		return nil
	}
	var m struct {
		URLs []string `json:"urls"`
	}
	if json.Unmarshal(r.Input, &m) != nil || len(m.URLs) < 2 {
		return nil
	}
	return m.URLs
}

// decideEach decides a fetch of several URLs URL by URL, as a shell
// command is decided part by part: a deny or an ask of one URL is the
// verdict (deny beats ask); an allow applies only when every URL is
// allowed.
func (p *Policy) decideEach(req Request, urls []string) Verdict {
	var out Verdict
	var names []string
	why := ""
	for _, u := range urls {
		one := req
		one.Input, _ = json.Marshal(map[string]string{"url": u})
		v := p.decide(one)
		switch v.Decision {
		case Deny, Ask:
			if v.Decision.strength() > out.Decision.strength() {
				out = v
			}
		case Allow:
			for _, n := range strings.Split(v.Rule, ", ") {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		default:
			if why == "" {
				why = "no allow rule covers " + quote(u)
			}
		}
	}
	switch {
	case out.Decision != None:
		return out
	case why != "":
		return Verdict{Why: why}
	}
	return Verdict{Decision: Allow, Rule: strings.Join(names, ", ")}
}
