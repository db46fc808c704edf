package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/orca-agent/orca/store/internal/sqlrow"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// lockSession takes the session's row lock in tx, which orders the
// session's writes (see the package documentation), and returns its last
// Seq, or ErrNotProvisioned. It is the lock an UPDATE of the row takes
// (NO KEY UPDATE), so that it does not hold up the rows that only point
// to the session (an approval's foreign key).
func lockSession(ctx context.Context, tx pgx.Tx, sessionID string) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, "SELECT last_seq FROM sessions WHERE id = $1 FOR NO KEY UPDATE", sessionID).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNotProvisioned
	}
	return last, err
}

// Provision implements store.Store.
func (s *Store) Provision(ctx context.Context, in store.Session) (store.Session, error) {
	if err := in.Validate(); err != nil {
		return store.Session{}, s.fail("provision", in.ID, err)
	}
	var out store.Session
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = in
		if out.CreatedAt.IsZero() {
			out.CreatedAt = s.clock.Now()
		}
		out.CreatedAt = out.CreatedAt.UTC()
		s.clock.Observe(out.CreatedAt)
		out.UpdatedAt, out.Turns, out.LastPrompt = out.CreatedAt, 0, ""
		tag, err := tx.Exec(ctx, "INSERT INTO sessions ("+sqlrow.SessionColumns+") VALUES ($1, $2, $3, $4, $5, $6, 0, '') ON CONFLICT (id) DO NOTHING",
			out.ID, out.RuntimeID, sqlrow.Bytes(out.Workspace), sqlrow.Bytes(out.Agent), sqlrow.ToNanos(out.CreatedAt), sqlrow.ToNanos(out.UpdatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			_, err = tx.Exec(ctx, "INSERT INTO totals (session_id) VALUES ($1)", out.ID)
			return err
		}
		// The session exists (an INSERT that conflicted waited for it to
		// be committed, so this statement sees it).
		old, err := sqlrow.ScanSession(tx.QueryRow(ctx, "SELECT "+sqlrow.SessionColumns+" FROM sessions WHERE id = $1", in.ID))
		if err != nil {
			return err
		}
		if old.RuntimeID != in.RuntimeID {
			return fmt.Errorf("%w (%q, not %q)", store.ErrWrongRuntime, old.RuntimeID, in.RuntimeID)
		}
		out = old
		return nil
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
	ss, err := sqlrow.ScanSession(s.pool.QueryRow(ctx, "SELECT "+sqlrow.SessionColumns+" FROM sessions WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, s.fail("read", id, err)
	}
	return ss, nil
}

// Sessions implements store.Store.
func (s *Store) Sessions(ctx context.Context, f store.Filter) ([]store.Session, error) {
	fail := func(err error) error { return fmt.Errorf("list sessions: %w", s.dbErr(err)) }
	if err := s.read(ctx); err != nil {
		return nil, fail(err)
	}
	if err := f.Validate(); err != nil {
		return nil, fail(err)
	}
	var where []string
	var args []any
	if f.RuntimeID != "" {
		args = append(args, f.RuntimeID)
		where = append(where, "runtime_id = $"+strconv.Itoa(len(args)))
	}
	if f.Workspace != "" {
		args = append(args, sqlrow.Bytes(f.Workspace))
		where = append(where, "workspace = $"+strconv.Itoa(len(args)))
	}
	q := "SELECT " + sqlrow.SessionColumns + " FROM sessions"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY updated_at DESC, id"
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += " LIMIT $" + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fail(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Session, error) { return sqlrow.ScanSession(row) })
	if err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// DeleteSession implements store.Store: the session's row goes, and with
// it (ON DELETE CASCADE) every row kept for it but the observations.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		// The lock the DELETE will need, taken before the lease is read.
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE) s", id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		var holder string
		var expires int64
		err := tx.QueryRow(ctx, "SELECT owner, expires_at FROM leases WHERE session_id = $1", id).Scan(&holder, &expires)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err == nil && expires > time.Now().UnixNano() {
			return &store.LeaseError{SessionID: id, Owner: holder, Expires: sqlrow.FromNanos(expires)}
		}
		_, err = tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
		return err
	})
	if err != nil {
		return s.fail("delete", id, err)
	}
	return nil
}

