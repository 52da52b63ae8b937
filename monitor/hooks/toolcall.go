package hooks

import "github.com/system3-dev/system3/internal/api"

// ToolCall is one finished tool call as PostToolUse and PostToolUseFailure
// report it (api.HookToolCall).
type ToolCall = api.HookToolCall
