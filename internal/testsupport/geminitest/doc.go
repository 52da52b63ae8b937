// Package geminitest runs the real Gemini CLI offline for tests: a scripted
// fake of the Gemini API (FakeAPI), a launcher that starts the pinned CLI in
// a pane of a private tmux server with API-key auth in a throwaway HOME
// (Start), and the helpers to drive it and read its screen.
//
// The CLI comes from e2e/package.json (npm ci --prefix e2e); tests that need
// it fail, rather than skip, when it is missing. The screens it produced are
// kept as fixtures in monitor/testdata/captures/gemini, regenerated with
//
//	go test ./internal/testsupport/geminitest -run TestCaptureFixtures -update-captures
package geminitest
