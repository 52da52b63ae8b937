package tasks

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxFileSize is the largest task or todo file read. Real ones are a few
// hundred bytes; anything near this is not a task file, and reading it would
// cost memory on every change.
const MaxFileSize = 4 << 20

// errMissing means the file is not there (any more): a deletion, not a problem.
var errMissing = errors.New("file does not exist")

// fileInfo is what the loader remembers to tell whether a file changed.
type fileInfo struct {
	mod  time.Time
	size int64
}

func (a fileInfo) same(b fileInfo) bool { return a.size == b.size && a.mod.Equal(b.mod) }

// statFile checks path before it is opened, so that a directory, a named pipe
// (which would block the reader forever) or an oversized file is reported
// instead of read. The error is errMissing or one the user can act on.
func statFile(path string, limit int64) (fileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
				return fileInfo{mod: li.ModTime()}, errors.New("the symbolic link points to a missing file; fix or remove the link")
			}
			return fileInfo{}, errMissing
		}
		return fileInfo{}, describeOpenError(err)
	}
	info := fileInfo{mod: fi.ModTime(), size: fi.Size()}
	switch {
	case fi.IsDir():
		return info, errors.New("this is a directory, not a task file; rename or remove it")
	case !fi.Mode().IsRegular():
		return info, fmt.Errorf("this is %s, not a task file; remove it", specialKind(fi.Mode()))
	case fi.Size() > limit:
		return info, tooLarge(fi.Size(), limit)
	}
	return info, nil
}

func specialKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}

func tooLarge(size, limit int64) error {
	return fmt.Errorf("task file too large (%d bytes, limit %d); an agent never writes one this big, so move or delete it", size, limit)
}

// readFile reads a file that statFile accepted.
func readFile(path string, info fileInfo, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errMissing
		}
		return nil, describeOpenError(err)
	}
	defer f.Close()
	// The size can change between stat and read: never read past the limit.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, describeOpenError(err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(max(info.size, int64(len(data))), limit)
	}
	return data, nil
}

// describeOpenError turns an error from stat, open or read into one sentence
// that says what to do.
func describeOpenError(err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return errors.New("the symbolic link loops back on itself; point it at a real file or remove it")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("permission denied reading the file; give your user read access (chmod u+r) or remove it")
	case errors.Is(err, syscall.EISDIR):
		return errors.New("this is a directory, not a task file; rename or remove it")
	}
	return fmt.Errorf("cannot read the file (%v); check the disk and the file's permissions", unwrapPath(err))
}

// unwrapPath drops the path from an *fs.PathError: messages are shown next
// to the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
