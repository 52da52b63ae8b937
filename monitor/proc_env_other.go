//go:build !linux

package monitor

// envInTree returns "" outside Linux: there is no /proc to read.
func envInTree(pid int, key string) string { return "" }
