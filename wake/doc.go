// Package wake raises, records and delivers wake events: the moments when a
// person or a supervising agent must act on an agent session.
//
// The wake itself (api.Wake: its reason, evidence, suggested action; the
// filter and the messages subscribers get) is part of system3's vocabulary
// in internal/api; this package is where wakes live.
//
// A [Store] keeps one event per active condition (its dedup key), journals
// every change to an append-only file before anyone hears of it, so a restart
// loses no unacknowledged wake, and fans events out to subscribers without
// ever letting a slow one block the monitors that raise them.
//
// The journal (wakes.jsonl in the state dir) holds one JSON record per line:
//
//	{"v":1,"type":"raise","event":{...}}                       a new wake, the whole event
//	{"v":1,"type":"ack","ids":["w…"],"by":"tui","at":"…"}      wakes acknowledged
//	{"v":1,"type":"clear","key":"…","id":"w…","at":"…"}        the condition of wake id ended
//	{"v":1,"type":"seq","seq":42}                              the seq counter (after compaction)
//	{"v":1,"type":"rename","ids":["w…"],"session":"…","at":"…"} open wakes' session was renamed
//
// Replaying the records is idempotent, so a record written twice (a retry
// after a failed fsync) does no harm. Readers check every record against what
// the store writes (see validate.go: version, fields, times, reason syntax,
// an ID made from the event's own seq and time, seqs in order with no jump
// past the counter, a seq record only at the start of the file) and skip, and
// report, what fails, without losing the records around it. The owner of the
// journal moves the lines it skips to wakes.quarantine.jsonl, whole, and
// rewrites the journal without them.
//
// These checks catch damage and mistakes, not intent: whoever can write the
// state dir (the user system3 runs as) can write a record the store could
// have written, and it is read as a real wake.
//
// Only one process may own a journal ([AcquireLock]); others read it with
// [ReadJournal].
package wake
