package lifecycle

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// DefaultSetupTimeout bounds the set-up command.
const DefaultSetupTimeout = 10 * time.Minute

// Setup prepares a new worktree before its agent starts: files copied or
// symlinked from the main checkout (paths relative to its top: .env, local
// configs), then a command run through sh -c in the worktree (npm ci).
// A failure fails the spawn, which is undone; the command's output is
// kept in LogDir either way.
type Setup struct {
	Copy    []string
	Link    []string
	Command string
	// Timeout bounds the command (default 10 minutes).
	Timeout time.Duration
	// LogDir keeps the command's output as <initiative>.log.
	LogDir string
}

// setup runs the configured set-up in the new worktree.
func (sp *spawn) setup(ctx context.Context) error {
	s, r := sp.m.cfg.Setup, &sp.res
	if len(s.Copy) == 0 && len(s.Link) == 0 && s.Command == "" {
		return nil
	}
	sp.progress(api.StepSetup, "setting up "+r.Worktree)
	for _, rel := range s.Copy {
		if err := copyInto(r.Repo, r.Worktree, rel); err != nil {
			return err
		}
		r.Setup = append(r.Setup, "copied "+rel)
	}
	for _, rel := range s.Link {
		src, dst := filepath.Join(r.Repo, rel), filepath.Join(r.Worktree, rel)
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("link %s: %s is not there (%v); create it, or remove it from lifecycle.setup.link", rel, src, err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		_ = os.Remove(dst) // a tracked placeholder gives way to the link
		if err := os.Symlink(src, dst); err != nil {
			return fmt.Errorf("link %s: %w", rel, err)
		}
		r.Setup = append(r.Setup, "linked "+rel)
	}
	if s.Command == "" {
		return nil
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSetupTimeout
	}
	var out io.Writer = io.Discard
	if s.LogDir != "" {
		if err := os.MkdirAll(s.LogDir, 0o700); err != nil {
			return err
		}
		r.SetupLog = filepath.Join(s.LogDir, sp.req.Initiative+".log")
		f, err := os.OpenFile(r.SetupLog, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(f, "$ %s   (in %s, %s)\n", s.Command, r.Worktree, time.Now().UTC().Format(time.RFC3339))
		out = f
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", s.Command)
	cmd.Dir = r.Worktree
	cmd.Env = append(os.Environ(), "SYSTEM3_INITIATIVE="+sp.req.Initiative, "SYSTEM3_WORKTREE="+r.Worktree)
	tail := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(out, tail), io.MultiWriter(out, tail)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	where := ""
	if r.SetupLog != "" {
		where = "; its output is in " + r.SetupLog
	}
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("the set-up command %q did not finish within %s%s", s.Command, timeout, where)
	case err != nil:
		return fmt.Errorf("the set-up command %q failed (%v): %s%s", s.Command, err, tail.last(3), where)
	}
	r.Setup = append(r.Setup, "ran "+s.Command)
	return nil
}

// copyInto copies the file rel from the checkout src to dst.
func copyInto(src, dst, rel string) error {
	from, to := filepath.Join(src, rel), filepath.Join(dst, rel)
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %v; create it, or remove it from lifecycle.setup.copy", rel, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("copy %s: it is a directory; list it under lifecycle.setup.link instead", rel)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	outf, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(outf, in); err != nil {
		outf.Close()
		return err
	}
	return outf.Close()
}

// tailBuffer keeps the last few KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

// last returns the last n non-empty lines, joined.
func (t *tailBuffer) last(n int) string {
	var lines []string
	for l := range strings.SplitSeq(string(t.b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "it printed nothing"
	}
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}
