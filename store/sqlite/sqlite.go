// Package sqlite is the embedded record store: one SQLite file (by default
// <workspace>/.orca/orca.db) in WAL mode, through modernc.org/sqlite, a
// pure-Go SQLite that needs no cgo.
//
// # Durability
//
// By default every commit is synced (PRAGMA synchronous=FULL): once Append
// returns, the records survive a crash of the process, of the operating
// system, or a power cut. WithDurability(Normal) syncs the write-ahead log
// only at checkpoints: an acknowledged write still survives the process
// being killed, but the last commits may be lost if the machine goes down.
// It more than doubles the rate of single-record appends (BenchmarkAppend).
//
// # Concurrency
//
// A Store is one *sql.DB. Reads run in parallel on a pool of connections,
// each seeing a consistent snapshot (WAL readers never wait for the
// writer). Writes are run by one goroutine, the committer, with group
// commit: the writes that arrive while a transaction commits wait, and
// then go in one transaction together, with one sync for them all; when
// one of them fails, the batch is run again with each write inside a
// savepoint of its own (see committer). So writers of this
// process never compete for SQLite's write lock, a write that fails
// undoes only itself, and many sessions appending at once share the cost
// of the sync instead of queueing for one each (BenchmarkAppendConcurrent).
// Each write transaction starts with BEGIN IMMEDIATE, which takes the write
// lock at once: against another process on the same file (the CLI next to
// a server), a transaction waits up to the busy timeout at BEGIN, rather
// than failing with SQLITE_BUSY half-way when it tries to upgrade a read
// lock.
//
// # Acknowledgement and cancellation
//
// A write returns nil only once its transaction has committed (and, with
// Full, been synced): an acknowledged write survives a crash as the
// durability promises. A write that returns an error wrote nothing (short
// of the file system failing the commit itself, when, as with any
// database, the outcome is not known). Its context counts only while the
// write waits for its turn: canceled then, the write is withdrawn and
// returns the context's error; once the committer has begun it, the
// caller waits for the outcome (no longer than one batch takes) and gets
// it, whether its context ended meanwhile or not. So a canceled Append
// either stored nothing and says so, or stored its records and returns
// them; it never stores them and reports a failure.
//
// Close refuses the writes that come after it (ErrClosed), and waits for
// the ones already waiting: each is committed and acknowledged, or fails
// with its own error, before the file is closed.
//
// # Schema
//
// Versioned migrations are recorded in schema_migrations and applied in
// one transaction when the store opens; a file written by a newer orca is
// refused rather than misread. Times are stored as Unix nanoseconds (UTC),
// messages as JSON (see Record.Message for what is kept exactly), and
// foreign keys are enforced. A long transcript also keeps a snapshot of
// its live records, in binary chunks that FinishTurn adds to (when 256
// live records are past the last chunk; appends do when 2,048 are) and
// that compaction resets, so that a resume decodes a few blobs and the
// rows after them: a cache, never the truth.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/orca-agent/orca/store/internal/clock"
	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// DefaultPath returns where the CLI keeps a workspace's store:
// <workspace>/.orca/orca.db.
func DefaultPath(workspace string) string {
	return filepath.Join(workspace, ".orca", "orca.db")
}

// Durability chooses how hard a commit works to survive a crash.
type Durability int

const (
	// Full syncs every commit to disk (PRAGMA synchronous=FULL): an
	// acknowledged write survives a crash of the process, of the operating
	// system, or a power cut. The default.
	Full Durability = iota
	// Normal syncs the write-ahead log only at checkpoints (PRAGMA
	// synchronous=NORMAL): an acknowledged write survives the process being
	// killed, but the last commits may be lost if the operating system
	// crashes or the power fails. The database is never corrupted.
	Normal
)

func (d Durability) pragma() (string, error) {
	switch d {
	case Full:
		return "FULL", nil
	case Normal:
		return "NORMAL", nil
	}
	return "", fmt.Errorf("unknown durability %d", int(d))
}

// Option configures Open.
type Option func(*options)

type options struct {
	durability  Durability
	busyTimeout time.Duration
}

// WithDurability sets the durability of commits; the default is Full.
func WithDurability(d Durability) Option { return func(o *options) { o.durability = d } }

// WithBusyTimeout sets how long a write waits for another process that
// holds the database's write lock before it fails; the default is 5s.
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// Store is the SQLite record store; it implements store.Store,
// store.Observations and store.Schedules. It is safe for concurrent use,
// and several processes may open the same file.
type Store struct {
	*shared
	db    *sql.DB
	path  string
	where sqlstore.Where // sqlite <path>
	// committer runs every write transaction (see the package
	// documentation); it starts once the schema is up to date.
	committer *committer
	stmts     *stmts
	reads     readStmts
	frontiers frontiers
	clock     clock.Clock
	closed    atomic.Bool
}

