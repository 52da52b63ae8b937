package procfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReadFileReadsWhatOSReads: the same bytes as os.ReadFile, for a
// /proc file and for a regular file larger than the first buffer (which
// must grow), and an empty file reads as empty.
func TestReadFileReadsWhatOSReads(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("0123456789abcdef"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{big, empty}
	if _, err := os.Stat("/proc/self/cmdline"); err == nil {
		paths = append(paths, "/proc/self/cmdline", "/proc/"+strconv.Itoa(os.Getpid())+"/comm")
	}
	for _, p := range paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read %d bytes %.40q, os.ReadFile read %d %.40q", p, len(got), got, len(want), want)
		}
	}
}

// TestReadFileErrors: a missing file is fs.ErrNotExist with its path in
// the error, and a directory cannot be read.
func TestReadFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	_, err := ReadFile(missing)
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v (%T), want a PathError that is fs.ErrNotExist", err, err)
	}
	if _, err := ReadFile(t.TempDir()); err == nil {
		t.Error("reading a directory succeeded")
	}
}
