//go:build linux

package monitor

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/procfs"
)

// maxDescendants bounds the walk; an agent's tree is a handful of
// processes, a build farm under a pane is not worth listing.
const maxDescendants = 64

// walkProcesses calls fn for the processes below pid (children,
// grandchildren...), read from /proc, breadth first, with each one's
// command name, until fn returns false.
func walkProcesses(pid int, fn func(pid int, comm string) bool) {
	queue := []int{pid}
	for seen := 0; len(queue) > 0 && seen < maxDescendants; {
		p := queue[0]
		queue = queue[1:]
		data, err := procfs.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + strconv.Itoa(p) + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			child, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, err := procfs.ReadFile("/proc/" + f + "/comm")
			if err != nil {
				continue
			}
			seen++
			if !fn(child, strings.TrimSpace(string(comm))) {
				return
			}
			queue = append(queue, child)
		}
	}
}

// ProcessTree returns the names of the processes below pid. An agent
// started by a wrapper script is found this way though the pane's command
// is the shell.
func ProcessTree(pid int) []string {
	var names []string
	walkProcesses(pid, func(_ int, comm string) bool {
		names = append(names, comm)
		return true
	})
	return names
}

// ProcessCmdlines returns the command lines of pid and the processes below
// it, each its arguments joined by spaces, for agents recognised by their
// arguments: an agent run by an interpreter (node …/gemini) has the
// interpreter's name.
func ProcessCmdlines(pid int) []string {
	var out []string
	add := func(p int) {
		data, err := procfs.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err != nil || len(data) == 0 {
			return
		}
		out = append(out, strings.TrimSpace(string(bytes.ReplaceAll(bytes.TrimRight(data, "\x00"), []byte{0}, []byte{' '}))))
	}
	add(pid)
	walkProcesses(pid, func(p int, _ string) bool {
		add(p)
		return true
	})
	return out
}

// findProcess returns pid, or the first process below it, whose command
// name is name; 0 when there is none.
func findProcess(pid int, name string) int {
	if comm, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil && strings.TrimSpace(string(comm)) == name {
		return pid
	}
	found := 0
	walkProcesses(pid, func(p int, comm string) bool {
		if comm == name {
			found = p
		}
		return found == 0
	})
	return found
}

// processArgs reads a process's command line, nil when unreadable.
func processArgs(pid int) []string {
	data, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// processEnv reads a process's environment.
func processEnv(pid int) map[string]string {
	data, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	env := map[string]string{}
	for kv := range bytes.SplitSeq(data, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env
}

// envInTree returns the value of the environment variable key in pid or,
// failing that, in the first process below it that sets it; "" when none
// does.
func envInTree(pid int, key string) string {
	if v := processEnv(pid)[key]; v != "" {
		return v
	}
	found := ""
	walkProcesses(pid, func(p int, _ string) bool {
		found = processEnv(p)[key]
		return found == ""
	})
	return found
}

// maxAncestors bounds the walk up from a hook process to its pane: a hook
// runs a few shells below the agent, never dozens.
const maxAncestors = 64

// descendsFrom reports whether process pid is ancestor or runs below it,
// following each process's parent in /proc/<pid>/stat. A process that is
// gone, or a chain that reaches init first, does not.
func descendsFrom(pid, ancestor int) (bool, error) {
	if pid <= 0 || ancestor <= 0 {
		return false, nil
	}
	for range maxAncestors {
		if pid == ancestor {
			return true, nil
		}
		if pid <= 1 {
			return false, nil
		}
		st, err := procfs.ReadStat(pid)
		if err != nil {
			return false, err
		}
		pid = st.PPID
	}
	return false, nil
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's start
// time: 100 on every Linux architecture Go supports.
const clockTicks = 100

// processStart is when a process started, from /proc/<pid>/stat (field 22,
// in clock ticks after boot) and the boot time in /proc/stat.
func processStart(pid int) (time.Time, error) {
	st, err := procfs.ReadStat(pid)
	if err != nil {
		return time.Time{}, err
	}
	stat, err := procfs.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(stat), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				break
			}
			return time.Unix(boot, 0).Add(time.Duration(st.StartTicks) * time.Second / clockTicks), nil
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}
