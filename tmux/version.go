package tmux

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// ErrTooOld means the tmux binary is older than 3.2, the oldest version
// system3 works with (new-session -e, control-mode -f flags, the formats
// ListPanes uses).
var ErrTooOld = errors.New("tmux is too old")

// MinVersion is the oldest tmux system3 supports.
const MinVersion = "3.2"

// ParseVersion reads tmux -V output: "tmux 3.3a" gives 3, 3. Builds from
// git ("tmux next-3.6", "tmux master") and OpenBSD's ("tmux openbsd-7.5")
// report ok with known false: they are newer than any release system3
// knows of.
func ParseVersion(v string) (major, minor int, known bool, ok bool) {
	v = strings.TrimSpace(v)
	rest, found := strings.CutPrefix(v, "tmux ")
	if !found {
		return 0, 0, false, false
	}
	rest = strings.TrimPrefix(rest, "next-")
	if rest == "master" || strings.HasPrefix(rest, "openbsd-") {
		return 0, 0, false, true
	}
	maj, after, found := strings.Cut(rest, ".")
	if !found {
		return 0, 0, false, false
	}
	end := 0
	for end < len(after) && after[end] >= '0' && after[end] <= '9' {
		end++
	}
	var err1, err2 error
	major, err1 = strconv.Atoi(maj)
	minor, err2 = strconv.Atoi(after[:end])
	if err1 != nil || err2 != nil {
		return 0, 0, false, false
	}
	return major, minor, true, true
}

// versionChecked remembers, per tmux binary, the result of checking its
// version: tmux -V runs once per binary for the life of the process.
var versionChecked sync.Map // bin -> error (nil when supported)

// CheckVersion runs tmux -V once per binary and returns an error matching
// ErrTooOld, in one sentence, when that tmux is older than MinVersion. An
// unreadable version string is let through: a future format should not
// lock users out. Every command this package runs checks it first.
func (s Server) CheckVersion(ctx context.Context) error {
	bin := s.bin()
	if v, ok := versionChecked.Load(bin); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	out, err := s.exec(ctx, "version", "", nil, "-V")
	if err != nil {
		// tmux is missing or wedged: say so now, and let later commands
		// report their own failures rather than checking again.
		versionChecked.Store(bin, nil)
		return err
	}
	v := strings.TrimSpace(string(out))
	var res error
	if major, minor, known, ok := ParseVersion(v); ok && known && (major < 3 || major == 3 && minor < 2) {
		res = &Error{Op: "check version", Server: s.String(), Err: ErrTooOld,
			Msg: fmt.Sprintf("%s is too old: system3 needs tmux %s or later; install a newer tmux, or set %s to one", v, MinVersion, BinEnv)}
	}
	versionChecked.Store(bin, res)
	return res
}
