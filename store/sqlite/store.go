package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/orca-agent/orca/store/internal/sqlrow"
	"strings"
	"time"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

var _ store.Store = (*Store)(nil)

var errClosed = store.ErrClosed

// fail names the operation and the session in err and, when the database
// itself failed, the file.
func (s *Store) fail(op, sessionID string, err error) error {
	if !isContract(err) {
		err = fmt.Errorf("sqlite %s: %w", s.path, err)
	}
	return fmt.Errorf("%s session %q: %w", op, sessionID, err)
}

// failApproval is fail for approvals, which may name no session.
func (s *Store) failApproval(op, runtimeID, sessionID string, err error) error {
	if !isContract(err) {
		err = fmt.Errorf("sqlite %s: %w", s.path, err)
	}
	if sessionID == "" {
		return fmt.Errorf("%s approvals of runtime %q: %w", op, runtimeID, err)
	}
	return fmt.Errorf("%s approvals of runtime %q session %q: %w", op, runtimeID, sessionID, err)
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

// Provision implements store.Store.
func (s *Store) Provision(ctx context.Context, in store.Session) (store.Session, error) {
	if err := in.Validate(); err != nil {
		return store.Session{}, s.fail("provision", in.ID, err)
	}
	var out store.Session
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		old, err := sqlrow.ScanSession(tx.QueryRowContext(ctx, "SELECT "+sqlrow.SessionColumns+" FROM sessions WHERE id = ?", in.ID))
		switch {
		case err == nil && old.RuntimeID != in.RuntimeID:
			return fmt.Errorf("%w (%q, not %q)", store.ErrWrongRuntime, old.RuntimeID, in.RuntimeID)
		case err == nil:
			out = old
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		out = in
		if out.CreatedAt.IsZero() {
			out.CreatedAt = s.clock.Now()
		}
		out.CreatedAt = out.CreatedAt.UTC()
		s.clock.Observe(out.CreatedAt)
		out.UpdatedAt, out.Turns, out.LastPrompt = out.CreatedAt, 0, ""
		if _, err := tx.ExecContext(ctx, "INSERT INTO sessions ("+sqlrow.SessionColumns+") VALUES (?, ?, ?, ?, ?, ?, 0, '')",
			out.ID, out.RuntimeID, out.Workspace, out.Agent, sqlrow.ToNanos(out.CreatedAt), sqlrow.ToNanos(out.UpdatedAt)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO totals (session_id) VALUES (?)", out.ID)
		return err
	})
	if err != nil {
		return store.Session{}, s.fail("provision", in.ID, err)
	}
	return out, nil
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	if err := s.read(ctx); err != nil {
		return store.Session{}, s.fail("read", id, err)
	}
	ss, err := sqlrow.ScanSession(s.db.QueryRowContext(ctx, "SELECT "+sqlrow.SessionColumns+" FROM sessions WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, s.fail("read", id, err)
	}
	return ss, nil
}

// Sessions implements store.Store.
func (s *Store) Sessions(ctx context.Context, f store.Filter) ([]store.Session, error) {
	fail := func(err error) error {
		if !isContract(err) {
			err = fmt.Errorf("sqlite %s: %w", s.path, err)
		}
		return fmt.Errorf("list sessions: %w", err)
	}
	if err := s.read(ctx); err != nil {
		return nil, fail(err)
	}
	if err := f.Validate(); err != nil {
		return nil, fail(err)
	}
	var where []string
	var args []any
	if f.RuntimeID != "" {
		where, args = append(where, "runtime_id = ?"), append(args, f.RuntimeID)
	}
	if f.Workspace != "" {
		where, args = append(where, "workspace = ?"), append(args, f.Workspace)
	}
	q := "SELECT " + sqlrow.SessionColumns + " FROM sessions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id LIMIT ?"
	limit := -1
	if f.Limit > 0 {
		limit = f.Limit
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		ss, err := sqlrow.ScanSession(rows)
		if err != nil {
			return nil, fail(err)
		}
		out = append(out, ss)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// lastSeq returns, in tx, the session's last Seq, or ErrNotProvisioned.
func (s *Store) lastSeq(ctx context.Context, tx *writeTx, sessionID string) (int64, error) {
	var last int64
	err := tx.stmt(stmtLastSeq).QueryRowContext(ctx, sessionID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotProvisioned
	}
	return last, err
}

// Append implements store.Store. The batch is one transaction.
func (s *Store) Append(ctx context.Context, sessionID string, recs ...store.Record) ([]store.Record, error) {
	out, _, err := s.appendStep(ctx, "append to", sessionID, store.Step{Records: recs}, false)
	return out, err
}

// AppendStep implements store.Store: the records, the totals and the lease
// check are one transaction.
func (s *Store) AppendStep(ctx context.Context, sessionID string, step store.Step) ([]store.Record, store.Totals, error) {
	return s.appendStep(ctx, "append a step to", sessionID, step, true)
}

func (s *Store) appendStep(ctx context.Context, op, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error) {
	recs := step.Records
	if err := store.ValidateAppend(sessionID, recs); err != nil {
		return nil, store.Totals{}, s.fail(op, sessionID, err)
	}
	// Encoded here, on the caller's goroutine, not the committer's.
	enc := make([]string, len(recs))
	for i, r := range recs {
		b, err := wire.Encode(r.Message)
		if err != nil {
			return nil, store.Totals{}, s.fail(op, sessionID, fmt.Errorf("recs[%d]: %w", i, err))
		}
		enc[i] = string(b)
	}
	out := make([]store.Record, len(recs))
	var sum store.Totals
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		now := s.clock.Now()
		var last int64
		var err error
		switch {
		case len(recs) == 0:
			if last, err = s.lastSeq(ctx, tx, sessionID); err == nil && step.Owner != "" {
				err = s.holds(ctx, tx, sessionID, step.Owner)
			}
		case step.Owner != "":
			// Moving UpdatedAt checks the lease too; only if it moved
			// nothing is it worth asking why.
			err = touched(tx.stmt(stmtTouchLeased).ExecContext(ctx, sqlrow.ToNanos(now), sessionID, step.Owner, time.Now().UnixNano()))
			if errors.Is(err, store.ErrNotProvisioned) {
				if _, err = s.lastSeq(ctx, tx, sessionID); err == nil {
					err = s.holds(ctx, tx, sessionID, step.Owner)
				}
				if err == nil { // holds asks what the UPDATE did; should they disagree, the lease decides
					err = touched(tx.stmt(stmtTouchSession).ExecContext(ctx, sqlrow.ToNanos(now), sessionID))
				}
			}
		default:
			err = touched(tx.stmt(stmtTouchSession).ExecContext(ctx, sqlrow.ToNanos(now), sessionID))
		}
		if err == nil && len(recs) > 0 {
			var known bool
			if last, known = tx.knownSeq(sessionID); !known {
				err = tx.stmt(stmtMaxSeq).QueryRowContext(ctx, sessionID).Scan(&last)
			}
		}
		if err != nil {
			return err
		}
		if totals {
			if sum, err = s.addTotals(ctx, tx, sessionID, step.Totals); err != nil {
				return err
			}
		}
		if len(recs) == 0 {
			if totals {
				tx.totalled(sessionID, sum)
			}
			return nil
		}
		insert := tx.stmt(stmtInsertRecord)
		for i, r := range recs {
			r.Seq = last + int64(i) + 1
			r.SessionID = sessionID
			if r.Time.IsZero() {
				r.Time = now
			}
			r.Time = r.Time.UTC()
			if _, err := insert.ExecContext(ctx, sessionID, r.Seq, r.TurnID, sqlrow.ToNanos(r.Time), r.Kind, enc[i]); err != nil {
				return fmt.Errorf("insert record %d: %w", r.Seq, err)
			}
			out[i] = r
		}
		tx.appended(sessionID, last+int64(len(recs)))
		if totals {
			tx.totalled(sessionID, sum)
		}
		return nil
	})
	if err != nil {
		return nil, store.Totals{}, s.fail(op, sessionID, err)
	}
	if len(recs) == 0 {
		return nil, sum, nil
	}
	if last := out[len(out)-1].Seq; last/snapshotEvery != (last-int64(len(out)))/snapshotEvery {
		s.extendSnapshot(ctx, sessionID, last, snapshotBehind)
	}
	// Return what is stored, not the caller's own slices.
	for i := range out {
		var ok bool
		if out[i].Message, ok = wire.Stored(recs[i].Message); ok {
			continue
		}
		if out[i].Message, err = wire.DecodeString(enc[i]); err != nil {
			return nil, store.Totals{}, s.fail(op, sessionID, err)
		}
	}
	return out, sum, nil
}

// holds checks, in tx, that owner holds the session's lease.
func (s *Store) holds(ctx context.Context, tx *writeTx, sessionID, owner string) error {
	var holder string
	var expires int64
	err := tx.stmt(stmtLease).QueryRowContext(ctx, sessionID).Scan(&holder, &expires)
	now := time.Now().UnixNano()
	switch {
	case errors.Is(err, sql.ErrNoRows) || err == nil && expires <= now:
		return fmt.Errorf("%w: the writer's lease expired and no one holds it", store.ErrLeased)
	case err != nil:
		return err
	case holder != owner:
		return &store.LeaseError{SessionID: sessionID, Owner: holder, Expires: sqlrow.FromNanos(expires)}
	}
	return nil
}

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) (time.Time, error) {
	if err := store.ValidateLease(owner, ttl); err != nil {
		return time.Time{}, s.fail("lease", sessionID, err)
	}
	var until time.Time
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := s.lastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		var holder string
		var expires int64
		now := time.Now()
		err := tx.QueryRowContext(ctx, "SELECT owner, expires_at FROM leases WHERE session_id = ?", sessionID).Scan(&holder, &expires)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && holder != owner && expires > now.UnixNano() {
			return &store.LeaseError{SessionID: sessionID, Owner: holder, Expires: sqlrow.FromNanos(expires)}
		}
		until = now.Add(ttl).UTC()
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (session_id, owner, expires_at) VALUES (?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`, sessionID, owner, sqlrow.ToNanos(until))
		return err
	})
	if err != nil {
		return time.Time{}, s.fail("lease", sessionID, err)
	}
	return until, nil
}

// DeleteSession implements store.Store: the session's row goes, and with
// it (ON DELETE CASCADE) every row kept for it but the observations.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sessions WHERE id = ?", id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		var holder string
		var expires int64
		err := tx.QueryRowContext(ctx, "SELECT owner, expires_at FROM leases WHERE session_id = ?", id).Scan(&holder, &expires)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && expires > time.Now().UnixNano() {
			return &store.LeaseError{SessionID: id, Owner: holder, Expires: sqlrow.FromNanos(expires)}
		}
		if _, err = tx.ExecContext(ctx, "DELETE FROM sessions WHERE id = ?", id); err != nil {
			return err
		}
		tx.forget(id)
		return nil
	})
	if err != nil {
		return s.fail("delete", id, err)
	}
	return nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := s.lastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM leases WHERE session_id = ? AND owner = ?", sessionID, owner)
		return err
	})
	if err != nil {
		return s.fail("release the lease of", sessionID, err)
	}
	return nil
}

// Records implements store.Store.
func (s *Store) Records(ctx context.Context, sessionID string, f store.RecordFilter) ([]store.Record, error) {
	if err := s.read(ctx); err != nil {
		return nil, s.fail("read records of", sessionID, err)
	}
	var out []store.Record
	var err error
	if f.AfterSeq <= 0 && !f.IncludeCompacted {
		out, err = s.liveRecords(ctx, sessionID)
	} else {
		q := "SELECT seq, turn_id, time, kind, message, compacted FROM records WHERE session_id = ? AND seq > ?"
		if !f.IncludeCompacted {
			q += " AND compacted = 0"
		}
		q += " ORDER BY seq"
		var rows *sql.Rows
		if rows, err = s.db.QueryContext(ctx, q, sessionID, f.AfterSeq); err == nil {
			out, err = readRecords(rows, sessionID, nil)
		}
	}
	if err != nil {
		return nil, s.fail("read records of", sessionID, err)
	}
	if len(out) == 0 {
		// Tell an empty transcript from an unknown session.
		if _, err := sessionRuntime(ctx, s.db, sessionID, store.ErrNotFound); err != nil {
			return nil, s.fail("read records of", sessionID, err)
		}
	}
	return out, nil
}

// snapshotEvery is how many live records past the last chunk of a
// session's snapshot make FinishTurn add a chunk: the turn's writer pays
// for it once the turn is over, and a resume decodes at most that many
// rows past a finished turn.
const snapshotEvery = 256

// snapshotBehind is how many make an append add one (appends check at
// every multiple of snapshotEvery): a session whose turns never end — its
// writer crashed mid-turn, or never calls FinishTurn — still has a
// snapshot, and appends, the hot path, seldom pay for one.
const snapshotBehind = 8 * snapshotEvery

// liveRecords returns the session's live records: its snapshot's chunks,
// and the records after them. A snapshot that does not decode is not
// trusted: the records are read instead.
func (s *Store) liveRecords(ctx context.Context, sessionID string) ([]store.Record, error) {
	rows, err := s.stmts[stmtChunks].QueryContext(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	var through int64
	var chunks [][]byte
	n := 0
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&through, &data); err != nil {
			rows.Close()
			return nil, err
		}
		chunks = append(chunks, data)
		n += wire.SnapshotLen(data)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]store.Record, 0, n+snapshotEvery)
	var arena wire.Arena
	for _, data := range chunks {
		if out, err = wire.DecodeSnapshot(data, out, &arena, func(r wire.SnapRecord) store.Record {
			return store.Record{Seq: r.Seq, SessionID: sessionID, TurnID: r.TurnID, Time: r.Time, Kind: r.Kind, Message: r.Message}
		}); err != nil {
			out, through = out[:0], 0
			break
		}
	}
	if rows, err = s.stmts[stmtLiveAfter].QueryContext(ctx, sessionID, through); err != nil {
		return nil, err
	}
	return readRecords(rows, sessionID, out)
}

// extendSnapshot adds a chunk to the session's snapshot if least live
// records or more are past its last chunk. last is the session's last
// Seq, if the caller knows it (else 0). It runs once the caller's own
// write is committed, on the caller's goroutine, not the committer's.
// The snapshot is a cache, so this is best effort: a failure, or a chunk
// made stale by a concurrent compaction or chunk, leaves the snapshot as
// it was, and only makes the next resume read more rows.
func (s *Store) extendSnapshot(ctx context.Context, sessionID string, last int64, least int) {
	var frontier int64
	if err := s.stmts[stmtFrontier].QueryRowContext(ctx, sessionID).Scan(&frontier); err != nil {
		return
	}
	if last == 0 {
		if err := s.stmts[stmtMaxSeq].QueryRowContext(ctx, sessionID).Scan(&last); err != nil {
			return
		}
	}
	if last-frontier < int64(least) {
		return
	}
	rows, err := s.stmts[stmtLiveAfter].QueryContext(ctx, sessionID, frontier)
	if err != nil {
		return
	}
	recs, err := readRecords(rows, sessionID, nil)
	if err != nil || len(recs) < least {
		return
	}
	snap := make([]wire.SnapRecord, len(recs))
	for i, r := range recs {
		snap[i] = wire.SnapRecord{Seq: r.Seq, Time: r.Time, TurnID: r.TurnID, Kind: r.Kind, Message: r.Message}
	}
	s.addChunk(ctx, sessionID, frontier, recs[len(recs)-1].Seq, wire.EncodeSnapshot(snap))
}

// addChunk stores a chunk holding the live records after frontier through
// through, unless the snapshot no longer ends at frontier (another chunk,
// or a compaction, came first); it reports whether it stored it.
func (s *Store) addChunk(ctx context.Context, sessionID string, frontier, through int64, data []byte) bool {
	added := false
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		added = false
		var now int64
		if err := tx.stmt(stmtFrontier).QueryRowContext(ctx, sessionID).Scan(&now); err != nil || now != frontier {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO snapshot_chunks (session_id, through_seq, data) VALUES (?, ?, ?)", sessionID, through, data); err != nil {
			return err
		}
		added = true
		return nil
	})
	return err == nil && added
}

// readRecords appends the records of rows (seq, turn_id, time, kind,
// message, compacted) to out, and closes rows.
func readRecords(rows *sql.Rows, sessionID string, out []store.Record) ([]store.Record, error) {
	defer rows.Close()
	for rows.Next() {
		r := store.Record{SessionID: sessionID}
		var at int64
		var msg string // the message's strings share it
		if err := rows.Scan(&r.Seq, &r.TurnID, &at, &r.Kind, &msg, &r.Compacted); err != nil {
			return nil, err
		}
		r.Time = sqlrow.FromNanos(at)
		var err error
		if r.Message, err = wire.DecodeString(msg); err != nil {
			return nil, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// MarkCompacted implements store.Store.
func (s *Store) MarkCompacted(ctx context.Context, sessionID string, throughSeq int64) error {
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		last, err := s.lastSeq(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if err := store.ValidateMark(throughSeq, last); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "UPDATE records SET compacted = 1 WHERE session_id = ? AND seq <= ? AND compacted = 0", sessionID, throughSeq)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // nothing newly compacted: the snapshot holds
		}
		// Every record up to throughSeq is compacted now, and the
		// snapshot's chunks may hold some: one empty chunk through
		// throughSeq replaces them, so that reading the live records
		// reads only the rows after it, not every row of the session to
		// find them.
		if _, err := tx.ExecContext(ctx, "DELETE FROM snapshot_chunks WHERE session_id = ?", sessionID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO snapshot_chunks (session_id, through_seq, data) VALUES (?, ?, ?)", sessionID, throughSeq, wire.EncodeSnapshot(nil))
		return err
	})
	if err != nil {
		return s.fail("mark compacted in", sessionID, err)
	}
	return nil
}

// AddTotals implements store.Store.
func (s *Store) AddTotals(ctx context.Context, sessionID string, d store.Totals) (store.Totals, error) {
	var out store.Totals
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		var err error
		if out, err = s.addTotals(ctx, tx, sessionID, d); err == nil {
			tx.totalled(sessionID, out)
		}
		return err
	})
	if err != nil {
		return store.Totals{}, s.fail("add totals to", sessionID, err)
	}
	return out, nil
}

// addTotals adds d to the session's totals in tx and returns the new
// totals; the write transaction makes the add and the read one step.
// When the committer knows the old totals (see seqCache) they are not read
// back: the UPDATE succeeded, so their sum is the row's (an integer that
// overflows, or money that would be NaN, fails it in the STRICT table),
// and Go adds float64s as SQLite does, infinities included. The caller
// notes the new totals (tx.totalled) once its whole write has succeeded.
func (s *Store) addTotals(ctx context.Context, tx *writeTx, sessionID string, d store.Totals) (store.Totals, error) {
	err := touched(tx.stmt(stmtAddTotals).ExecContext(ctx,
		d.Usage.InputTokens, d.Usage.OutputTokens, d.Usage.CacheReadTokens, d.Usage.CacheWriteTokens,
		d.CostUSD, d.ToolCalls, int64(d.WallTime), d.Turns, sessionID))
	if err != nil {
		return store.Totals{}, err
	}
	if old, ok := tx.knownTotals(sessionID); ok {
		return old.Add(d), nil
	}
	return sqlrow.ScanTotals(tx.stmt(stmtTotals).QueryRowContext(ctx, sessionID))
}

// touched returns the error of an UPDATE of one session's row:
// ErrNotProvisioned if it changed no row.
func touched(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		err = store.ErrNotProvisioned
	}
	return err
}

// Totals implements store.Store.
func (s *Store) Totals(ctx context.Context, sessionID string) (store.Totals, error) {
	if err := s.read(ctx); err != nil {
		return store.Totals{}, s.fail("read totals of", sessionID, err)
	}
	t, err := sqlrow.ScanTotals(s.stmts[stmtTotals].QueryRowContext(ctx, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Totals{}, s.fail("read totals of", sessionID, err)
	}
	return t, nil
}

// SetBudget implements store.Store.
func (s *Store) SetBudget(ctx context.Context, sessionID string, b *budget.Limits) error {
	if b != nil {
		if err := store.ValidateBudget(*b); err != nil {
			return s.fail("set budget of", sessionID, err)
		}
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := s.lastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		if b == nil {
			_, err := tx.ExecContext(ctx, "DELETE FROM budgets WHERE session_id = ?", sessionID)
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO budgets (session_id, tokens, cost_usd, tool_calls, wall_time_ns) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET tokens = excluded.tokens, cost_usd = excluded.cost_usd, tool_calls = excluded.tool_calls, wall_time_ns = excluded.wall_time_ns`,
			sessionID, b.Tokens, b.CostUSD, b.ToolCalls, int64(b.WallTime))
		return err
	})
	if err != nil {
		return s.fail("set budget of", sessionID, err)
	}
	return nil
}

