// Package tui is the dashboard: a Bubble Tea program that shows every
// watched agent pane, its state and why, the wakes that need a person and
// a live preview of the selected pane, and lets the operator answer,
// guide, interrupt and acknowledge from the keyboard.
//
// It keeps no truth of its own and never talks to tmux: everything comes
// from a api.Service (in-process, or a daemon's over its socket) and
// every action goes back through it, the same way the CLI and the MCP
// server act. Update does no I/O; service calls run in commands whose
// results come back as messages, and the registry and wake streams are
// read one event per command, re-issued after each one.
//
// The keys are listed in docs/keys.md, generated from the key map.
package tui
