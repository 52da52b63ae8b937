package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, 100 on every
// Linux system Go supports).
const clockTick = 10 * time.Millisecond

// procStat is what the harness reads from /proc/<pid>/stat.
type procStat struct {
	ppid int
	// cpu is user+system time of the process and of its children it has
	// reaped (utime+stime+cutime+cstime).
	cpu time.Duration
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14-17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ppid, _ := strconv.Atoi(f[1])
	var ticks int64
	for _, s := range f[11:15] {
		n, _ := strconv.ParseInt(s, 10, 64)
		ticks += n
	}
	return procStat{ppid: ppid, cpu: time.Duration(ticks) * clockTick}, nil
}

// treeCPU is the CPU time (user+system) used so far by pid and every
// process below it, living or reaped. The tmux commands the supervisor
// forks count as its own.
func treeCPU(pid int) (time.Duration, error) {
	total, _, err := treeCPUs(pid)
	return total, err
}

// treeCPUs is treeCPU, and the CPU time of each living child of pid (the
// processes whose time reaches pid's own when pid reaps them).
func treeCPUs(pid int) (time.Duration, map[int]time.Duration, error) {
	root, err := readStat(pid)
	if err != nil {
		return 0, nil, err
	}
	entries, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	stats := map[int]procStat{pid: root}
	for _, e := range entries {
		p, err := strconv.Atoi(filepath.Base(e))
		if err != nil || p == pid {
			continue
		}
		st, err := readStat(p)
		if err != nil {
			continue // gone meanwhile
		}
		stats[p] = st
		children[st.ppid] = append(children[st.ppid], p)
	}
	total := time.Duration(0)
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		total += stats[p].cpu
		queue = append(queue, children[p]...)
	}
	kids := map[int]time.Duration{}
	for _, p := range children[pid] {
		kids[p] = stats[p].cpu
	}
	return total, kids, nil
}

// peakRSS is the process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmHWM %q", pid, v)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// cpuMeter measures the share of one core a process tree uses over an
// interval, and the part of it the root process uses itself.
type cpuMeter struct {
	pid        int
	cpu0, own0 time.Duration
	// children0 is the CPU time of each child of pid living at the start:
	// one the root reaps meanwhile adds all its time to the root's own,
	// including this part, used before the interval. A process further
	// below adds its time to its own parent when reaped, not to the root.
	children0 map[int]time.Duration
	wall0     time.Time
}

func startCPU(pid int) (*cpuMeter, error) {
	c, kids, err := treeCPUs(pid)
	if err != nil {
		return nil, err
	}
	own, err := readStat(pid)
	if err != nil {
		return nil, err
	}
	return &cpuMeter{pid: pid, cpu0: c, own0: own.cpu, children0: kids, wall0: time.Now()}, nil
}

// percent is the CPU the tree used since start, in percent of one core.
func (m *cpuMeter) percent() (float64, error) {
	tree, _, err := m.split()
	return tree, err
}

// split is percent, and the part of it used by the root process (with
// the children it reaped) rather than its live descendants.
func (m *cpuMeter) split() (tree, own float64, err error) {
	c, kids, err := treeCPUs(m.pid)
	if err != nil {
		return 0, 0, err
	}
	st, err := readStat(m.pid)
	if err != nil {
		return 0, 0, err
	}
	ownCPU := st.cpu - m.own0
	for p, before := range m.children0 {
		if _, alive := kids[p]; !alive {
			ownCPU -= before // reaped: its time before the start is not the interval's
		}
	}
	ownCPU = min(max(ownCPU, 0), c-m.cpu0)
	wall := time.Since(m.wall0).Seconds()
	return 100 * (c - m.cpu0).Seconds() / wall, 100 * ownCPU.Seconds() / wall, nil
}
