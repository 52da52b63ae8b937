package learn

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/system3-dev/system3/internal/api"
)

// Component is the name the learning tables are versioned under in
// schema_versions.
const Component = "learn"

// migrations are the learning tables' schema steps; append, never edit.
// Times are Unix milliseconds (UTC).
var migrations = []string{
	`CREATE TABLE outcomes (
		id         INTEGER PRIMARY KEY,
		at         INTEGER NOT NULL,
		initiative TEXT NOT NULL,
		outcome    TEXT NOT NULL CHECK (outcome IN ('success', 'partial', 'failure')),
		reasoning  TEXT NOT NULL,
		domain     TEXT NOT NULL,
		validated  INTEGER NOT NULL,
		criteria   TEXT NOT NULL,
		learnings  TEXT NOT NULL,
		blockers   TEXT NOT NULL
	);
	CREATE INDEX outcomes_domain ON outcomes(domain, at);
	CREATE VIRTUAL TABLE outcomes_fts USING fts5(initiative, domain, content='outcomes', content_rowid='id');
	CREATE TRIGGER outcomes_ai AFTER INSERT ON outcomes BEGIN
		INSERT INTO outcomes_fts(rowid, initiative, domain) VALUES (new.id, new.initiative, new.domain);
	END;
	CREATE TRIGGER outcomes_ad AFTER DELETE ON outcomes BEGIN
		INSERT INTO outcomes_fts(outcomes_fts, rowid, initiative, domain) VALUES ('delete', old.id, old.initiative, old.domain);
	END;
	CREATE TABLE learnings (
		id         INTEGER PRIMARY KEY,
		kind       TEXT NOT NULL CHECK (kind IN ('pattern', 'anti-pattern')),
		text       TEXT NOT NULL,
		norm       TEXT NOT NULL,
		domain     TEXT NOT NULL,
		outcome_id INTEGER REFERENCES outcomes(id) ON DELETE SET NULL,
		created    INTEGER NOT NULL,
		last_seen  INTEGER NOT NULL,
		seen       INTEGER NOT NULL DEFAULT 1,
		injected   INTEGER NOT NULL DEFAULT 0,
		stale      INTEGER NOT NULL DEFAULT 0
	);
	CREATE UNIQUE INDEX learnings_key ON learnings(kind, domain, norm);
	CREATE VIRTUAL TABLE learnings_fts USING fts5(text, domain, content='learnings', content_rowid='id');
	CREATE TRIGGER learnings_ai AFTER INSERT ON learnings BEGIN
		INSERT INTO learnings_fts(rowid, text, domain) VALUES (new.id, new.text, new.domain);
	END;
	CREATE TRIGGER learnings_ad AFTER DELETE ON learnings BEGIN
		INSERT INTO learnings_fts(learnings_fts, rowid, text, domain) VALUES ('delete', old.id, old.text, old.domain);
	END;
	CREATE TRIGGER learnings_au AFTER UPDATE OF text, domain ON learnings BEGIN
		INSERT INTO learnings_fts(learnings_fts, rowid, text, domain) VALUES ('delete', old.id, old.text, old.domain);
		INSERT INTO learnings_fts(rowid, text, domain) VALUES (new.id, new.text, new.domain);
	END;
	CREATE TABLE capabilities (
		domain    TEXT PRIMARY KEY,
		attempts  INTEGER NOT NULL,
		successes INTEGER NOT NULL,
		partials  INTEGER NOT NULL,
		failures  INTEGER NOT NULL,
		updated   INTEGER NOT NULL
	);
	CREATE TABLE injections (
		id          INTEGER PRIMARY KEY,
		at          INTEGER NOT NULL,
		initiative  TEXT NOT NULL,
		learning_id INTEGER NOT NULL REFERENCES learnings(id) ON DELETE CASCADE
	);
	CREATE INDEX injections_learning ON injections(learning_id);`,
	// Recall: reflect searches a learning's text, its domain and the
	// initiatives it was learnt in, twice: stemmed words (porter: "tokens"
	// finds "token") and trigrams (a part of a word: "auth" finds "OAuth").
	`CREATE VIRTUAL TABLE recall_words USING fts5(text, domain, initiative, tokenize='porter unicode61');
	CREATE VIRTUAL TABLE recall_parts USING fts5(text, domain, initiative, tokenize='trigram');
	CREATE TRIGGER recall_ai AFTER INSERT ON learnings BEGIN
		INSERT INTO recall_words(rowid, text, domain, initiative)
			VALUES (new.id, new.text, new.domain, COALESCE((SELECT initiative FROM outcomes WHERE id = new.outcome_id), ''));
		INSERT INTO recall_parts(rowid, text, domain, initiative)
			VALUES (new.id, new.text, new.domain, COALESCE((SELECT initiative FROM outcomes WHERE id = new.outcome_id), ''));
	END;
	CREATE TRIGGER recall_ad AFTER DELETE ON learnings BEGIN
		DELETE FROM recall_words WHERE rowid = old.id;
		DELETE FROM recall_parts WHERE rowid = old.id;
	END;
	CREATE TRIGGER recall_au AFTER UPDATE OF text, domain ON learnings BEGIN
		UPDATE recall_words SET text = new.text, domain = new.domain WHERE rowid = new.id;
		UPDATE recall_parts SET text = new.text, domain = new.domain WHERE rowid = new.id;
	END;
	INSERT INTO recall_words(rowid, text, domain, initiative)
		SELECT l.id, l.text, l.domain, COALESCE(o.initiative, '') FROM learnings l LEFT JOIN outcomes o ON o.id = l.outcome_id;
	INSERT INTO recall_parts(rowid, text, domain, initiative)
		SELECT l.id, l.text, l.domain, COALESCE(o.initiative, '') FROM learnings l LEFT JOIN outcomes o ON o.id = l.outcome_id;`,
	// Who reported each learning, as the service saw them: a spawn's
	// first prompt quotes a learning as its reporter's, and an operator
	// lists and deletes them by it. Learnings stored before read as
	// reported by nobody known ('').
	`ALTER TABLE learnings ADD COLUMN reported_by TEXT NOT NULL DEFAULT '';`,
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", api.ErrLearnInvalid, fmt.Sprintf(format, a...))
}