// Budget implements store.Store.
func (s *Store) Budget(ctx context.Context, sessionID string) (*budget.Limits, error) {
	if err := s.read(ctx); err != nil {
		return nil, s.fail("read budget of", sessionID, err)
	}
	var has bool
	var b budget.Limits
	err := s.db.QueryRowContext(ctx, `SELECT b.session_id IS NOT NULL, ifnull(b.tokens, 0), ifnull(b.cost_usd, 0.0), ifnull(b.tool_calls, 0), ifnull(b.wall_time_ns, 0)
FROM sessions s LEFT JOIN budgets b ON b.session_id = s.id WHERE s.id = ?`, sessionID).Scan(&has, &b.Tokens, &b.CostUSD, &b.ToolCalls, &b.WallTime)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail("read budget of", sessionID, err)
	}
	if !has {
		return nil, nil
	}
	return &b, nil
}

// FinishTurn implements store.Store.
func (s *Store) FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error {
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		var last string
		err := tx.QueryRowContext(ctx, "SELECT last_turn FROM sessions WHERE id = ?", sessionID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotProvisioned
		}
		if err != nil {
			return err
		}
		count := sqlrow.TurnCount(turnID, last)
		if _, err := tx.ExecContext(ctx, "UPDATE sessions SET turns = turns + ?, last_turn = ?, last_prompt = ?, updated_at = ? WHERE id = ?",
			count, turnID, prompt, sqlrow.ToNanos(s.clock.Now()), sessionID); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, "UPDATE totals SET turns = turns + ? WHERE session_id = ?", count, sessionID); err != nil {
			return err
		}
		tx.forgetTotals(sessionID) // read again at the next step
		return nil
	})
	if err != nil {
		return s.fail("finish turn of", sessionID, err)
	}
	s.extendSnapshot(ctx, sessionID, 0, snapshotEvery)
	return nil
}

