// Package tasks reads and watches the task lists that Claude Code keeps on disk
// (~/.claude/tasks/<list-id>/<n>.json, and the legacy ~/.claude/todos/*.json
// files), turning them into plain [List] values and typed transition [Event]s.
//
// [Load] and [LoadList] read once, for the `system3 tasks` command, whose output
// [WriteText] and [WriteJSON] produce. A [Watcher] keeps the same model up to
// date with fsnotify and publishes what changed without ever blocking on a slow
// subscriber.
//
// Task files are written by other programs, often while we read them, so bad
// input is data here, not a failure: a file that cannot be read or parsed
// becomes a [FileError] in its list, the last good version of its task is kept,
// and the rest of the list stays correct.
package tasks
