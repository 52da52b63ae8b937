// Package procfs reads the small files the kernel makes under /proc
// (a process's stat, comm, cmdline, children) at the cost of the reads
// themselves.
//
// os.ReadFile offers every file it opens to the runtime's poller: two
// fcntl calls to make it non-blocking, an epoll_ctl the kernel refuses
// for a /proc file, two more fcntl calls to undo it, and an fstat for a
// size /proc always reports as 0. That is ten system calls for a file
// ReadFile here reads in four (open, read, the read that finds the end,
// close). The daemon reads such files at every capture of a pane (who
// holds its terminal) and for every client that connects (which agent
// runs it).
package procfs

// ReadFile reads the whole of the file at path, as os.ReadFile does, with
// the same errors (an *os.PathError; errors.Is(err, fs.ErrNotExist) for a
// process that is gone). It blocks its thread while it reads, so it is
// for files under /proc, whose reads never wait.
func ReadFile(path string) ([]byte, error) {
	return readFile(path)
}
