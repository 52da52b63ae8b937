package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/api"
	"github.com/system3-dev/system3/internal/wakebrief"
)

// localSince reads --since for a wait on this machine: SEQ, or local:SEQ
// as wait --all-hosts prints it.
func localSince(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	num := s
	if host, rest, _ := api.SplitHost(s, nil); host == api.LocalHost {
		num = rest
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("--since %q: give the cursor a previous wait printed, a number like 41 (or HOST:SEQ,... with --all-hosts or --host)", s)
	}
	return seq, nil
}

// printBrief prints the wake as a brief for a supervising agent, with how
// many more matching wakes wait after it and the next wait to run.
func (a *app) printBrief(ctx context.Context, cmd *cobra.Command, f api.WakeFilter, ev api.Wake, hw api.HostWake, hosts bool) error {
	o := wakebrief.Options{Now: time.Now(), More: -1}
	cursor := strconv.FormatUint(ev.Seq, 10)
	if hosts {
		ev, o.Host, cursor = hw.Wake, hw.Host, hw.Cursor
	} else {
		o.More = a.moreWakes(ctx, f, ev.Seq)
	}
	o.Program = program()
	o.Next = nextWait(cmd, cursor)
	_, err := io.WriteString(a.stdout, wakebrief.Write(ev, o))
	return err
}

// moreWakes counts the wakes f selects after seq; -1 when the count
// cannot be had (the brief then says nothing of them).
func (a *app) moreWakes(ctx context.Context, f api.WakeFilter, seq uint64) int {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	svc, err := a.Client(cctx, core.RunMonitors)
	if err != nil {
		return -1
	}
	defer a.Release(svc.Close)
	f.SinceSeq = seq
	evs, err := svc.Wakes(cctx, f)
	if err != nil {
		return -1
	}
	return len(evs)
}

// nextWait is the command that waits for the wake after cursor: this
// wait again, with every flag it was given, and --since cursor.
func nextWait(cmd *cobra.Command, cursor string) string {
	args := []string{program()}
	var global []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name == "since" {
			return
		}
		var vals []string
		switch v := fl.Value.(type) {
		case pflag.SliceValue:
			vals = []string{strings.Join(v.GetSlice(), ",")}
		default:
			vals = []string{v.String()}
		}
		for _, val := range vals {
			arg := "--" + fl.Name
			if fl.Value.Type() != "bool" {
				arg += " " + shellQuote(val)
			} else if val != "true" {
				arg += "=" + val
			}
			if cmd.LocalFlags().Lookup(fl.Name) == nil {
				global = append(global, arg)
			} else {
				args = append(args, arg)
			}
		}
	})
	line := append([]string{args[0]}, global...)
	line = append(line, "wait")
	line = append(line, args[1:]...)
	if cursor != "" && cursor != "0" {
		line = append(line, "--since "+shellQuote(cursor))
	}
	return strings.Join(line, " ")
}

// program is system3 as it was run: its path when it was run by one (a
// supervisor's skill names it so when system3 is not on PATH), else
// "system3".
func program() string {
	if p := os.Args[0]; filepath.Base(p) == "system3" && strings.Contains(p, "/") {
		return shellQuote(p)
	}
	return "system3"
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9%+,./:=@_-]+$`)

// shellQuote quotes s for a POSIX shell unless it needs none.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