// sessionRuntime returns the runtime of a session, or notFound.
func sessionRuntime(ctx context.Context, q interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}, sessionID string, notFound error) (string, error) {
	var runtimeID string
	err := q.QueryRowContext(ctx, "SELECT runtime_id FROM sessions WHERE id = ?", sessionID).Scan(&runtimeID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound
	}
	return runtimeID, err
}

// AddApproval implements store.Store.
func (s *Store) AddApproval(ctx context.Context, a store.Approval) error {
	if err := a.Validate(); err != nil {
		return s.failApproval("add", a.RuntimeID, a.SessionID, err)
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if a.SessionID != "" {
			runtimeID, err := sessionRuntime(ctx, tx, a.SessionID, store.ErrNotProvisioned)
			if err != nil {
				return err
			}
			if runtimeID != a.RuntimeID {
				return fmt.Errorf("%w (%q)", store.ErrWrongRuntime, runtimeID)
			}
		}
		if a.CreatedAt.IsZero() {
			a.CreatedAt = s.clock.Now()
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO approvals (runtime_id, session_id, rule, created_at) VALUES (?, NULLIF(?, ''), ?, ?) ON CONFLICT DO NOTHING",
			a.RuntimeID, a.SessionID, a.Rule, sqlrow.ToNanos(a.CreatedAt))
		return err
	})
	if err != nil {
		return s.failApproval("add", a.RuntimeID, a.SessionID, err)
	}
	return nil
}

