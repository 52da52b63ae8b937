package rules

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/system3-dev/system3/internal/api"
)

// CaptureMagic opens a capture file written by `system3 rules capture`:
// a header of "# key: value" lines, ended by CaptureEnd, then the screen.
const (
	CaptureMagic = "# system3 capture v1"
	CaptureEnd   = "# ---"
)

// Capture is a saved screen and what is known about the pane it came from.
// Its label (State, Kind) says what the screen is expected to classify as.
type Capture struct {
	// Screen is what the classifier looks at.
	Screen string
	// Header holds the header's fields in order (empty without a header).
	Header []Field
	// State and Kind are the label; HasKind is set when the label names a
	// kind (an empty one included), which is then checked too.
	State   api.State
	Kind    string
	HasKind bool
	// Agent, when set, is the agent the screen must be recognised as.
	Agent string
	// Process, Shell and Job are the pane's processes as the monitor saw
	// them, and Raw whether its terminal took keys one at a time (header
	// "raw: yes"; see Input).
	Process, Shell, Job string
	Raw                 bool
	// Dead is set when the pane was dead (header "dead: yes").
	Dead bool
}

// Field is one header line.
type Field struct{ Key, Value string }

// Input is what to classify the capture with, as the monitor would.
func (c Capture) Input() Input {
	in := Input{Screen: c.Screen, Shell: c.Shell, Job: c.Job, Raw: c.Raw, Dead: c.Dead, DeadStatus: -1}
	if c.Process != "" {
		in.Processes = []string{c.Process}
	}
	return in
}

// Labelled reports whether the capture says what it should classify as.
func (c Capture) Labelled() bool { return c.State != "" }

// ParseCapture reads a capture: with a header, the label and the pane's
// processes come from it; without, the file is all screen, and the label
// comes from the file's name (see LabelFromName). A header that is
// malformed is an error naming the line.
func ParseCapture(name string, data []byte) (Capture, error) {
	text := string(data)
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, "\r") != CaptureMagic {
		c := Capture{Screen: text}
		c.State, c.Kind, c.HasKind = LabelFromName(name)
		return c, nil
	}
	c := Capture{}
	for n := 2; ; n++ {
		var line string
		var ok bool
		line, rest, ok = strings.Cut(rest, "\n")
		line = strings.TrimRight(line, "\r")
		if line == CaptureEnd {
			c.Screen = rest
			break
		}
		if !ok {
			return Capture{}, fmt.Errorf("%s: the header has no end line %q; put it between the header and the screen", name, CaptureEnd)
		}
		body, isComment := strings.CutPrefix(line, "#")
		if !isComment {
			return Capture{}, fmt.Errorf("%s: line %d: header lines start with '#', and %q ends the header", name, n, CaptureEnd)
		}
		key, value, ok := strings.Cut(body, ":")
		if !ok {
			continue // a comment
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		c.Header = append(c.Header, Field{key, value})
		switch key {
		case "state":
			c.State = api.State(value)
			if !c.State.Valid() {
				return Capture{}, fmt.Errorf("%s: line %d: unknown state %q (use one of %s)", name, n, value, stateNames())
			}
		case "kind":
			c.Kind, c.HasKind = value, true
		case "agent":
			c.Agent = value
		case "process":
			c.Process = value
		case "shell":
			c.Shell = value
		case "job":
			c.Job = value
		case "dead":
			c.Dead = value == "yes"
		case "raw":
			c.Raw = value == "yes"
		}
	}
	if c.HasKind && c.State != "" && !validKind(c.State, c.Kind) {
		return Capture{}, fmt.Errorf("%s: kind %q is not one of %s's kinds %q", name, c.Kind, c.State, Kinds[c.State])
	}
	return c, nil
}

