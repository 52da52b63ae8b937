// Package claudefake is a scripted fake of the Anthropic Messages API that
// the real Claude Code CLI can be pointed at, offline (API, Env), with the
// user config that lets it start without an account (WriteConfig). The
// tests drive it through monitor/claudetest. It imports no test package,
// so the system3 binary can carry it.
package claudefake
