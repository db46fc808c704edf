package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// stmtID names one of the store's prepared statements.
type stmtID int

const (
	stmtLastSeq stmtID = iota
	stmtMaxSeq
	stmtTouchSession
	stmtTouchLeased
	stmtInsertRecord
	stmtLease
	stmtAddTotals
	stmtTotals
	stmtChunks
	stmtFrontier
	stmtLiveAfter
	stmtSavepoint
	stmtRollbackTo
	stmtRelease
	stmtDataVersion
	stmtInsertObservation
	stmtLastObservation
	stmtObservationHeads
	// stmtLastTurn, stmtCountTurn and stmtTotalTurn are a turn's end
	// (sqlstore.FinishQueries).
	stmtLastTurn
	stmtCountTurn
	stmtTotalTurn
	// stmtObservations is the first of sqlstore.ObservationQueries, one
	// per kind of filter: a stream following a session reads them again
	// and again.
	stmtObservations
	numStmts = stmtObservations + stmtID(len(sqlstore.ObservationQueries))
)

// queries are the statements of the hot paths (appending records, resuming
// a session), prepared once when the store opens rather than parsed on
// every call: parsing is most of what a small statement costs in a pure-Go
// SQLite. database/sql prepares each on a connection the first time that
// connection runs it, and keeps it there.
var queries = func() [numStmts]string {
	qs := [numStmts]string{
		stmtLastSeq: "SELECT (SELECT COALESCE(MAX(seq), 0) FROM records WHERE session_id = s.id) FROM sessions s WHERE s.id = ?",
		// (An UPDATE … RETURNING costs more here than the UPDATE and a SELECT
		// after it in the same transaction.)
		stmtMaxSeq:       "SELECT COALESCE(MAX(seq), 0) FROM records WHERE session_id = ?",
		stmtTouchSession: "UPDATE sessions SET updated_at = ? WHERE id = ?",
		// The same, only if the writer holds the session's lease: a step's
		// lease check and its session's UpdatedAt in one statement.
		stmtTouchLeased:  "UPDATE sessions SET updated_at = ? WHERE id = ? AND EXISTS (SELECT 1 FROM leases WHERE session_id = sessions.id AND owner = ? AND expires_at > ?)",
		stmtInsertRecord: "INSERT INTO records (session_id, seq, turn_id, time, kind, message, model) VALUES (?, ?, ?, ?, ?, ?, ?)",
		stmtLease:        sqlstore.LeaseQuery,
		stmtAddTotals: `UPDATE totals SET
	input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
	cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,
	cost_usd = cost_usd + ?, tool_calls = tool_calls + ?, wall_time_ns = wall_time_ns + ?, turns = turns + ?
WHERE session_id = ?`,
		stmtTotals:     sqlstore.TotalsQuery,
		stmtChunks:     "SELECT through_seq, data FROM snapshot_chunks WHERE session_id = ? ORDER BY through_seq",
		stmtFrontier:   "SELECT COALESCE(MAX(through_seq), 0) FROM snapshot_chunks WHERE session_id = ?",
		stmtLiveAfter:  "SELECT " + sqlstore.RecordColumns + " FROM records WHERE session_id = ? AND seq > ? AND compacted = 0 ORDER BY seq",
		stmtSavepoint:  "SAVEPOINT request",
		stmtRollbackTo: "ROLLBACK TO request",
		stmtRelease:    "RELEASE request",
		// Changes when another connection has committed to the file.
		stmtDataVersion:       "PRAGMA data_version",
		stmtInsertObservation: sqlstore.ObservationInsert,
		stmtLastObservation:   sqlstore.LastObservationQuery,
		stmtObservationHeads:  sqlstore.ObservationHeadsQuery,
	}
	for i, q := range sqlstore.ObservationQueries {
		qs[stmtObservations+stmtID(i)] = q
	}
	finish := sqlstore.FinishQueries("", updatedAt)
	qs[stmtLastTurn], qs[stmtCountTurn], qs[stmtTotalTurn] = finish[0], finish[1], finish[2]
	return qs
}()

// updatedAt is the value a write gives a session's updated_at
// (sqlstore.Dialect.UpdatedAt): the time given.
const updatedAt = "?"

// preparedIDs finds a prepared statement by its query: the shared
// methods' statements (store/internal/sqlstore) that are one of them run
// prepared too.
var preparedIDs = func() map[string]stmtID {
	ids := make(map[string]stmtID, numStmts)
	for id, q := range queries {
		ids[q] = stmtID(id)
	}
	return ids
}()

// stmts are the prepared queries, on the database.
type stmts [numStmts]*sql.Stmt

func prepare(ctx context.Context, db *sql.DB) (*stmts, error) {
	st := &stmts{}
	for id, q := range queries {
		stmt, err := db.PrepareContext(ctx, q)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("prepare %q: %w", q, err)
		}
		st[id] = stmt
	}
	return st, nil
}

func (st *stmts) close() {
	for _, stmt := range st {
		if stmt != nil {
			stmt.Close()
		}
	}
}

// writeTx is a write transaction: the *sql.Tx, and the store's prepared
// statements bound to it, each bound once per transaction (binding costs
// about as much as running a small statement, and a batch of the
// committer runs each many times).
type writeTx struct {
	*sql.Tx
	ctx   context.Context
	stmts *stmts
	bound [numStmts]*sql.Stmt
	// seqs is the committer's knowledge of sessions' last Seqs (nil for
	// a transaction of its own, like a migration); pending is what this
	// transaction appended, which commit adds to seqs (-1: a session it
	// deleted, which commit forgets).
	seqs    *seqCache
	pending map[string]int64
	// totals is what this transaction added to sessions' totals, which
	// commit keeps in seqs too (ok false: totals commit forgets).
	totals map[string]knownTotals
}

