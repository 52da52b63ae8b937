// Package clitest holds what the live-CLI test harnesses (claudetest,
// codextest, geminitest) have in common: finding the pinned CLI that
// e2e/package.json installs (Bin), a shell in a pane of a private tmux
// server to start it from and read its screen (Shell), the plumbing of a
// fake HTTP API on 127.0.0.1 that records what it receives (HTTPFake, SSE),
// and writing screen captures (Captures).
//
// What is particular to one agent (its API's shapes, its config files, the
// screen that says it is ready) stays in that agent's package.
package clitest
