// Package codextest runs the real OpenAI Codex CLI offline for tests: a
// scripted fake of the OpenAI Responses API with server-sent events
// (FakeAPI), a launcher that starts the pinned CLI in a pane of a private
// tmux server with a throwaway CODEX_HOME whose config.toml points a
// model provider at the fake (Start), and the helpers to drive it and read
// its screen.
//
// The CLI comes from e2e/package.json (npm ci --prefix e2e); tests that need
// it fail, rather than skip, when it is missing. The screens it produced are
// kept as fixtures in monitor/testdata/captures/codex, regenerated with
//
//	go test ./internal/testsupport/codextest -run TestCaptureFixtures -update-captures
package codextest
