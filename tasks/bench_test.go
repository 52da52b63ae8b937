package tasks

import (
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"
)

func makeBigList(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "big")
	for i := 1; i <= n; i++ {
		var blockedBy []string
		if i > 1 {
			blockedBy = []string{fmt.Sprint(i - 1)}
		}
		writeFile(b, filepath.Join(dir, fmt.Sprintf("%d.json", i)), taskJSON(fmt.Sprint(i), StatusPending, fmt.Sprintf("task number %d", i), blockedBy...))
	}
	return dir
}

// BenchmarkLoadList1000 reads, parses and summarises a list of 1,000 task files.
func BenchmarkLoadList1000(b *testing.B) {
	dir := makeBigList(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		l, err := LoadList(dir)
		if err != nil || len(l.Tasks) != 1000 {
			b.Fatal(err, len(l.Tasks))
		}
	}
}

// BenchmarkUpdateOneIn1000 is the watcher's work when one task of a
// 1,000-task list changes: read that file, diff, rebuild the list.
func BenchmarkUpdateOneIn1000(b *testing.B) {
	dir := makeBigList(b, 1000)
	e := newEngine(filepath.Dir(dir), "")
	e.quiet = true
	e.syncAll(false)
	e.finish()
	e.quiet = false
	ls := e.lists[dir]
	p := filepath.Join(dir, "500.json")
	statuses := []Status{StatusInProgress, StatusPending}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		writeFile(b, p, taskJSON("500", statuses[i%2], "task number 500", "499"))
		i++
		e.syncTaskFile(ls, p, false, false)
		if evs := e.finish(); len(evs) != 1 {
			b.Fatalf("events = %v", evs)
		}
	}
}

// BenchmarkParseTask parses one typical task file.
func BenchmarkParseTask(b *testing.B) {
	data := readFixture(b, "parse/in-progress-owner.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseTask(data, "2"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseTodos(b *testing.B) {
	data := readFixture(b, "legacy/basic.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseTodos(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteText1000(b *testing.B) {
	l, err := LoadList(makeBigList(b, 1000))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteText(io.Discard, []List{l}, now); err != nil {
			b.Fatal(err)
		}
	}
}
