package rules

// builtinRules is the built-in rules for this package's own tests; the
// registry of agents (monitor/agents), which imports this package, sets it
// from builtin_test.go.
var builtinRules func() Source

// BuiltinRules lets builtin_test.go set the built-in rules.
var BuiltinRules = &builtinRules

// Builtin is the built-in rules (monitor/agents.Builtin).
func Builtin() Source { return builtinRules() }
