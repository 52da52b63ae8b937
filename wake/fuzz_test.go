package wake

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/system3-dev/system3/internal/testsupport/testkit"
)

// FuzzLoadJournal feeds arbitrary bytes to the journal reader. It must never
// fail or panic on content, and what it rebuilds must survive a compaction:
// the snapshot replays, without warnings, to the same wakes, active
// conditions and seq.
func FuzzLoadJournal(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzLoadJournal.
	f.Add([]byte(`{"v":1,"type":"raise","event":{"id":"w0000000001-1","seq":1,"time":"1970-01-01T00:00:00.001Z","key":"k","reason":"awaiting_input"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ld, err := loadJournal(bytes.NewReader(data), "j", 3)
		if err != nil {
			t.Fatalf("content made an error: %v", err)
		}
		for _, w := range ld.warnings {
			if w.Line < 1 || w.Offset < 0 || w.Offset >= int64(len(data)) || w.Problem == "" {
				t.Fatalf("bad warning %+v", w)
			}
		}
		if ld.size != int64(len(data)) {
			t.Fatalf("read %d bytes of %d", ld.size, len(data))
		}
		for i := 1; i < len(ld.st.events); i++ {
			if ld.st.events[i].Seq <= ld.st.events[i-1].Seq {
				t.Fatalf("events out of seq order")
			}
		}
		acked, prunable := 0, 0
		for _, ev := range ld.st.events {
			if ev.Acked {
				acked++
				if !ld.st.isActive(ev) {
					prunable++
				}
			}
		}
		if acked != ld.st.acked || prunable != ld.st.prunable || prunable > 3 {
			t.Fatalf("counters: acked %d (counted %d), prunable %d (counted %d), keep 3", ld.st.acked, acked, ld.st.prunable, prunable)
		}
		snap, err := ld.st.snapshot(time.Unix(0, 0))
		if err != nil {
			return // e.g. a time JSON cannot encode; compaction then keeps the old file
		}
		ld2, err := loadJournal(bytes.NewReader(bytes.Join(snap, nil)), "j", 3)
		if err != nil || len(ld2.warnings) != 0 {
			t.Fatalf("snapshot does not replay cleanly: %v %v", err, ld2.warnings)
		}
		if a, b := testkit.MustJSON(t, ld.st.events), testkit.MustJSON(t, ld2.st.events); a != b {
			t.Fatalf("events differ after compaction:\n%s\n%s", a, b)
		}
		if a, b := testkit.MustJSON(t, ld.st.active), testkit.MustJSON(t, ld2.st.active); a != b {
			t.Fatalf("active conditions differ after compaction:\n%s\n%s", a, b)
		}
		if ld.st.seq != ld2.st.seq || ld.st.acked != ld2.st.acked {
			t.Fatalf("seq %d/%d acked %d/%d after compaction", ld.st.seq, ld2.st.seq, ld.st.acked, ld2.st.acked)
		}
		if strings.Count(string(data), "\n") < ld.records-1 {
			t.Fatalf("%d records from %d lines", ld.records, strings.Count(string(data), "\n"))
		}
	})
}
