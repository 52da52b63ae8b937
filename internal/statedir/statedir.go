// Package statedir keeps system3's state dir its own: made 0700, refused
// when other users could read or write it or another user owns it, its
// secret files refused likewise, and its files opened without following a
// link planted in their place.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// UnsafeError is a state dir or secret file that is not safely system3's:
// others can read or write it, another user owns it, or it is a link.
// Its message is one sentence saying what to run.
type UnsafeError struct {
	Path string
	Why  string // "can be read or written by other users (mode 0777)"
	Fix  string // "chmod 700 /path"
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing %s: it %s; run `%s`, or give system3 a state dir of its own with --state-dir", e.Path, e.Why, e.Fix)
}

// Ensure makes dir (and its parents) if it is missing, with mode 0700, and
// refuses a dir that other users can read or write, or that another user
// owns. An error other than *UnsafeError means dir could not be made or
// read.
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &UnsafeError{Path: dir, Why: "is not a directory", Fix: "rm " + dir}
	}
	return owned(dir, fi, "chmod 700 "+dir)
}

// CheckSecret refuses a secret file (a signing key, a token) that is a
// link, that other users can read or write, or that another user owns. A
// missing file is fine: its owner makes it 0600.
func CheckSecret(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular() {
		return &UnsafeError{Path: path, Why: "is not a plain file (a link or a device could hand its contents to someone else)", Fix: "rm " + path}
	}
	return owned(path, fi, "chmod 600 "+path)
}

// owned refuses fi when others may read or write it or another user owns it.
func owned(path string, fi fs.FileInfo, fix string) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("belongs to another user (uid %d, not %d)", st.Uid, os.Getuid()), Fix: "rm -r " + path}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("can be read or written by other users (mode %04o)", perm), Fix: fix}
	}
	return nil
}

// OpenAppend opens path for appending, creating it 0600, and refuses to
// follow a link in its place: a link planted in the state dir must not
// make system3 write somewhere else.
func OpenAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &UnsafeError{Path: path, Why: "is a link, which system3 does not follow", Fix: "rm " + path}
	}
	return f, err
}
