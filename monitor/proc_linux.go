//go:build linux

package monitor

import (
	"os"
	"strconv"
	"strings"
)

// maxDescendants bounds the walk; an agent's tree is a handful of
// processes, a build farm under a pane is not worth listing.
const maxDescendants = 64

// ProcessTree returns the names of the processes below pid (children,
// grandchildren...), read from /proc, breadth first. An agent started by a
// wrapper script is found this way though the pane's command is the shell.
func ProcessTree(pid int) []string {
	var names []string
	queue := []int{pid}
	for len(queue) > 0 && len(names) < maxDescendants {
		p := queue[0]
		queue = queue[1:]
		data, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + strconv.Itoa(p) + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, err := os.ReadFile("/proc/" + f + "/comm")
			if err != nil {
				continue
			}
			names = append(names, strings.TrimSpace(string(comm)))
			queue = append(queue, child)
		}
	}
	return names
}
