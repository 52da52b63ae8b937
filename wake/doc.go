// Package wake raises, records and delivers wake events: the moments when a
// person or a supervising agent must act on an agent session.
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
//
// Replaying the records is idempotent, so a record written twice (a retry
// after a failed fsync) does no harm, and readers skip, and report, lines they
// cannot parse or record types they do not know.
//
// Only one process may own a journal ([AcquireLock]); others read it with
// [ReadJournal].
package wake
