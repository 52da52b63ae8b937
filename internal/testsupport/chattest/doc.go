// Package chattest runs agent CLIs that speak the OpenAI Chat Completions
// API (opencode, Qwen Code, Cline) offline for tests: a scripted fake of
// that API with server-sent events (FakeAPI), launchers that start each
// pinned CLI from e2e/package.json in a pane of a private tmux server with a
// throwaway HOME whose configuration points it at the fake, and the helpers
// to drive it and read its screen.
package chattest