// Approvals implements store.Store.
func (s *Store) Approvals(ctx context.Context, runtimeID, sessionID string) ([]store.Approval, error) {
	if err := s.read(ctx); err != nil {
		return nil, s.failApproval("read", runtimeID, sessionID, err)
	}
	if runtimeID == "" {
		return nil, s.failApproval("read", runtimeID, sessionID, fmt.Errorf("%w: runtime ID is empty", store.ErrInvalid))
	}
	if sessionID != "" {
		owner, err := sessionRuntime(ctx, s.db, sessionID, store.ErrNotFound)
		if err == nil && owner != runtimeID {
			err = fmt.Errorf("%w (%q)", store.ErrWrongRuntime, owner)
		}
		if err != nil {
			return nil, s.failApproval("read", runtimeID, sessionID, err)
		}
	}
	rows, err := s.db.QueryContext(ctx, `SELECT ifnull(session_id, ''), rule, created_at FROM approvals
WHERE runtime_id = ? AND (session_id IS NULL OR session_id = ?) ORDER BY id`, runtimeID, sessionID)
	if err != nil {
		return nil, s.failApproval("read", runtimeID, sessionID, err)
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a := store.Approval{RuntimeID: runtimeID}
		var at int64
		if err := rows.Scan(&a.SessionID, &a.Rule, &at); err != nil {
			return nil, s.failApproval("read", runtimeID, sessionID, err)
		}
		a.CreatedAt = sqlrow.FromNanos(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failApproval("read", runtimeID, sessionID, err)
	}
	return out, nil
}

// RebindRuntime implements store.Store.
func (s *Store) RebindRuntime(ctx context.Context, from, to string) (int, error) {
	if from == "" || to == "" {
		return 0, fmt.Errorf("rebind runtime %q to %q: %w: a runtime id is empty", from, to, store.ErrInvalid)
	}
	var n int64
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		res, err := tx.ExecContext(ctx, "UPDATE sessions SET runtime_id = ? WHERE runtime_id = ?", to, from)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE OR IGNORE approvals SET runtime_id = ? WHERE runtime_id = ?", to, from); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM approvals WHERE runtime_id = ?", from) // the ones to had already
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rebind runtime %q to %q: sqlite %s: %w", from, to, s.path, err)
	}
	return int(n), nil
}

