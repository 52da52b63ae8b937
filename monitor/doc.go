// Package monitor watches every tmux pane and task list, classifies what
// each agent is doing with the rules engine, keeps the live registry of
// sessions, and raises wake events when a person or a supervising agent must
// act. The dashboard, the MCP server and the CLI read it through
// api.Service, which Supervisor implements.
package monitor
