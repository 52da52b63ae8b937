// Package claudefake is a scripted fake of the Anthropic Messages API that
// the real Claude Code CLI can be pointed at, offline (API, Env), with the
// user config that lets it start without an account (WriteConfig). The
// tests drive it through internal/testsupport/claudetest; `system3 demo --agent claude`
// serves it from the system3 binary, so it imports no test package.
package claudefake
