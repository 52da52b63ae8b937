package rules_test

import (
	"github.com/system3-dev/system3/monitor/agents"
	"github.com/system3-dev/system3/monitor/rules"
)

// The built-in rules live with their agents (monitor/agents/<name>), which
// import this package; this package's tests get them from the registry.
func init() { *rules.BuiltinRules = agents.Builtin }
