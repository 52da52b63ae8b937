//go:build !linux

package monitor

// HubAbove cannot tell outside Linux: a hook event there needs its
// session's token, which a hub's hooks carry only when the hub inherited
// it.
func HubAbove(pid, stop int) (hub int, agent string) { return 0, "" }
