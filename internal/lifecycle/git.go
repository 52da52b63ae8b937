package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// git runs git commands in one repository, each with a deadline.
type git struct {
	bin     string
	dir     string
	timeout time.Duration
}

// run runs git with args in the repository and returns its trimmed stdout.
// A failure carries git's own first line of stderr.
func (g git) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"-C", g.dir}, args...)...)
	// Never prompt (credentials, editors): there is no one to answer.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if ctx.Err() != nil {
			msg = fmt.Sprintf("no answer within %s", g.timeout)
		}
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// ok runs git and reports whether it exited 0 (for yes/no questions like
// show-ref --verify --quiet). Other failures (no git, a timeout) are errors.
func (g git) ok(ctx context.Context, args ...string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"-C", g.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return false, fmt.Errorf("git %s: no answer within %s", strings.Join(args, " "), g.timeout)
	case errors.As(err, &ee):
		return false, nil
	}
	return false, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
}

// excludeTrees makes sure trees/ is ignored in the repository, adding it
// to .git/info/exclude (never to a tracked .gitignore) when it is not, so
// worktrees do not show up as untracked files. It reports whether it added
// the line.
func (g git) excludeTrees(ctx context.Context, probe string) (bool, error) {
	ignored, err := g.ok(ctx, "check-ignore", "-q", "--no-index", probe)
	if err != nil || ignored {
		return false, err
	}
	common, err := g.run(ctx, "rev-parse", "--git-common-dir")
	if err != nil {
		return false, err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(g.dir, common)
	}
	path := filepath.Join(common, "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	text := "# worktrees made by system3 spawn\n/" + TreesDir + "/\n"
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		text = "\n" + text
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return false, err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}

// runRaw is run without trimming (a diff keeps its trailing newline).
func (g git) runRaw(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append([]string{"-C", g.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), lastLine(errb.String()))
	}
	return out.String(), nil
}
