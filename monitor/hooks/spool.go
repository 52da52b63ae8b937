package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/system3-dev/system3/internal/api"
)

// SpoolFile is the spool's name in the state dir.
const SpoolFile = "hooks.spool"

// MaxSpool bounds the spool. Past it, events are dropped: a daemon that
// has not run for that long needs the screen's view anyway.
const MaxSpool = 4 << 20

// ErrSpoolFull matches Append's error when the spool is at MaxSpool.
var ErrSpoolFull = errors.New("hook spool full")

// Spool is the append-only file where `system3 hook` leaves events while
// no daemon runs. Several hook processes may append at once; each event is
// one JSON line written under an exclusive lock, and a line cut short (a
// writer killed mid-write) is skipped when read.
type Spool struct {
	Path string
	// Max bounds the file; 0 means MaxSpool.
	Max int64
}

// Append adds ev to the spool.
func (s Spool) Append(ev api.HookEvent) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode hook event: %w", err)
	}
	line = append(line, '\n')
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open the hook spool: %w", err)
	}
	defer f.Close()
	if err := lock(f); err != nil {
		return fmt.Errorf("lock the hook spool: %w", err)
	}
	defer unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat the hook spool: %w", err)
	}
	max := s.Max
	if max <= 0 {
		max = MaxSpool
	}
	if fi.Size()+int64(len(line)) > max {
		return fmt.Errorf("%w (%s is %d bytes); start system3 to read it", ErrSpoolFull, s.Path, fi.Size())
	}
	if fi.Size() > 0 {
		// A writer killed mid-line left a torn tail: start on a line of
		// our own so this event survives.
		if last, err := lastByte(s.Path, fi.Size()); err == nil && last != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("write the hook spool: %w", err)
	}
	return nil
}

func lastByte(path string, size int64) (byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return 0, err
	}
	return b[0], nil
}

// Drain reads every event in the spool and empties it, under the same lock
// as Append, so no event is read twice or lost. skipped counts lines that
// were not events (torn or garbled). A missing spool is empty.
func (s Spool) Drain() (evs []api.HookEvent, skipped int, err error) {
	f, err := os.OpenFile(s.Path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open the hook spool: %w", err)
	}
	defer f.Close()
	if err := lock(f); err != nil {
		return nil, 0, fmt.Errorf("lock the hook spool: %w", err)
	}
	defer unlock(f)
	max := s.Max
	if max <= 0 {
		max = MaxSpool
	}
	// Read a little past the bound: the file never grows past it, except
	// by a torn line.
	b, err := io.ReadAll(io.LimitReader(f, max+64<<10))
	if err != nil {
		return nil, 0, fmt.Errorf("read the hook spool: %w", err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev api.HookEvent
		if json.Unmarshal(line, &ev) != nil || ev.Name == "" {
			skipped++
			continue
		}
		evs = append(evs, ev)
	}
	if err := f.Truncate(0); err != nil {
		return evs, skipped, fmt.Errorf("empty the hook spool: %w", err)
	}
	return evs, skipped, nil
}
