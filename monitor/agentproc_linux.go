//go:build linux

package monitor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/system3-dev/system3/internal/procfs"
)

// PaneForeground tells who holds the terminal of a pane whose process is
// pid: that process's name, and the name of the foreground job when
// another process group holds the terminal ("" when pid's own group
// does: a shell at its prompt). ok is false when /proc cannot tell.
func PaneForeground(pid int) (comm, job string, ok bool) {
	if pid <= 0 {
		return "", "", false
	}
	st, err := procfs.ReadStat(pid)
	if err != nil || st.TPGID <= 0 {
		return "", "", false
	}
	if st.TPGID == st.PGRP {
		return st.Comm, "", true
	}
	// The group's leader names the job; it may have exited while the rest
	// of a pipeline runs.
	if lead, err := procfs.ReadStat(st.TPGID); err == nil {
		return st.Comm, lead.Comm, true
	}
	return st.Comm, "process group " + strconv.Itoa(st.TPGID), true
}

// scriptHosts run an agent written as a script: the script's path, not
// the host, tells which package it is.
var scriptHosts = map[string]bool{"node": true, "nodejs": true, "bun": true, "deno": true}

// versionDir matches a directory or file named after a version, as
// installers that keep one directory per version use
// (~/.local/share/claude/versions/2.1.330).
var versionDir = regexp.MustCompile(`^v?(\d+\.\d+\.\d+[\w.+-]*)$`)

// AgentVersion finds the version of the agent running in the pane whose
// process is pid: from the package.json of the npm package its executable
// (or, for an agent run through node, its script) belongs to, a package
// whose name holds the agent's name, or from a version-named executable.
// isAgent tells the agent's process names. "" when it cannot be known.
func AgentVersion(pid int, agent string, isAgent func(comm string) bool) string {
	if pid <= 0 || agent == "" {
		return ""
	}
	found := ""
	look := func(p int, comm string) bool {
		switch {
		case isAgent(comm):
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(p) + "/exe"); err == nil {
				found = versionNear(exe, agent)
			}
		case scriptHosts[comm]:
			found = scriptVersion(p, agent)
		}
		return found == ""
	}
	if comm, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil && !look(pid, strings.TrimSpace(string(comm))) {
		return found
	}
	walkProcesses(pid, look)
	return found
}

// scriptVersion reads the version of the package holding the script a
// node (bun, deno) process runs.
func scriptVersion(pid int, agent string) string {
	data, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") || a == "" {
			continue
		}
		if !filepath.IsAbs(a) {
			cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
			if err != nil {
				return ""
			}
			a = filepath.Join(cwd, a)
		}
		if real, err := filepath.EvalSymlinks(a); err == nil {
			a = real
		}
		return versionNear(a, agent)
	}
	return ""
}

// versionNear is the version of the npm package file belongs to, when the
// package's name holds agent's name: the nearest package.json at most
// four directories up, not past node_modules. Else a version-named file
// or its directory.
func versionNear(file, agent string) string {
	dir := filepath.Dir(file)
	for range 4 {
		if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
			var pkg struct{ Name, Version string }
			if json.Unmarshal(data, &pkg) == nil && pkg.Name != "" {
				// The package's own file: it is the agent's or not.
				if strings.Contains(strings.ToLower(pkg.Name), strings.ToLower(agent)) && pkg.Version != "" {
					return pkg.Version
				}
				break
			}
		}
		if filepath.Base(dir) == "node_modules" || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	for _, name := range []string{filepath.Base(file), filepath.Base(filepath.Dir(file))} {
		if m := versionDir.FindStringSubmatch(name); m != nil {
			return m[1]
		}
	}
	return ""
}