func stateNames() string {
	names := make([]string, len(States))
	for i, s := range States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// LabelFromName reads a label from a capture's file name: the longest
// run of its first words (split at "_", up to the first ".") that names a
// state or a kind. "idle_80x24.txt" is idle (any kind),
// "permission_bash.txt" awaiting_input/permission, "api_error_500.txt"
// error/api_error. A name that starts with neither has no label.
func LabelFromName(name string) (state api.State, kind string, hasKind bool) {
	base, _, _ := strings.Cut(filepath.Base(name), ".")
	words := strings.Split(base, "_")
	for n := len(words); n > 0; n-- {
		w := strings.Join(words[:n], "_")
		if s := api.State(w); s.Valid() {
			return s, "", false
		}
		for _, s := range States {
			if w != "" && slices.Contains(Kinds[s], w) {
				return s, w, true
			}
		}
	}
	return "", "", false
}

// FormatCapture writes a capture file: the header fields, in order, and
// the screen.
func FormatCapture(header []Field, screen string) string {
	var b strings.Builder
	b.WriteString(CaptureMagic + "\n")
	for _, f := range header {
		fmt.Fprintf(&b, "# %s: %s\n", f.Key, oneLine(f.Value))
	}
	b.WriteString(CaptureEnd + "\n")
	b.WriteString(screen)
	if screen != "" && !strings.HasSuffix(screen, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// Redacted replaces what the text holds in place of a secret.
const Redacted = "[REDACTED]"

// secretPatterns find secrets in screen text; group "keep" of a match (a
// prefix that says what kind of secret it was) stays, the rest is
// replaced.
var secretPatterns = []*regexp.Regexp{
	// Private key blocks are handled line by line (see Redact).
	regexp.MustCompile(`(?P<keep>sk-ant-)[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`(?P<keep>sk-(?:proj-|svcacct-|admin-|live_|test_|live-|test-)?)[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`(?P<keep>AIza)[0-9A-Za-z_\-]{20,}`),
	regexp.MustCompile(`(?P<keep>gh[pousr]_)[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`(?P<keep>github_pat_)[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`(?P<keep>glpat-)[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`(?P<keep>xox[abposr]-)[A-Za-z0-9\-]{8,}`),
	regexp.MustCompile(`(?P<keep>\b(?:AKIA|ASIA))[0-9A-Z]{16,}`),
	regexp.MustCompile(`(?P<keep>\beyJ)[A-Za-z0-9_\-.]{16,}`),
	regexp.MustCompile(`(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=\-]{8,}`),
	regexp.MustCompile(`(?i)(?P<keep>\bbasic\s+)[A-Za-z0-9+/=]{12,}`),
	// user:password@ in URLs.
	regexp.MustCompile(`(?P<keep>[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s/@]+(?:@)`),
	// key=value, key: value, "key": "value": any value of a password,
	// a long token-like value of a key or token.
	regexp.MustCompile(`(?i)(?P<keep>\b[a-z0-9_\-]*(?:passw(?:or)?d|passphrase|pwd|secret)[a-z0-9_\-]*["']?\s*[:=]\s*["']?)[^\s"',;&\[\]]{3,}`),
	regexp.MustCompile(`(?i)(?P<keep>\b[a-z0-9_\-]*(?:key|token|credential|auth)[a-z0-9_\-]*["']?\s*[:=]\s*["']?)[A-Za-z0-9+/=_\-.~]{16,}`),
}

// privateKey opens and closes a PEM private key block.
var (
	privateKeyBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
	privateKeyEnd   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
)

// Redact replaces secrets in text (API keys of the common providers,
// tokens, bearer and basic credentials, passwords in URLs, values of
// key=, token=, password= and the like, private key blocks) with
// Redacted, and reports how many it replaced. It errs on the side of
// redacting: a capture is for a bug report.
func Redact(text string) (string, int) {
	lines := strings.Split(text, "\n")
	n := 0
	inKey := false
	for i, l := range lines {
		if inKey {
			if loc := privateKeyEnd.FindStringIndex(l); loc != nil {
				inKey = false
				lines[i] = Redacted + l[loc[0]:]
			} else {
				lines[i] = Redacted
			}
			continue
		}
		if loc := privateKeyBegin.FindStringIndex(l); loc != nil {
			n++
			if end := privateKeyEnd.FindStringIndex(l[loc[1]:]); end != nil {
				lines[i] = l[:loc[1]] + Redacted + l[loc[1]+end[0]:]
				continue
			}
			inKey = true
			lines[i] = l[:loc[1]] + Redacted
			continue
		}
		for _, re := range secretPatterns {
			keep := re.SubexpIndex("keep")
			l = re.ReplaceAllStringFunc(l, func(m string) string {
				n++
				sub := re.FindStringSubmatch(m)
				out := sub[keep] + Redacted
				if strings.HasSuffix(m, "@") && !strings.HasSuffix(out, "@") {
					out += "@"
				}
				return out
			})
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n"), n
}