// shared are the methods store/postgres has too, with the same flow
// (store/internal/sqlstore).
type shared = sqlstore.Store

// Open opens the store at path, creating the file and its parent folders
// (mode 0700: transcripts are private) if they do not exist, and brings
// the schema up to date.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{durability: Full, busyTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("sqlite store: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", path, err)
	}
	syncMode, err := o.durability.pragma()
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", abs, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, syncMode, o.busyTimeout))
	if err != nil {
		return nil, fmt.Errorf("sqlite store: open %s: %w", abs, err)
	}
	conns := max(4, runtime.GOMAXPROCS(0)) + 1 // the readers', and the committer's own
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	s := &Store{db: db, path: abs, where: sqlstore.Where("sqlite " + abs)}
	s.shared = sqlstore.New(database{s}, dialect, s.hooks(), &s.clock, s.where)
	if err := s.init(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store: open %s: %w", abs, err)
	}
	if s.stmts, err = prepare(context.Background(), db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store: open %s: %w", abs, err)
	}
	s.committer = startCommitter(db, s.stmts)
	return s, nil
}

// dsn is the data source name for path: a file: URI (so that any byte of
// the path survives) with the settings every pooled connection applies.
func dsn(path, syncMode string, busy time.Duration) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows volume: file:///C:/...
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", syncMode)
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}
	return u.String()
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q: the file system does not support WAL", mode)
	}
	// The migrations run before the committer starts, in a transaction
	// of their own, and before the tables the prepared statements name
	// exist.
	begin := func(ctx context.Context, fn func(ctx context.Context, tx sqlstore.Querier) error) error {
		return transact(ctx, s.db, nil, func(ctx context.Context, tx *writeTx) error { return fn(ctx, querier{tx: tx}) })
	}
	return schema.Open(ctx, querier{db: s.db}, begin, &s.clock)
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the store: the writes already waiting are committed (or
// fail with their own error) and answered first, later calls return
// ErrClosed, and the file is closed. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.committer.stop()
	s.stmts.close()
	s.reads.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("sqlite store: close %s: %w", s.path, err)
	}
	return nil
}

// write runs fn in a write transaction through the committer. fn runs
// with the committer's context, not the caller's (see committer), and may
// run again in a transaction of its own if its batch could not commit, so
// it sets its results afresh each time. ctx is honoured only while the
// write waits for its turn.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx *writeTx) error) error {
	if s.closed.Load() {
		return errClosed
	}
	return s.committer.do(ctx, fn)
}

// read checks that the store is open before a read.
func (s *Store) read(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// database is the store as the shared methods use it (sqlstore.DB):
// reads on the database, and writes through the committer.
type database struct{ *Store }

func (s database) Read(ctx context.Context) (sqlstore.Querier, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return querier{db: s.db, stmts: s.stmts, reads: &s.reads}, nil
}

func (s database) Write(ctx context.Context, fn func(ctx context.Context, tx sqlstore.Querier) error) error {
	return s.write(ctx, func(ctx context.Context, tx *writeTx) error { return fn(ctx, querier{tx: tx}) })
}

// querier runs the shared methods' statements in a write transaction
// (tx), or for reads on the database; those the store prepares (queries)
// run prepared.
type querier struct {
	tx    *writeTx
	db    *sql.DB
	stmts *stmts // the database's, for reads; nil until prepared
	reads *readStmts
}

// prepared returns the prepared statement of query, or nil.
func (q querier) prepared(query string) *sql.Stmt {
	id, ok := preparedIDs[query]
	switch {
	case !ok:
		return nil
	case q.tx != nil && q.tx.stmts != nil:
		return q.tx.stmt(id)
	case q.tx == nil && q.stmts != nil:
		return q.stmts[id]
	}
	return nil
}

// statement returns a prepared statement of query: one of queries, or,
// for a read, one the store prepared the first time it ran (nil: run it
// unprepared).
func (q querier) statement(ctx context.Context, query string) *sql.Stmt {
	if st := q.prepared(query); st != nil {
		return st
	}
	if q.tx == nil && q.reads != nil {
		return q.reads.get(ctx, q.db, query)
	}
	return nil
}

// on is what runs a statement that is not prepared.
func (q querier) on() interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
} {
	if q.tx != nil {
		return q.tx
	}
	return q.db
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Scanner {
	if st := q.statement(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.on().QueryRowContext(ctx, query, args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	var rows *sql.Rows
	var err error
	if st := q.statement(ctx, query); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = q.on().QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := q.prepared(query); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = q.on().ExecContext(ctx, query, args...)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sqlRows are database/sql's rows as the shared methods read them.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