// Options tune a Store. The zero value works: retrieval-only reflection
// and the wall clock.
type Options struct {
	// ReflectCommand, run through sh -c, writes a reflection from the
	// retrieved material it reads on stdin (for example "claude -p");
	// used by Reflect with budget high. Empty: reflection is retrieval only.
	ReflectCommand string
	// ReflectTimeout bounds ReflectCommand; 0 means DefaultReflectTimeout.
	ReflectTimeout time.Duration
	// Clock tells the time; nil means time.Now.
	Clock func() time.Time
}

// DefaultReflectTimeout bounds a reflect command when no timeout is
// configured: within the 25 s an MCP reflect call waits.
const DefaultReflectTimeout = 20 * time.Second

// Store is the learning store: outcomes, the patterns and anti-patterns
// learnt from them, capabilities per domain, and reflection over them. It
// is safe for concurrent use, and other processes may use the same
// database file at the same time.
type Store struct {
	db   *sql.DB
	path string
	opts Options
	// lastWrite is when this process last wrote an outcome or an
	// injection (Unix ms), so the maintainer leaves a busy store alone.
	lastWrite atomic.Int64
}

// Open opens (creating and migrating it if needed) the learning store in
// stateDir.
func Open(stateDir string) (*Store, error) { return OpenOptions(stateDir, Options{}) }

// OpenOptions is Open with options.
func OpenOptions(stateDir string, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.ReflectTimeout <= 0 {
		opts.ReflectTimeout = DefaultReflectTimeout
	}
	path := filepath.Join(stateDir, FileName)
	db, err := OpenDB(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Migrate(ctx, db, Component, migrations); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, path: path, opts: opts}, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) now() time.Time { return s.opts.Clock() }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// tx runs fn in one write transaction (BEGIN IMMEDIATE, so concurrent
// writers queue on the busy timeout instead of failing on upgrade; a
// start refused as busy is tried again). An error means nothing was
// written: a failed commit rolls back.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := beginRetry(ctx, s.db)
	if err != nil {
		return StorageError(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return StorageError(err)
	}
	return StorageError(tx.Commit())
}

// normDomain is a domain as stored: trimmed, lower case, "general" when
// none is given.
func normDomain(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if d == "" {
		return "general"
	}
	return d
}
