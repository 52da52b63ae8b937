package monitortest

import "github.com/system3-dev/system3/internal/api"

// Two wakes as the monitors raise them, for tests to Raise: a permission
// prompt with its options, evidence and task progress, and an error loop.
var (
	WakeAuth = api.Wake{Reason: api.ReasonAwaitingInput, Key: "awaiting_input/%3", Session: "orch-auth", Pane: "%3", Agent: "claude",
		State: "awaiting_input", Kind: "permission", Question: "Edit auth.go?", Options: []string{"Yes", "No"},
		Evidence: api.Evidence{Source: "screen", Rule: "claude.permission", Lines: []string{"Do you want to make this edit?"}},
		Tasks:    &api.WakeProgress{ListID: "PRD-AUTH", Completed: 1, Total: 3}, SuggestedAction: "answer the permission prompt"}
	WakeDocs = api.Wake{Reason: api.ReasonErrorLoopDetected, Key: "error_loop/%5", Session: "docs", Pane: "%5", Agent: "codex",
		State: "error_loop"}
)
