// Package learn is system3's memory: an embedded SQLite database (pure Go,
// modernc.org/sqlite, with FTS5) in the state dir that keeps outcomes,
// patterns, capabilities and interventions. The dashboard, the daemon and
// CLI commands open it at the same time; WAL mode and a busy timeout make
// that safe.
package learn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/system3-dev/system3/internal/api"
)

// FileName is the database's name in the state dir.
const FileName = "learn.db"

// OpenDB opens (creating it if needed) the database at path with the
// settings every system3 process uses: WAL journaling, a 5 s busy timeout,
// foreign keys on. It does not migrate; components call Migrate.
func OpenDB(path string) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the directory for %s: %w", path, err)
	}
	// Create the file 0600 before SQLite does (with the umask's mode): its
	// -wal and -shm files take the database's mode, and a first write that
	// fails (a full disk) must not leave a readable database behind.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, StorageError(err))
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("restrict %s: %w", path, err)
	}
	// WAL is set once below, not by every connection: switching a
	// database to WAL takes an exclusive lock, and SQLite answers a
	// connection that asks for it while another one reads with an
	// immediate SQLITE_BUSY, past any busy timeout. WAL stays set in the
	// file, so later connections only read it.
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Connections of several processes switching a new database to WAL at
	// once can also lose the race on the rollback journal or its locks
	// (SQLITE_IOERR_DELETE_NOENT, _RDLOCK...): the switch changed nothing
	// then, and the next try finds WAL set.
	err = retryWhile(ctx, isBusyOrIOErr, func() error {
		var mode string
		if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("journal mode is %q, not WAL", mode)
		}
		return nil
	})
	if err != nil {
		db.Close()
		if errors.Is(StorageError(err), api.ErrLearnStorage) {
			return nil, fmt.Errorf("open %s: %w", path, StorageError(err))
		}
		return nil, fmt.Errorf("open %s: %w (is it a system3 database? move it aside to start afresh)", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		db.Close()
		return nil, fmt.Errorf("restrict %s: %w", path, err)
	}
	return db, nil
}

// isBusy reports an SQLITE_BUSY or SQLITE_LOCKED error (any extended
// code of them).
func isBusy(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// retryBusy runs fn, again while it fails with SQLITE_BUSY, until ctx
// ends. The busy timeout makes SQLite wait for most locks itself; it
// gives up at once where waiting could deadlock (a reader asking for the
// write lock, a change of journal mode, a connection opening while another
// recovers the WAL). fn must have changed nothing when it fails busy:
// retry only the start of a transaction, never its commit.
func retryBusy(ctx context.Context, fn func() error) error {
	return retryWhile(ctx, isBusy, fn)
}

// isBusyOrIOErr is isBusy, or any SQLITE_IOERR.
func isBusyOrIOErr(err error) bool {
	var e *sqlite.Error
	return isBusy(err) || errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_IOERR
}

// retryWhile runs fn, again while its error satisfies again, until ctx
// ends, backing off.
func retryWhile(ctx context.Context, again func(error) bool, fn func() error) error {
	delay := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil || !again(err) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// beginRetry is BeginTx (BEGIN IMMEDIATE with _txlock=immediate), again
// while the database is busy, for up to the busy timeout when ctx has no
// earlier deadline.
func beginRetry(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	rctx, cancel := context.WithTimeout(ctx, busyRetry)
	defer cancel()
	var tx *sql.Tx
	err := retryBusy(rctx, func() error {
		var err error
		// The transaction lives on after rctx: BeginTx ties it to the
		// context it is given.
		tx, err = db.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

// busyRetry bounds retryBusy around the start of a transaction.
const busyRetry = 30 * time.Second

type storageError struct{ err error }

func (e *storageError) Error() string {
	return fmt.Sprintf("%v (free disk space or fix the state dir, then try again)", e.err)
}
func (e *storageError) Unwrap() error        { return e.err }
func (e *storageError) Is(target error) bool { return target == api.ErrLearnStorage }

// StorageError marks err as ErrStorage when it is a failure of the disk
// under the database (SQLite's FULL, IOERR, READONLY, CANTOPEN, PERM, or the
// same errors from the file system), and returns other errors as they are.
func StorageError(err error) error {
	if err == nil || errors.Is(err, api.ErrLearnStorage) {
		return err
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case 3, 8, 10, 13, 14: // SQLITE_PERM, READONLY, IOERR, FULL, CANTOPEN
			return &storageError{err}
		}
		return err
	}
	for _, e := range []error{syscall.ENOSPC, syscall.EFBIG, syscall.EIO, syscall.EROFS, syscall.EDQUOT, os.ErrPermission} {
		if errors.Is(err, e) {
			return &storageError{err}
		}
	}
	return err
}

// Migrate brings one component's tables up to date. steps[i] is the SQL
// that moves the component from version i to i+1; applied versions are
// recorded in schema_versions, so each step runs once, in a transaction, even
// when several processes open the database at the same moment. A database
// newer than this binary (more versions recorded than steps known) is an
// error: an older system3 must not write to tables it does not understand.
func Migrate(ctx context.Context, db *sql.DB, component string, steps []string) error {
	if err := retryBusy(ctx, func() error {
		_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_versions (
			component TEXT PRIMARY KEY,
			version   INTEGER NOT NULL,
			applied   TEXT NOT NULL
		)`)
		return err
	}); err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	for {
		done, err := migrateStep(ctx, db, component, steps)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// migrateStep applies the next step, if any, and reports whether the
// component is up to date.
func migrateStep(ctx context.Context, db *sql.DB, component string, steps []string) (bool, error) {
	tx, err := beginRetry(ctx, db) // _txlock=immediate: one migrator at a time
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", component, err)
	}
	defer tx.Rollback()
	var v int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_versions WHERE component = ?`, component).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("migrate %s: %w", component, err)
	}
	if v > len(steps) {
		return false, fmt.Errorf("the %s tables are at version %d but this system3 knows only %d: upgrade system3", component, v, len(steps))
	}
	if v == len(steps) {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, steps[v]); err != nil {
		return false, fmt.Errorf("migrate %s to version %d: %w", component, v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_versions(component, version, applied) VALUES(?, ?, ?)
		ON CONFLICT(component) DO UPDATE SET version = excluded.version, applied = excluded.applied`,
		component, v+1, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return false, fmt.Errorf("migrate %s to version %d: %w", component, v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate %s to version %d: %w", component, v+1, err)
	}
	return false, nil
}
