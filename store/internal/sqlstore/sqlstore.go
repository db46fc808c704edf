// Package sqlstore is what orca's SQL stores (store/sqlite,
// store/postgres) share: the store.Store, store.Observations and
// store.Schedules methods whose flow is the same in both (Store, which
// each driver's store embeds), the lease checks (Holds), how their
// errors name the database (Where), the migrations runner (Schema), and
// their rows — the columns of the tables they both have, and how a row
// of them becomes a store value. Times are Unix nanoseconds in both.
//
// A driver brings its database (DB: its reads, its write transactions,
// and the writes it does its own way — appends of records and of
// observation rows), the SQL that differs between the two (Dialect), and
// what it keeps besides the shared tables (Hooks: SQLite's transcript
// snapshots and caches). Statements are written with ? for their
// arguments, in order; a database that numbers them ($1, $2…) rewrites
// them (Numbered).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/clock"
)

// Rows are the rows of a query, of either driver. Close may be called
// more than once.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements: in a write transaction, or (for reads) on the
// database.
type Querier interface {
	QueryRow(ctx context.Context, query string, args ...any) Scanner
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// DB is a driver's database, as the shared methods use it.
type DB interface {
	// Read checks, before a read, that the store is open and that ctx
	// has not ended, and returns what reads run on.
	Read(ctx context.Context) (Querier, error)
	// Write runs fn in a write transaction, under the driver's rules for
	// ctx (see each driver's package documentation). fn may run more than
	// once (a transaction tried again), so it sets its results afresh
	// each time.
	Write(ctx context.Context, fn func(ctx context.Context, tx Querier) error) error

	// AppendStep appends step.Records, already checked
	// (store.ValidateAppend), and if totals adds step.Totals, in one
	// write transaction, and returns what store.Store's AppendStep does.
	AppendStep(ctx context.Context, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error)
	// AppendObservations stores rows, at least one, in one write
	// transaction, and sets their Seqs.
	AppendObservations(ctx context.Context, rows []store.Observation) error
}

// Dialect is the SQL that differs between the stores.
type Dialect struct {
	// Text is how a string people and models write (a workspace, a
	// prompt, a rule, a note) goes to its column: as it is (SQLite's
	// TEXT), or as its bytes (PostgreSQL's BYTEA: see Bytes).
	Text func(s string) any
	// LastSeqQuery is a query of a session's last Seq, by its id, that
	// takes the lock ordering the session's writes (where the write
	// transaction does not hold it already): see LastSeq.
	LastSeqQuery string
	// ForUpdate is what a query in a write transaction ends with to lock
	// the rows it reads ("" where the transaction holds the database's
	// one write lock).
	ForUpdate string
	// UpdatedAt is the value a write gives a session's updated_at, its
	// argument the store clock's time: later than the one it had, if
	// another process's clock may be ahead.
	UpdatedAt string
	// RebindApprovals moves the approvals of one runtime to another but
	// the ones the other has already; its arguments are the runtime to,
	// then the runtime from.
	RebindApprovals string
	// IsUnique reports whether err is the violation of a unique key.
	IsUnique func(err error) bool
}

// Hooks are what a driver keeps besides the shared tables; each may be
// nil.
type Hooks struct {
	// Live reads a session's live records (what the model sees) its own
	// way, instead of the records query.
	Live func(ctx context.Context, sessionID string) ([]store.Record, error)
	// Compacted is told, in MarkCompacted's transaction, that n records
	// of the session up to throughSeq were newly marked.
	Compacted func(ctx context.Context, tx Querier, sessionID string, throughSeq, n int64) error
	// Deleted is told, in DeleteSession's transaction, that the session
	// is gone.
	Deleted func(tx Querier, sessionID string)
	// TurnFinished is told, in FinishTurn's transaction, that the
	// session's totals changed; AfterTurn, once it has committed.
	TurnFinished func(tx Querier, sessionID string)
	AfterTurn    func(ctx context.Context, sessionID string)
}

// Store is the store.Store, store.Observations and store.Schedules
// methods both SQL stores share: all of them but AddTotals and Close,
// which a driver's store, embedding Store, has of its own.
type Store struct {
	db    DB
	d     Dialect
	hooks Hooks
	clock *clock.Clock
	where Where
	// finish are Finish's statements in d (FinishQueries).
	finish [3]string
}

// New returns the shared methods of a store on db, whose times come from
// c and whose errors name where.
func New(db DB, d Dialect, h Hooks, c *clock.Clock, where Where) *Store {
	return &Store{db: db, d: d, hooks: h, clock: c, where: where, finish: FinishQueries(d.ForUpdate, d.UpdatedAt)}
}

// write runs fn in a write transaction (DB.Write); its error names op and
// the session.
func (s *Store) write(ctx context.Context, op, sessionID string, fn func(ctx context.Context, tx Querier) error) error {
	if err := s.db.Write(ctx, fn); err != nil {
		return s.where.Fail(op, sessionID, err)
	}
	return nil
}

// readOne reads a session's row with scan (ErrNotFound if there is none);
// its error names op and the session.
func readOne[T any](ctx context.Context, s *Store, op, sessionID, query string, scan func(Scanner) (T, error)) (T, error) {
	q, err := s.db.Read(ctx)
	if err == nil {
		var v T
		if v, err = scan(q.QueryRow(ctx, query, sessionID)); err == nil {
			return v, nil
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	var zero T
	return zero, s.where.Fail(op, sessionID, err)
}

// Where names a store's database in its errors ("sqlite /path/orca.db",
// "postgres host:5432/db": never a password).
type Where string

// Fail names the operation and the session in err and, when the database
// itself failed, the database.
func (w Where) Fail(op, sessionID string, err error) error {
	return fmt.Errorf("%s session %q: %w", op, sessionID, w.Err(err))
}

// failApproval is Fail for approvals, which may name no session.
func (w Where) failApproval(op, runtimeID, sessionID string, err error) error {
	if sessionID == "" {
		return fmt.Errorf("%s approvals of runtime %q: %w", op, runtimeID, w.Err(err))
	}
	return fmt.Errorf("%s approvals of runtime %q session %q: %w", op, runtimeID, sessionID, w.Err(err))
}

// failWindows is Fail for learnt windows, which are a runtime's.
func (w Where) failWindows(op, runtimeID string, err error) error {
	return fmt.Errorf("%s the learnt windows of runtime %q: %w", op, runtimeID, w.Err(err))
}

// failSchedule is Fail for schedules, which are a runtime's.
func (w Where) failSchedule(op, runtimeID, id string, err error) error {
	return fmt.Errorf("%s schedule %q of runtime %q: %w", op, id, runtimeID, w.Err(err))
}

// failFire is Fail for a schedule's fire.
func (w Where) failFire(op string, f store.Fire, err error) error {
	return fmt.Errorf("%s the fire of schedule %q of runtime %q at %v: %w", op, f.ScheduleID, f.RuntimeID, f.At, w.Err(err))
}

// Err names the database in an error that is the database's, not the
// contract's.
func (w Where) Err(err error) error {
	if isContract(err) {
		return err
	}
	return fmt.Errorf("%s: %w", w, err)
}

// isContract reports whether err is the contract's own (or the caller's
// context), not the database's.
func isContract(err error) bool {
	for _, e := range []error{store.ErrNotFound, store.ErrNotProvisioned, store.ErrWrongRuntime, store.ErrInvalid, store.ErrClosed, store.ErrLeased, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Numbered rewrites a statement's ? placeholders as $1, $2…, in order,
// for a database that numbers them. (A statement with no arguments, such
// as a migration's script, is run as written, not through Numbered.)
func Numbered(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
