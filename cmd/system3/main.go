// Command system3 supervises AI coding agents running in tmux panes: it
// watches every pane and task list, classifies what each agent is doing, and
// wakes a person or a supervising agent when one needs help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/internal/termtext"
)

func main() {
	setCores(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	endProfile := startCPUProfile(os.Getenv("SYSTEM3_CPUPROFILE"))
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	endProfile()
	os.Exit(code)
}

// allCores marks a command that runs on every core (bench: its MCP load
// clients must not be what limits the throughput it measures).
const allCores = "system3/all-cores"

// setCores runs this process's goroutines on one core (GOMAXPROCS=1)
// unless the GOMAXPROCS environment variable says otherwise or the command
// is marked allCores. system3's work is light and mostly waiting (a tick,
// a capture, a socket): on one core the runtime hands work between fewer
// threads, which cut serve's CPU at 40 panes by about an eighth and its idle
// CPU by a fifth (docs/performance.md). Only main calls it: tests that run
// commands in their own process keep theirs.
func setCores(args []string) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	root := newRootCmd(&app{App: core.App{Stderr: io.Discard, Getenv: os.Getenv}, stdin: strings.NewReader(""), stdout: io.Discard})
	if c, _, err := root.Find(args); err == nil && c.Annotations[allCores] != "" {
		return
	}
	runtime.GOMAXPROCS(1)
}

// startCPUProfile writes a CPU profile of this process to path (`%p` in it
// is replaced by the pid, so every process of a run, such as the ones
// `system3 bench` starts, writes its own) until the returned function is
// called. An empty path profiles nothing; a path that cannot be created is
// said on stderr and nothing is profiled.
func startCPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "system3: SYSTEM3_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// exitError carries a specific exit status out of a subcommand (for example
// `wait` exits 2 on timeout). Its message, if any, is printed like any error.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// run executes one system3 invocation and returns its exit status. It is the
// whole program minus process globals, so tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	term := stdout
	out, errs := termtext.NewWriter(stdout), termtext.NewWriter(stderr)
	defer out.Flush()
	defer errs.Flush()
	stdout, stderr = out, errs
	a := &app{App: core.App{Stderr: stderr, Getenv: getenv}, stdin: stdin, stdout: stdout, term: term}
	defer a.Close()
	root := newRootCmd(a)
	if err := checkHelpArgs(newRootCmd(&app{App: core.App{Stderr: io.Discard, Getenv: getenv}, stdin: stdin, stdout: io.Discard}), args); err != nil {
		fmt.Fprintf(stderr, "system3: %s\n", err)
		return 1
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "system3: %s\n", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "system3: %s\n", err)
	return 1
}
