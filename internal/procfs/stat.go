package procfs

import (
	"bytes"
	"fmt"
	"strconv"
)

// Stat is what system3 reads of a process's /proc/PID/stat.
type Stat struct {
	// Comm is the process's name, as /proc/PID/comm has it (without its
	// newline).
	Comm string
	// PPID is its parent, PGRP its process group, and TPGID the
	// foreground process group of its controlling terminal (-1 when it has
	// none).
	PPID, PGRP, TPGID int
	// StartTicks is when it started, in clock ticks (USER_HZ) after boot.
	StartTicks int64
}

// ReadStat reads and parses /proc/PID/stat in one read. The name, in
// parentheses, may hold spaces and parentheses itself, so it ends at the
// last ')' and the numbered fields are read after it.
func ReadStat(pid int) (Stat, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	data, err := ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return parseStat(path, data)
}

func parseStat(path string, data []byte) (Stat, error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("unreadable %s: no name in parentheses", path)
	}
	// After the name: state ppid pgrp session tty_nr tpgid ... starttime
	// (field 22, the 20th after the name).
	f := bytes.Fields(data[end+1:])
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("unreadable %s: %d fields after the name", path, len(f))
	}
	s := Stat{Comm: string(data[open+1 : end])}
	var errs [4]error
	s.PPID, errs[0] = strconv.Atoi(string(f[1]))
	s.PGRP, errs[1] = strconv.Atoi(string(f[2]))
	s.TPGID, errs[2] = strconv.Atoi(string(f[5]))
	s.StartTicks, errs[3] = strconv.ParseInt(string(f[19]), 10, 64)
	for _, err := range errs {
		if err != nil {
			return Stat{}, fmt.Errorf("unreadable %s: %w", path, err)
		}
	}
	return s, nil
}
