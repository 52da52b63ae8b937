package wake

import (
	"fmt"
	"strconv"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// maxSeq is the largest seq a wake can have: IDs hold seq in ten digits so
// they sort in creation order. At one wake a second that is three centuries.
const maxSeq = 9_999_999_999

// Checks on what a journal record may hold. The journal is written only by
// the store, so anything these reject was damaged or written by hand. They
// cannot tell a well-formed record written by hand from one the store wrote:
// whoever can write the state dir can write any wake.
const (
	maxReasonLen = 64
	maxFieldLen  = 1 << 20 // one field of one record; the store never writes more than a few KB
)

// parseEventID splits an ID made by eventID into its seq and time, or reports
// that it is not one.
func parseEventID(id string) (seq uint64, ms int64, ok bool) {
	if len(id) < 13 || id[0] != 'w' || id[11] != '-' {
		return 0, 0, false
	}
	for _, c := range id[1:11] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	seq, err := strconv.ParseUint(id[1:11], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	suffix := id[12:]
	for _, c := range suffix {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return 0, 0, false
		}
	}
	ms, err = strconv.ParseInt(suffix, 36, 64)
	if err != nil || formatBase36(ms) != suffix {
		return 0, 0, false
	}
	return seq, ms, true
}

func validReason(r api.Reason) bool {
	if len(r) == 0 || len(r) > maxReasonLen || r[0] < 'a' || r[0] > 'z' {
		return false
	}
	for _, c := range []byte(r) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// validTime rejects the zero time and times before the Unix epoch, which
// no clock the store reads gives.
func validTime(t time.Time) bool { return !t.IsZero() && t.UnixMilli() > 0 }

// checkEvent reports what is wrong with the event of a raise record, or "".
// The ID must be the one the store would have made from the event's seq and
// time, so a record cannot claim one order in its ID and another in its seq.
func checkEvent(ev *api.Wake) string {
	switch {
	case ev == nil || ev.ID == "":
		return "a raise record without an event id"
	case ev.Seq == 0 || ev.Seq > maxSeq:
		return fmt.Sprintf("wake %.40s has seq %d, outside 1..%d", ev.ID, ev.Seq, uint64(maxSeq))
	case !validTime(ev.Time):
		return fmt.Sprintf("wake %.40s has no valid time", ev.ID)
	}
	seq, ms, ok := parseEventID(ev.ID)
	switch {
	case !ok:
		return fmt.Sprintf("wake id %.40q is not of the form w<10-digit seq>-<base-36 time>", ev.ID)
	case seq != ev.Seq || ms != ev.Time.UnixMilli():
		return fmt.Sprintf("wake id %s does not match its seq %d and time %s", ev.ID, ev.Seq, ev.Time.Format(time.RFC3339Nano))
	case !validReason(ev.Reason):
		return fmt.Sprintf("wake %s has no valid reason (%.40q)", ev.ID, ev.Reason)
	case ev.Key == "" || len(ev.Key) > maxFieldLen:
		return fmt.Sprintf("wake %s has no valid key", ev.ID)
	case ev.Acked && !validTime(ev.AckedAt):
		return fmt.Sprintf("wake %s is acknowledged without a valid time", ev.ID)
	case !ev.Acked && (!ev.AckedAt.IsZero() || ev.AckedBy != ""):
		return fmt.Sprintf("wake %s has ack fields but is not acknowledged", ev.ID)
	}
	return ""
}

// checkRecord reports what is wrong with a record whatever its place in the
// journal, or "".
func checkRecord(r *record) string {
	if r.V != recordVersion {
		return fmt.Sprintf("a %q record of version %d (this system3 reads version %d; written by another system3?)", r.Type, r.V, recordVersion)
	}
	switch r.Type {
	case recRaise:
		return checkEvent(r.Event)
	case recAck:
		if len(r.IDs) == 0 {
			return "an ack record without wake ids"
		}
		for _, id := range r.IDs {
			if _, _, ok := parseEventID(id); !ok {
				return fmt.Sprintf("an ack record for %.40q, which is no wake id", id)
			}
		}
		if !validTime(r.At) {
			return "an ack record without a valid time"
		}
	case recClear:
		if r.Key == "" {
			return "a clear record without a key"
		}
		if _, _, ok := parseEventID(r.ID); !ok {
			return fmt.Sprintf("a clear record for %.40q, which is no wake id", r.ID)
		}
	case recSeq:
		if r.Seq > maxSeq {
			return fmt.Sprintf("a seq record of %d, beyond the largest seq %d", r.Seq, uint64(maxSeq))
		}
	case recRename:
		if len(r.IDs) == 0 || r.Session == "" || len(r.Session) > maxFieldLen {
			return "a rename record without wake ids or a session name"
		}
		for _, id := range r.IDs {
			if _, _, ok := parseEventID(id); !ok {
				return fmt.Sprintf("a rename record for %.40q, which is no wake id", id)
			}
		}
		if !validTime(r.At) {
			return "a rename record without a valid time"
		}
	}
	return ""
}