// Append implements store.Store. The batch is one transaction.
func (s *Store) Append(ctx context.Context, sessionID string, recs ...store.Record) ([]store.Record, error) {
	out, _, err := s.appendStep(ctx, "append to", sessionID, store.Step{Records: recs}, false)
	return out, err
}

// AppendStep implements store.Store: the lease check, the records and the
// totals are one transaction.
func (s *Store) AppendStep(ctx context.Context, sessionID string, step store.Step) ([]store.Record, store.Totals, error) {
	return s.appendStep(ctx, "append a step to", sessionID, step, true)
}

func (s *Store) appendStep(ctx context.Context, op, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error) {
	recs := step.Records
	if err := store.ValidateAppend(sessionID, recs); err != nil {
		return nil, store.Totals{}, s.fail(op, sessionID, err)
	}
	n := len(recs)
	enc := make([][]byte, n)
	turnIDs, kinds, times := make([]string, n), make([]string, n), make([]int64, n)
	out := make([]store.Record, n)
	now := s.clock.Now()
	for i, r := range recs {
		b, err := wire.Encode(r.Message)
		if err != nil {
			return nil, store.Totals{}, s.fail(op, sessionID, fmt.Errorf("recs[%d]: %w", i, err))
		}
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time, r.SessionID = r.Time.UTC(), sessionID
		enc[i], turnIDs[i], kinds[i], times[i] = b, r.TurnID, r.Kind, sqlrow.ToNanos(r.Time)
		out[i] = r
	}
	var sum store.Totals
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var last int64
		var err error
		if n == 0 {
			last, err = lockSession(ctx, tx, sessionID)
		} else {
			// Moves UpdatedAt (later than any time it had: another
			// process's clock may be ahead), numbers the batch, and takes
			// the session's row lock, in one statement.
			err = tx.QueryRow(ctx, "UPDATE sessions SET updated_at = GREATEST($2, updated_at + 1), last_seq = last_seq + $3 WHERE id = $1 RETURNING last_seq - $3",
				sessionID, sqlrow.ToNanos(now), n).Scan(&last)
			if errors.Is(err, pgx.ErrNoRows) {
				err = store.ErrNotProvisioned
			}
		}
		if err != nil {
			return err
		}
		if step.Owner != "" {
			if err := holds(ctx, tx, sessionID, step.Owner); err != nil {
				return err
			}
		}
		if totals {
			if sum, err = addTotals(ctx, tx, sessionID, step.Totals); err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO records (session_id, seq, turn_id, time, kind, message)
SELECT $1, $2 + o, t, tm, k, m FROM unnest($3::text[], $4::bigint[], $5::text[], $6::bytea[]) WITH ORDINALITY AS u (t, tm, k, m, o)`,
			sessionID, last, turnIDs, times, kinds, enc)
		if err != nil {
			return fmt.Errorf("insert records %d to %d: %w", last+1, last+int64(n), err)
		}
		for i := range out {
			out[i].Seq = last + int64(i) + 1
		}
		return nil
	})
	if err != nil {
		return nil, store.Totals{}, s.fail(op, sessionID, err)
	}
	if n == 0 {
		return nil, sum, nil
	}
	// Return what is stored, not the caller's own slices.
	for i := range out {
		var ok bool
		if out[i].Message, ok = wire.Stored(recs[i].Message); ok {
			continue
		}
		if out[i].Message, err = wire.Decode(enc[i]); err != nil {
			return nil, store.Totals{}, s.fail(op, sessionID, err)
		}
	}
	return out, sum, nil
}

// holds checks, in tx (which holds the session's row lock), that owner
// holds the session's lease.
func holds(ctx context.Context, tx pgx.Tx, sessionID, owner string) error {
	var holder string
	var expires int64
	err := tx.QueryRow(ctx, "SELECT owner, expires_at FROM leases WHERE session_id = $1", sessionID).Scan(&holder, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && expires <= time.Now().UnixNano():
		return fmt.Errorf("%w: the writer's lease expired and no one holds it", store.ErrLeased)
	case err != nil:
		return err
	case holder != owner:
		return &store.LeaseError{SessionID: sessionID, Owner: holder, Expires: sqlrow.FromNanos(expires)}
	}
	return nil
}

// AcquireLease implements store.Store. Lease times are this process's
// clock, as in store/sqlite: the writers sharing a database need clocks
// that agree to well within the lease's length.
func (s *Store) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) (time.Time, error) {
	if err := store.ValidateLease(owner, ttl); err != nil {
		return time.Time{}, s.fail("lease", sessionID, err)
	}
	var until time.Time
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID); err != nil {
			return err
		}
		var holder string
		var expires int64
		now := time.Now()
		err := tx.QueryRow(ctx, "SELECT owner, expires_at FROM leases WHERE session_id = $1", sessionID).Scan(&holder, &expires)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err == nil && holder != owner && expires > now.UnixNano() {
			return &store.LeaseError{SessionID: sessionID, Owner: holder, Expires: sqlrow.FromNanos(expires)}
		}
		until = now.Add(ttl).UTC()
		_, err = tx.Exec(ctx, `INSERT INTO leases (session_id, owner, expires_at) VALUES ($1, $2, $3)
ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`, sessionID, owner, sqlrow.ToNanos(until))
		return err
	})
	if err != nil {
		return time.Time{}, s.fail("lease", sessionID, err)
	}
	return until, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DELETE FROM leases WHERE session_id = $1 AND owner = $2", sessionID, owner)
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
	q := "SELECT seq, turn_id, time, kind, message, compacted FROM records WHERE session_id = $1 AND seq > $2"
	if !f.IncludeCompacted {
		q += " AND NOT compacted"
	}
	q += " ORDER BY seq"
	rows, err := s.pool.Query(ctx, q, sessionID, f.AfterSeq)
	if err != nil {
		return nil, s.fail("read records of", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Record, error) {
		r := store.Record{SessionID: sessionID}
		var at int64
		var msg []byte
		if err := row.Scan(&r.Seq, &r.TurnID, &at, &r.Kind, &msg, &r.Compacted); err != nil {
			return store.Record{}, err
		}
		r.Time = sqlrow.FromNanos(at)
		var err error
		if r.Message, err = wire.Decode(msg); err != nil {
			return store.Record{}, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		return r, nil
	})
	if err != nil {
		return nil, s.fail("read records of", sessionID, err)
	}
	if len(out) == 0 {
		// Tell an empty transcript from an unknown session.
		if _, err := sessionRuntime(ctx, s.pool, sessionID, store.ErrNotFound); err != nil {
			return nil, s.fail("read records of", sessionID, err)
		}
	}
	return out, nil
}

// MarkCompacted implements store.Store.
func (s *Store) MarkCompacted(ctx context.Context, sessionID string, throughSeq int64) error {
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		last, err := lockSession(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if err := store.ValidateMark(throughSeq, last); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE records SET compacted = true WHERE session_id = $1 AND seq <= $2 AND NOT compacted", sessionID, throughSeq)
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
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = addTotals(ctx, tx, sessionID, d)
		return err
	})
	if err != nil {
		return store.Totals{}, s.fail("add totals to", sessionID, err)
	}
	return out, nil
}

// addTotals adds d to the session's totals in tx and returns the new
// totals: the UPDATE's row lock makes the add and the read one step.
func addTotals(ctx context.Context, tx pgx.Tx, sessionID string, d store.Totals) (store.Totals, error) {
	t, err := sqlrow.ScanTotals(tx.QueryRow(ctx, `UPDATE totals SET input_tokens = input_tokens + $1, output_tokens = output_tokens + $2,
cache_read_tokens = cache_read_tokens + $3, cache_write_tokens = cache_write_tokens + $4, cost_usd = cost_usd + $5,
tool_calls = tool_calls + $6, wall_time_ns = wall_time_ns + $7, turns = turns + $8 WHERE session_id = $9 RETURNING `+sqlrow.TotalsColumns,
		d.Usage.InputTokens, d.Usage.OutputTokens, d.Usage.CacheReadTokens, d.Usage.CacheWriteTokens,
		d.CostUSD, d.ToolCalls, int64(d.WallTime), d.Turns, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotProvisioned
	}
	return t, err
}

// Totals implements store.Store.
func (s *Store) Totals(ctx context.Context, sessionID string) (store.Totals, error) {
	if err := s.read(ctx); err != nil {
		return store.Totals{}, s.fail("read totals of", sessionID, err)
	}
	t, err := sqlrow.ScanTotals(s.pool.QueryRow(ctx, "SELECT "+sqlrow.TotalsColumns+" FROM totals WHERE session_id = $1", sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, sessionID); err != nil {
			return err
		}
		if b == nil {
			_, err := tx.Exec(ctx, "DELETE FROM budgets WHERE session_id = $1", sessionID)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO budgets (session_id, tokens, cost_usd, tool_calls, wall_time_ns) VALUES ($1, $2, $3, $4, $5)
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
	var wall int64
	err := s.pool.QueryRow(ctx, `SELECT b.session_id IS NOT NULL, COALESCE(b.tokens, 0), COALESCE(b.cost_usd, 0), COALESCE(b.tool_calls, 0), COALESCE(b.wall_time_ns, 0)
FROM sessions s LEFT JOIN budgets b ON b.session_id = s.id WHERE s.id = $1`, sessionID).Scan(&has, &b.Tokens, &b.CostUSD, &b.ToolCalls, &wall)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.fail("read budget of", sessionID, err)
	}
	if !has {
		return nil, nil
	}
	b.WallTime = time.Duration(wall)
	return &b, nil
}

// FinishTurn implements store.Store.
func (s *Store) FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error {
	now := s.clock.Now()
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var last string
		err := tx.QueryRow(ctx, "SELECT last_turn FROM sessions WHERE id = $1 FOR UPDATE", sessionID).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotProvisioned
		}
		if err != nil {
			return err
		}
		count := sqlrow.TurnCount(turnID, last)
		if _, err := tx.Exec(ctx, "UPDATE sessions SET turns = turns + $2, last_turn = $3, last_prompt = $4, updated_at = GREATEST($5, updated_at + 1) WHERE id = $1",
			sessionID, count, turnID, sqlrow.Bytes(prompt), sqlrow.ToNanos(now)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE totals SET turns = turns + $2 WHERE session_id = $1", sessionID, count)
		return err
	})
	if err != nil {
		return s.fail("finish turn of", sessionID, err)
	}
	return nil
}

// sessionRuntime returns the runtime of a session, or notFound.
func sessionRuntime(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, sessionID string, notFound error) (string, error) {
	var runtimeID string
	err := q.QueryRow(ctx, "SELECT runtime_id FROM sessions WHERE id = $1", sessionID).Scan(&runtimeID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound
	}
	return runtimeID, err
}

// AddApproval implements store.Store.
func (s *Store) AddApproval(ctx context.Context, a store.Approval) error {
	if err := a.Validate(); err != nil {
		return s.failApproval("add", a.RuntimeID, a.SessionID, err)
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.clock.Now()
	}
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if a.SessionID != "" {
			runtimeID, err := sessionRuntime(ctx, tx, a.SessionID, store.ErrNotProvisioned)
			if err != nil {
				return err
			}
			if runtimeID != a.RuntimeID {
				return fmt.Errorf("%w (%q)", store.ErrWrongRuntime, runtimeID)
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO approvals (runtime_id, session_id, rule, created_at) VALUES ($1, NULLIF($2, ''), $3, $4) ON CONFLICT DO NOTHING",
			a.RuntimeID, a.SessionID, sqlrow.Bytes(a.Rule), sqlrow.ToNanos(a.CreatedAt))
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
		owner, err := sessionRuntime(ctx, s.pool, sessionID, store.ErrNotFound)
		if err == nil && owner != runtimeID {
			err = fmt.Errorf("%w (%q)", store.ErrWrongRuntime, owner)
		}
		if err != nil {
			return nil, s.failApproval("read", runtimeID, sessionID, err)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT COALESCE(session_id, ''), rule, created_at FROM approvals
WHERE runtime_id = $1 AND (session_id IS NULL OR session_id = $2) ORDER BY id`, runtimeID, sessionID)
	if err != nil {
		return nil, s.failApproval("read", runtimeID, sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Approval, error) {
		a := store.Approval{RuntimeID: runtimeID}
		var at int64
		var rule []byte
		err := row.Scan(&a.SessionID, &rule, &at)
		a.Rule, a.CreatedAt = string(rule), sqlrow.FromNanos(at)
		return a, err
	})
	if err != nil {
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
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE sessions SET runtime_id = $2 WHERE runtime_id = $1", from, to)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `UPDATE approvals a SET runtime_id = $2 WHERE a.runtime_id = $1 AND NOT EXISTS (
	SELECT 1 FROM approvals b WHERE b.runtime_id = $2 AND COALESCE(b.session_id, '') = COALESCE(a.session_id, '') AND b.rule = a.rule)`, from, to); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM approvals WHERE runtime_id = $1", from) // the ones to had already
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rebind runtime %q to %q: %w", from, to, s.dbErr(err))
	}
	return int(n), nil
}

// Park implements store.Store.
func (s *Store) Park(ctx context.Context, p store.ParkedCall) error {
	p, rules, err := sqlrow.Parking(p, s.clock.Now)
	if err != nil {
		return s.fail("park a call of", p.SessionID, err)
	}
	input := []byte(p.Input)
	if input == nil {
		input = []byte{} // NOT NULL: no input is an empty one
	}
	err = s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, p.SessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO parked ("+sqlrow.ParkedColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', '', '', $10, 0, $11)",
			p.ID, p.SessionID, p.RuntimeID, p.TurnID, p.ToolUseID, p.ToolName, input, sqlrow.Bytes(p.Reason), rules, sqlrow.ToNanos(p.CreatedAt.UTC()), p.TraceParent)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
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
	rows, err := s.pool.Query(ctx, "SELECT "+sqlrow.ParkedColumns+" FROM parked WHERE ($1 = '' OR session_id = $1) AND ($2 = '' OR status = $2) ORDER BY created_at, id", f.SessionID, f.Status)
	if err != nil {
		return nil, fmt.Errorf("list parked calls: %w", s.dbErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ParkedCall, error) { return sqlrow.ScanParked(row) })
	if err != nil {
		return nil, fmt.Errorf("list parked calls: %w", s.dbErr(err))
	}
	return out, nil
}

// SetParkStatus implements store.Store.
func (s *Store) SetParkStatus(ctx context.Context, id, status, by, note string) (store.ParkedCall, error) {
	var out store.ParkedCall
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		p, err := sqlrow.ScanParked(tx.QueryRow(ctx, "SELECT "+sqlrow.ParkedColumns+" FROM parked WHERE id = $1 FOR UPDATE", id))
		if errors.Is(err, pgx.ErrNoRows) {
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
			_, err = tx.Exec(ctx, "UPDATE parked SET status = $2, decided_by = $3, note = $4, decided_at = $5 WHERE id = $1", id, status, sqlrow.Bytes(by), sqlrow.Bytes(note), sqlrow.ToNanos(p.DecidedAt))
		} else {
			_, err = tx.Exec(ctx, "UPDATE parked SET status = $2 WHERE id = $1", id, status)
		}
		out = p
		return err
	})
	if err != nil {
		if isContract(err) {
			return store.ParkedCall{}, err
		}
		return store.ParkedCall{}, fmt.Errorf("parked call %s: %w", id, s.dbErr(err))
	}
	return out, nil
}
