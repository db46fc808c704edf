// Package postgres is the record store on PostgreSQL, through pgx
// (github.com/jackc/pgx/v5) and its connection pool: the store for many
// processes at once — servers, workers on several machines — that share
// their sessions. It keeps what store/sqlite keeps, with the same
// semantics, and passes the same conformance suite (store/storetest).
//
// # Transactions
//
// Every write is one transaction at READ COMMITTED. A write that adds to
// a session first takes the session's row lock (an UPDATE of its row, or
// SELECT … FOR UPDATE), so that writes to one session — its appends, its
// lease, its deletion — happen one after the other, while writes to
// different sessions do not wait for each other. A session's next Seq is
// kept in its row (last_seq), so the lock that orders the appends also
// numbers them, with no gaps. AppendStep's lease check, its records and
// its totals are one transaction: all of it is written or none.
//
// # Acknowledgement and cancellation
//
// A write's context counts until the write has a connection; then the
// transaction runs to its end without it (context.WithoutCancel), because
// a commit cut off half way leaves its outcome unknown: the server may
// have committed what the caller is told failed. So a canceled write
// either stored nothing and returns the context's error, or stored
// everything and returns its result, as the Store contract asks. Reads
// are canceled at once.
//
// # Schema
//
// Versioned migrations are recorded in schema_migrations, each applied in
// a transaction of its own under a transaction-scoped advisory lock (one
// per schema), so that processes starting together migrate once; a
// database written by a newer orca is refused rather than misread. The
// tables live in the connection's current schema (search_path), so that
// one database can hold several stores. Times are Unix nanoseconds in
// BIGINT columns (TIMESTAMPTZ keeps microseconds only; the contract keeps
// nanoseconds), messages their stored JSON form (store/internal/wire) and
// observation data their bytes, both as BYTEA: JSONB would reformat a
// tool's input, which must come back byte for byte. So are the strings
// people and models write — a session's workspace, agent and last prompt,
// an approval's rule, a parked call's reason, decider and note, a
// schedule's spec, time zone and prompt, a fire's error — since
// TEXT, which PostgreSQL keeps as UTF-8 without NUL, would refuse a
// prompt typed in Latin-1 at the end of its turn; they come back byte for
// byte, as store/sqlite's do. Ids, statuses and a parked call's rules (as
// JSON) are TEXT: an id that is not UTF-8 or holds NUL is refused, with
// the server's error, when the session is provisioned.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/clock"
	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// Store is the PostgreSQL record store; it implements store.Store,
// store.Observations and store.Schedules. It is safe for concurrent use, and any number of
// processes may open the same database.
type Store struct {
	*shared
	pool   *pgxpool.Pool
	where  sqlstore.Where // postgres host:port/database (never the password)
	clock  clock.Clock
	closed atomic.Bool
}

// shared are the methods store/sqlite has too, with the same flow
// (store/internal/sqlstore).
type shared = sqlstore.Store

var (
	_ store.Store        = (*Store)(nil)
	_ store.Observations = (*Store)(nil)
	_ store.Schedules    = (*Store)(nil)
)

// Open connects to the database dsn names (a URL, postgres://user@host/db,
// or key=value pairs, as libpq takes them; pool settings such as
// pool_max_conns too) and brings the schema up to date.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres store: open: %w", err)
	}
	where := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))) + "/" + cfg.ConnConfig.Database
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres store: open %s: %w", where, err)
	}
	s := &Store{pool: pool, where: sqlstore.Where("postgres " + where)}
	s.shared = sqlstore.New(db{s}, dialect, sqlstore.Hooks{}, &s.clock, s.where)
	begin := func(ctx context.Context, fn func(ctx context.Context, tx sqlstore.Querier) error) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fn(ctx, querier{tx}) })
	}
	if err := schema.Open(ctx, querier{pool}, begin, &s.clock); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres store: open %s: %w", where, err)
	}
	return s, nil
}

// Close closes the store: it waits for the writes under way, refuses later
// calls (store.ErrClosed), and closes the pool's connections. It is
// idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.Close()
	return nil
}

// write runs fn in a transaction. ctx counts until the transaction has a
// connection; fn gets a context without its cancellation (see the package
// documentation). A deadlock the server broke is tried again, since it
// undid the whole transaction.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.closed.Load() {
			return store.ErrClosed
		}
		return err
	}
	defer conn.Release()
	wctx := context.WithoutCancel(ctx)
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(wctx, conn, func(tx pgx.Tx) error { return fn(wctx, tx) })
		var pgErr *pgconn.PgError
		if attempt < 3 && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001") {
			continue
		}
		return err
	}
}

// read checks that the store is open before a read.
func (s *Store) read(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// db is the store as the shared methods use it (sqlstore.DB): reads on
// the pool, and writes in transactions of write.
type db struct{ *Store }

func (s db) Read(ctx context.Context) (sqlstore.Querier, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return querier{s.pool}, nil
}

func (s db) Write(ctx context.Context, fn func(ctx context.Context, tx sqlstore.Querier) error) error {
	return s.write(ctx, func(ctx context.Context, tx pgx.Tx) error { return fn(ctx, querier{tx}) })
}

// querier runs the shared methods' statements on a transaction or on the
// pool, their ? placeholders numbered.
type querier struct {
	q interface {
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Scanner {
	return q.q.QueryRow(ctx, numbered(query, args), args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.q.Query(ctx, numbered(query, args), args...)
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, numbered(query, args), args...)
	return tag.RowsAffected(), err
}

// numbered is query with its placeholders numbered; a statement with no
// arguments (a migration's script) is run as written.
func numbered(query string, args []any) string {
	if len(args) == 0 {
		return query
	}
	return sqlstore.Numbered(query)
}
