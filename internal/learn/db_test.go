package learn

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestMigrateConcurrentAndVersioned(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	steps := []string{
		`CREATE TABLE a (x INTEGER)`,
		`CREATE VIRTUAL TABLE a_fts USING fts5(body)`,
		`ALTER TABLE a ADD COLUMN y TEXT`,
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := OpenDB(path)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			errs <- Migrate(context.Background(), db, "test", steps)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err := OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM schema_versions WHERE component='test'`).Scan(&v); err != nil || v != 3 {
		t.Fatalf("version = %d, %v; want 3", v, err)
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	err = Migrate(context.Background(), db, "test", steps[:2])
	if err == nil || !strings.Contains(err.Error(), "upgrade system3") {
		t.Fatalf("older binary on a newer database: err = %v", err)
	}
}
