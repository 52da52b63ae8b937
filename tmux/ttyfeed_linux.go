//go:build linux

package tmux

import (
	"errors"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ttyFeed learns from the kernel which panes were written to, without
// asking tmux: an inotify watch (IN_MODIFY) on each pane's terminal,
// /dev/pts/N, fires on every write(2) to it, whoever writes (the agent,
// a command it runs, a shell). A watch on /dev/pts itself fires when a
// terminal is made or freed (IN_CREATE, IN_DELETE): a pane, window or
// session was created or killed, or a pane's process exited.
//
// The kernel refuses such events for /dev/ptmx, the side tmux holds
// (ptmx_open sets FMODE_NONOTIFY), so tmux's own reads and writes never
// show; nothing is set on the tmux server, and nothing a user does with
// tmux changes.
//
// What it cannot see, which is why the watcher still reads the server's
// read count (ioReader) and still lists panes: a terminal's own echo of
// what is typed into a program in canonical mode (the line discipline
// writes it, not write(2)), a program that writes through /dev/tty (a
// different file), a change tmux makes itself (copy mode, a resize,
// clear-history), and a pane whose terminal could not be watched.
type ttyFeed struct {
	fd     int
	dirWD  int32
	byWD   map[int32]string // watch → pane id
	byPane map[string]ttyWatch
	buf    []byte
}

type ttyWatch struct {
	wd  int32
	tty string
}

// newTTYFeed opens an inotify instance and watches /dev/pts. It fails
// where inotify cannot be used (the per-user limit of instances reached,
// no /dev/pts); the watcher then does without.
func newTTYFeed() (*ttyFeed, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	wd, err := unix.InotifyAddWatch(fd, "/dev/pts", unix.IN_CREATE|unix.IN_DELETE|unix.IN_ONLYDIR)
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "inotify_add_watch", Path: "/dev/pts", Err: err}
	}
	return &ttyFeed{fd: fd, dirWD: int32(wd), byWD: map[int32]string{}, byPane: map[string]ttyWatch{}, buf: make([]byte, 64<<10)}, nil
}

// sync watches the terminal of every live pane listed and forgets panes
// that are gone. It reports how many panes it watches anew and how many
// live panes it cannot watch (see complete).
func (f *ttyFeed) sync(panes []Pane) (added, unwatched int) {
	if f == nil {
		return 0, len(panes)
	}
	seen := make(map[string]bool, len(panes))
	for _, p := range panes {
		seen[p.ID] = true
		if p.Dead || p.TTY == "" {
			// Nothing writes to a dead pane; respawning it makes a new
			// terminal, which /dev/pts reports.
			f.forget(p.ID)
			continue
		}
		if cur, ok := f.byPane[p.ID]; ok && cur.tty == p.TTY {
			continue
		}
		f.forget(p.ID)
		wd, err := unix.InotifyAddWatch(f.fd, p.TTY, unix.IN_MODIFY)
		if err != nil {
			unwatched++
			continue
		}
		f.byPane[p.ID] = ttyWatch{wd: int32(wd), tty: p.TTY}
		f.byWD[int32(wd)] = p.ID
		added++
	}
	for id := range f.byPane {
		if !seen[id] {
			f.forget(id)
		}
	}
	return added, unwatched
}

func (f *ttyFeed) forget(id string) {
	w, ok := f.byPane[id]
	if !ok {
		return
	}
	delete(f.byPane, id)
	if f.byWD[w.wd] == id {
		delete(f.byWD, w.wd)
		// The watch is gone already when its terminal was freed.
		unix.InotifyRmWatch(f.fd, uint32(w.wd))
	}
}

// watching reports whether pane id's terminal is watched.
func (f *ttyFeed) watching(id string) bool {
	_, ok := f.byPane[id]
	return ok
}

// drain reads the events queued since the last call. wrote gets the
// panes written to; topology is true when a terminal was made or freed;
// lost is true when events were dropped (the kernel's queue overflowed)
// or a watched terminal went away, so what was written is not known.
func (f *ttyFeed) drain(wrote map[string]bool) (topology, lost bool, err error) {
	for {
		n, err := unix.Read(f.fd, f.buf)
		if errors.Is(err, unix.EAGAIN) || n == 0 {
			return topology, lost, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return topology, true, os.NewSyscallError("read inotify", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&f.buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				lost = true
			case ev.Wd == f.dirWD:
				topology = true
			case ev.Mask&unix.IN_IGNORED != 0:
				// The terminal was freed (or the watch removed): the
				// pane's process is gone or /dev/pts reports a new one.
				if id, ok := f.byWD[ev.Wd]; ok {
					delete(f.byWD, ev.Wd)
					delete(f.byPane, id)
					lost = true
				}
			case ev.Mask&unix.IN_MODIFY != 0:
				if id, ok := f.byWD[ev.Wd]; ok {
					wrote[id] = true
				}
			}
		}
		if n < len(f.buf)-maxInotifyEvent {
			// The read emptied the queue: it had room for one more
			// event. What comes after is the next drain's, so there
			// is no read to find it empty.
			return topology, lost, nil
		}
	}
}

// maxInotifyEvent is the largest event the kernel queues: its header and
// a name of NAME_MAX bytes with its NUL.
const maxInotifyEvent = unix.SizeofInotifyEvent + unix.NAME_MAX + 1

func (f *ttyFeed) close() {
	if f != nil && f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
}

// sameMountNamespace reports whether the process pid sees the same
// files as this one: a pane's terminal, /dev/pts/N, names another
// terminal (or none) in a container's own /dev/pts.
func sameMountNamespace(pid int) bool {
	mine, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return false
	}
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	return err == nil && theirs == mine
}
