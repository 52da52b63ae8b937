package hooks

import "encoding/json"

// Block is the decision of a Stop hook that makes Claude Code go on
// instead of ending its turn, with the hook's reason as its next
// instruction.
const Block = "block"

// Reply is what system3 answers a hook event with, printed by `system3
// hook` as the hook's output for Claude Code. It is empty for almost every
// event: the hook then prints nothing and Claude Code carries on as if
// there were no hook. A Stop event of a configured supervisor pane may be
// answered with Decision "block" and the next wake as Reason: Claude Code
// then continues with the wake instead of going idle.
type Reply struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Empty reports whether the reply says nothing.
func (r Reply) Empty() bool { return r.Decision == "" && r.Reason == "" }

// Output is the reply as Claude Code reads a hook's standard output: one
// JSON object and a newline, or nothing for an empty reply.
func (r Reply) Output() []byte {
	if r.Empty() {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}
