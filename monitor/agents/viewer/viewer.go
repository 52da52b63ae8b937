// Package viewer is what system3 knows about pagers and editors (less,
// vim...): their process names (rules.yaml). They show text, and an
// agent's screen in one (a saved transcript, a log) is not that agent.
package viewer

import (
	_ "embed"

	"github.com/system3-dev/system3/monitor/agent"
)

//go:embed rules.yaml
var rules []byte

// Spec is the pagers and editors.
var Spec = agent.Spec{
	Name:  "viewer",
	Kind:  agent.Viewer,
	Rules: rules,
}