// seqCache is the last Seq of the sessions the committer appended to, so
// that an append need not look it up, and the totals of the sessions it
// added to, so that a step need not read them back: it is right as long
// as no other connection has written to the file (PRAGMA data_version
// tells, and the committer forgets all when one has).
type seqCache struct {
	version int64 // data_version when last checked; -1: unknown
	last    map[string]int64
	totals  map[string]store.Totals
}

// knownTotals is a session's totals as a transaction left them.
type knownTotals struct {
	t  store.Totals
	ok bool
}

// forgetAll forgets every session's Seq and totals.
func (c *seqCache) forgetAll() {
	clear(c.last)
	clear(c.totals)
}

// maxCachedSeqs bounds the cache: past it, the committer starts again.
const maxCachedSeqs = 10_000

// knownSeq returns the session's last Seq if the transaction knows it
// without a query.
func (tx *writeTx) knownSeq(sessionID string) (int64, bool) {
	if last, ok := tx.pending[sessionID]; ok {
		return last, last >= 0
	}
	if tx.seqs == nil {
		return 0, false
	}
	last, ok := tx.seqs.last[sessionID]
	return last, ok
}

// appended notes the session's last Seq after this transaction's append.
// Call it only when the append has succeeded: what it notes is taken for
// the truth once the transaction commits.
func (tx *writeTx) appended(sessionID string, last int64) {
	if tx.seqs == nil {
		return
	}
	if tx.pending == nil {
		tx.pending = make(map[string]int64)
	}
	tx.pending[sessionID] = last
}

// forget notes that the session's records are gone (it was deleted): once
// the transaction commits, its last Seq and totals are no longer known,
// and an id provisioned again numbers its records from 1.
func (tx *writeTx) forget(sessionID string) {
	if tx.seqs == nil {
		return
	}
	if tx.pending == nil {
		tx.pending = make(map[string]int64)
	}
	tx.pending[sessionID] = -1
	tx.forgetTotals(sessionID)
}

// knownTotals returns the session's totals if the transaction knows them
// without a query.
func (tx *writeTx) knownTotals(sessionID string) (store.Totals, bool) {
	if k, ok := tx.totals[sessionID]; ok {
		return k.t, k.ok
	}
	if tx.seqs == nil {
		return store.Totals{}, false
	}
	t, ok := tx.seqs.totals[sessionID]
	return t, ok
}

// totalled notes the session's totals after this transaction's change.
// As for appended, call it only once the write has succeeded.
func (tx *writeTx) totalled(sessionID string, t store.Totals) {
	tx.noteTotals(sessionID, knownTotals{t: t, ok: true})
}

// forgetTotals notes that the session's totals changed in a way the
// transaction does not follow: the next step reads them.
func (tx *writeTx) forgetTotals(sessionID string) { tx.noteTotals(sessionID, knownTotals{}) }

func (tx *writeTx) noteTotals(sessionID string, k knownTotals) {
	if tx.seqs == nil {
		return
	}
	if tx.totals == nil {
		tx.totals = make(map[string]knownTotals)
	}
	tx.totals[sessionID] = k
}

// commit commits the transaction and, if it committed, keeps what it
// appended in seqs (and forgets what it deleted).
func (tx *writeTx) commit() error {
	if err := tx.Commit(); err != nil {
		return err
	}
	if tx.seqs != nil && len(tx.pending) > 0 {
		if len(tx.seqs.last)+len(tx.pending) > maxCachedSeqs {
			clear(tx.seqs.last)
		}
		for id, last := range tx.pending {
			if last < 0 {
				delete(tx.seqs.last, id)
			} else {
				tx.seqs.last[id] = last
			}
		}
	}
	if tx.seqs != nil && len(tx.totals) > 0 {
		if len(tx.seqs.totals)+len(tx.totals) > maxCachedSeqs {
			clear(tx.seqs.totals)
		}
		for id, k := range tx.totals {
			if k.ok {
				tx.seqs.totals[id] = k.t
			} else {
				delete(tx.seqs.totals, id)
			}
		}
	}
	return nil
}

// stmt returns statement id bound to the transaction.
func (tx *writeTx) stmt(id stmtID) *sql.Stmt {
	if tx.bound[id] == nil {
		tx.bound[id] = tx.StmtContext(tx.ctx, tx.stmts[id])
	}
	return tx.bound[id]
}

// readStmts are the reads the shared methods run that are not in queries
// (listing parked calls, reading a session or its budget…), prepared the
// first time each runs and kept: their text is the same from call to
// call, and parsing it again cost as much as running it. At most
// maxReadStmts are kept; past that, reads run unprepared.
type readStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const maxReadStmts = 256

func (r *readStmts) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	r.mu.Lock()
	st, ok := r.m[query]
	full := len(r.m) >= maxReadStmts
	r.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil // run unprepared: its error is the query's
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept, ok := r.m[query]; ok {
		st.Close()
		return kept
	}
	if r.m == nil {
		r.m = make(map[string]*sql.Stmt)
	}
	r.m[query] = st
	return st
}

func (r *readStmts) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.m {
		st.Close()
	}
	r.m = nil
}
