package mcpserver

import (
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Markers around the generated part of docs/mcp.md.
const (
	ReferenceBegin = "<!-- BEGIN GENERATED REFERENCE: go test ./mcpserver -run TestReferenceDoc -update -->"
	ReferenceEnd   = "<!-- END GENERATED REFERENCE -->"
)

// Reference is the Markdown reference of every tool and resource, made
// from the same definitions the server registers.
func (s *Server) Reference() string {
	var b strings.Builder
	b.WriteString("## Tools\n\n")
	b.WriteString("| tool | kind | what it does |\n| --- | --- | --- |\n")
	for _, d := range s.AllTools() {
		kind := "read"
		if d.Write {
			kind = "write"
		}
		first, _, _ := strings.Cut(d.Tool.Description, ". ")
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", d.Tool.Name, d.Tool.Name, kind, mdCell(strings.TrimSuffix(first, ".")+"."))
	}
	b.WriteString("\n`--read-only` (or `mcp.read_only`) registers only the read tools. The behaviour-pattern tools (`query_pattern_history`, `request_intervention`, `report_intervention`) and resources (`system3://patterns`, `system3://alerts/active`, `system3://directives`) are offered when system3 can open its learning database.\n")
	for _, d := range s.AllTools() {
		t := d.Tool
		fmt.Fprintf(&b, "\n### %s\n\n", t.Name)
		fmt.Fprintf(&b, "%s\n\n", t.Description)
		fmt.Fprintf(&b, "*%s.* Annotations: %s.\n\n", t.Annotations.Title, annotations(t.Annotations))
		names := propertyNames(t)
		if len(names) == 0 {
			b.WriteString("No arguments.\n")
			continue
		}
		b.WriteString("| argument | type | required | default | description |\n| --- | --- | --- | --- | --- |\n")
		for _, n := range names {
			p, _ := t.InputSchema.Properties[n].(map[string]any)
			req := ""
			for _, r := range t.InputSchema.Required {
				if r == n {
					req = "yes"
				}
			}
			def := ""
			if v, ok := p["default"]; ok {
				def = fmt.Sprintf("`%v`", v)
			}
			desc, _ := p["description"].(string)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", n, typeText(p), req, def, mdCell(desc))
		}
	}
	p := supervisePrompt()
	b.WriteString("\n## Prompts\n\n| prompt | arguments | what it gives |\n| --- | --- | --- |\n")
	var args []string
	for _, a := range p.Arguments {
		args = append(args, fmt.Sprintf("`%s`: %s", a.Name, a.Description))
	}
	fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Name, mdCell(strings.Join(args, "; ")), mdCell(p.Description))
	b.WriteString("\n## Resources\n\n| URI | what it holds |\n| --- | --- |\n")
	for _, r := range append(Resources(), CoachResources()...) {
		kind := ""
		if r.Template {
			kind = " (template)"
		}
		fmt.Fprintf(&b, "| `%s`%s | %s |\n", r.URI, kind, mdCell(r.Description))
	}
	return b.String()
}

func annotations(a mcp.ToolAnnotation) string {
	var out []string
	flag := func(p *bool, name string) {
		if p != nil {
			out = append(out, fmt.Sprintf("%s %v", name, *p))
		}
	}
	flag(a.ReadOnlyHint, "readOnly")
	flag(a.DestructiveHint, "destructive")
	flag(a.IdempotentHint, "idempotent")
	flag(a.OpenWorldHint, "openWorld")
	return strings.Join(out, ", ")
}

func typeText(p map[string]any) string {
	typ, _ := p["type"].(string)
	var extra []string
	if typ == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			if it, ok := items["type"].(string); ok {
				typ = "array of " + it
			}
			if e := enumStrings(items["enum"]); len(e) > 0 {
				extra = append(extra, "items: "+codeList(e))
			}
		}
	}
	if e := enumStrings(p["enum"]); len(e) > 0 {
		extra = append(extra, "one of "+codeList(e))
	}
	if lo, ok := p["minimum"]; ok {
		if hi, ok := p["maximum"]; ok {
			extra = append(extra, fmt.Sprintf("%v–%v", lo, hi))
		} else {
			extra = append(extra, fmt.Sprintf("≥ %v", lo))
		}
	}
	if n, ok := p["maxLength"]; ok {
		extra = append(extra, fmt.Sprintf("at most %v characters", n))
	}
	if len(extra) == 0 {
		return typ
	}
	return typ + "; " + strings.Join(extra, "; ")
}

func codeList(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = "`" + v + "`"
	}
	return strings.Join(out, ", ")
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
