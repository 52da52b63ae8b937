package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Installed is where Install put the binary on a host, the host's
// platform (uname -sm) and the first line of the copy's version.
type Installed struct {
	Path, Uname, Version string
}

// goPlatform maps `uname -sm` to GOOS and GOARCH.
func goPlatform(uname string) (goos, goarch string) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", ""
	}
	goos = strings.ToLower(f[0])
	switch f[1] {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "i386", "i686":
		goarch = "386"
	case "armv7l", "armv6l":
		goarch = "arm"
	case "riscv64", "ppc64le", "s390x":
		goarch = f[1]
	default:
		goarch = strings.ToLower(f[1])
	}
	return goos, goarch
}

// Install copies the binary (this system3's own) to the host over ssh,
// when the host's platform (uname -sm) is the one this binary was built
// for, and checks the copy by running its version command there. The path
// is h.System3 when that is a path, else ~/.local/bin/system3. A file
// already there is kept unless force; a copy cut short leaves nothing
// half written in its place.
func (h Host) Install(ctx context.Context, binary string, force bool) (Installed, error) {
	out, err := h.Run(ctx, nil, h.SSHArgv("uname", "-sm"))
	if err != nil {
		return Installed{}, err
	}
	uname := strings.TrimSpace(string(out))
	goos, goarch := goPlatform(uname)
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return Installed{}, fmt.Errorf("host %s runs %q (%s/%s) but this system3 is built for %s/%s; build one for it (GOOS=%s GOARCH=%s go build ./cmd/system3) and copy it there yourself",
			h.Name, uname, goos, goarch, runtime.GOOS, runtime.GOARCH, goos, goarch)
	}
	path := h.System3
	if !strings.Contains(path, "/") {
		path = "~/.local/bin/system3"
	}
	f, err := os.Open(binary)
	if err != nil {
		return Installed{}, fmt.Errorf("open this system3 binary to copy: %w", err)
	}
	defer f.Close()
	// One remote shell command: refuse an existing file unless forced,
	// write beside it, then rename, so a cut copy leaves nothing half
	// written in its place.
	qp := quoteRemotePath(path)
	script := fmt.Sprintf(`p=%s; if [ -e "$p" ] && [ %q != yes ]; then echo "$p already exists" >&2; exit 3; fi; mkdir -p "$(dirname "$p")" && cat > "$p.tmp.$$" && chmod 755 "$p.tmp.$$" && mv -f "$p.tmp.$$" "$p"`, qp, map[bool]string{true: "yes", false: "no"}[force])
	argv := h.SSHArgv("sh", "-c", script)
	if _, err := h.Run(ctx, f, argv); err != nil {
		var le *LinkError
		if errors.As(err, &le) && strings.Contains(err.Error(), "already exists") {
			return Installed{}, fmt.Errorf("host %s already has %s; pass --force to replace it", h.Name, path)
		}
		return Installed{}, err
	}
	vout, err := h.Run(ctx, nil, h.SSHArgv(path, "version"))
	if err != nil {
		return Installed{}, fmt.Errorf("copied to %s on host %s, but it does not run there: %w", path, h.Name, err)
	}
	version, _, _ := strings.Cut(string(vout), "\n")
	return Installed{Path: path, Uname: uname, Version: strings.TrimSpace(version)}, nil
}

// quoteRemotePath quotes a path for the remote shell, leaving a leading ~/
// to mean the remote home.
func quoteRemotePath(p string) string {
	if strings.HasPrefix(p, "~/") {
		return `"$HOME"/'` + strings.ReplaceAll(p[2:], "'", `'\''`) + "'"
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