// Park implements store.Store.
func (s *Store) Park(ctx context.Context, p store.ParkedCall) error {
	p, rules, err := sqlrow.Parking(p, s.clock.Now)
	if err != nil {
		return s.fail("park a call of", p.SessionID, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := s.lastSeq(ctx, tx, p.SessionID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO parked ("+sqlrow.ParkedColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', '', '', ?, 0, ?)",
			p.ID, p.SessionID, p.RuntimeID, p.TurnID, p.ToolUseID, p.ToolName, []byte(p.Input), p.Reason, rules, sqlrow.ToNanos(p.CreatedAt.UTC()), p.TraceParent)
		if err != nil && strings.Contains(err.Error(), "UNIQUE") {
			return fmt.Errorf("%w: parked call %s exists already", store.ErrInvalid, p.ID)
		}
		return err
	})
	if err != nil {
		return s.fail("park a call of", p.SessionID, err)
	}
	return nil
}

// ParkedCalls implements store.Store.
func (s *Store) ParkedCalls(ctx context.Context, f store.ParkFilter) ([]store.ParkedCall, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	q := "SELECT " + sqlrow.ParkedColumns + " FROM parked WHERE (? = '' OR session_id = ?) AND (? = '' OR status = ?) ORDER BY created_at, id"
	rows, err := s.db.QueryContext(ctx, q, f.SessionID, f.SessionID, f.Status, f.Status)
	if err != nil {
		return nil, fmt.Errorf("list parked calls: sqlite %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []store.ParkedCall
	for rows.Next() {
		p, err := sqlrow.ScanParked(rows)
		if err != nil {
			return nil, fmt.Errorf("list parked calls: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SetParkStatus implements store.Store.
func (s *Store) SetParkStatus(ctx context.Context, id, status, by, note string) (store.ParkedCall, error) {
	var out store.ParkedCall
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		p, err := sqlrow.ScanParked(tx.QueryRowContext(ctx, "SELECT "+sqlrow.ParkedColumns+" FROM parked WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("parked call %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := store.ValidateTransition(id, p.Status, status); err != nil {
			return err
		}
		p.Status = status
		if status == store.ParkApproved || status == store.ParkDenied {
			p.DecidedBy, p.Note, p.DecidedAt = by, note, s.clock.Now()
			_, err = tx.ExecContext(ctx, "UPDATE parked SET status = ?, decided_by = ?, note = ?, decided_at = ? WHERE id = ?", status, by, note, sqlrow.ToNanos(p.DecidedAt), id)
		} else {
			_, err = tx.ExecContext(ctx, "UPDATE parked SET status = ? WHERE id = ?", status, id)
		}
		out = p
		return err
	})
	if err != nil {
		if isContract(err) {
			return store.ParkedCall{}, err
		}
		return store.ParkedCall{}, fmt.Errorf("parked call %s: sqlite %s: %w", id, s.path, err)
	}
	return out, nil
}
