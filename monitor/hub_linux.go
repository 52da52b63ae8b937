//go:build linux

package monitor

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/system3-dev/system3/internal/procfs"
	"github.com/system3-dev/system3/monitor/agents"
)

// HubAbove is the process among pid and its parents, below stop (0: up
// to init), that is an agent's hub: its arguments hold the agent's
// Spec.Hub (the Cline CLI's hub daemon, which runs the sessions of any
// pane with the environment of the CLI that started it). It returns 0
// and "" when there is none, or the ancestry cannot be read.
func HubAbove(pid, stop int) (hub int, agent string) {
	var marks [][]byte
	var names []string
	for _, s := range agents.All {
		if s.Hub != "" {
			marks, names = append(marks, []byte(s.Hub)), append(names, s.Name)
		}
	}
	if len(marks) == 0 {
		return 0, ""
	}
	for range maxAncestors {
		if pid <= 1 || pid == stop {
			return 0, ""
		}
		if b, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			args := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
			for i, m := range marks {
				if slices.ContainsFunc(args, func(a []byte) bool { return bytes.Equal(a, m) }) {
					return pid, names[i]
				}
			}
		}
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return 0, ""
		}
		pid = st.PPID
	}
	return 0, ""
}
