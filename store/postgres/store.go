package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/sqlstore"
	"github.com/orca-agent/orca/store/internal/wire"
)

// dialect is where PostgreSQL's SQL differs from SQLite's (store/sqlite).
var dialect = sqlstore.Dialect{
	Text: func(s string) any { return sqlstore.Bytes(s) },
	// The session's row lock, which orders the session's writes (see the
	// package documentation). It is the lock an UPDATE of the row takes
	// (NO KEY UPDATE), so that it does not hold up the rows that only
	// point to the session (an approval's foreign key).
	LastSeqQuery: "SELECT last_seq FROM sessions WHERE id = ? FOR NO KEY UPDATE",
	ForUpdate:    " FOR UPDATE",
	// Later than any time it had: another process's clock may be ahead.
	UpdatedAt: "GREATEST(?, updated_at + 1)",
	RebindApprovals: `UPDATE approvals a SET runtime_id = $1 WHERE a.runtime_id = $2 AND NOT EXISTS (
	SELECT 1 FROM approvals b WHERE b.runtime_id = $1 AND COALESCE(b.session_id, '') = COALESCE(a.session_id, '') AND b.rule = a.rule)`,
	IsUnique: func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23505" // unique_violation
	},
}

// AppendStep appends a step (see sqlstore.DB): the lease check, the
// records and the totals are one transaction.
func (s db) AppendStep(ctx context.Context, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error) {
	recs := step.Records
	n := len(recs)
	enc := make([][]byte, n)
	turnIDs, kinds, times := make([]string, n), make([]string, n), make([]int64, n)
	models := make([][]byte, n) // a server names its model: bytes, as the other strings others write
	out := make([]store.Record, n)
	now := s.clock.Now()
	for i, r := range recs {
		b, err := wire.Encode(r.Message)
		if err != nil {
			return nil, store.Totals{}, fmt.Errorf("recs[%d]: %w", i, err)
		}
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time, r.SessionID = r.Time.UTC(), sessionID
		enc[i], turnIDs[i], kinds[i], models[i], times[i] = b, r.TurnID, r.Kind, sqlstore.Bytes(r.Model), sqlstore.ToNanos(r.Time)
		out[i] = r
	}
	var sum store.Totals
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var last int64
		var err error
		if n == 0 {
			last, err = dialect.LastSeq(ctx, querier{tx}, sessionID)
		} else {
			// Moves UpdatedAt (later than any time it had: another
			// process's clock may be ahead), numbers the batch, and takes
			// the session's row lock, in one statement.
			err = tx.QueryRow(ctx, "UPDATE sessions SET updated_at = GREATEST($2, updated_at + 1), last_seq = last_seq + $3 WHERE id = $1 RETURNING last_seq - $3",
				sessionID, sqlstore.ToNanos(now), n).Scan(&last)
			if errors.Is(err, pgx.ErrNoRows) {
				err = store.ErrNotProvisioned
			}
		}
		if err != nil {
			return err
		}
		if step.Owner != "" {
			if err := sqlstore.Holds(ctx, querier{tx}, sessionID, step.Owner); err != nil {
				return err
			}
		}
		if totals {
			if sum, err = addTotals(ctx, tx, sessionID, step.Totals); err != nil {
				return err
			}
		}
		if step.Finish != nil {
			count, err := sqlstore.Finish(ctx, s.shared, querier{tx}, sessionID, *step.Finish)
			if err != nil {
				return err
			}
			sum.Turns += count
		}
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO records (session_id, seq, turn_id, time, kind, message, model)
SELECT $1, $2 + o, t, tm, k, m, md FROM unnest($3::text[], $4::bigint[], $5::text[], $6::bytea[], $7::bytea[]) WITH ORDINALITY AS u (t, tm, k, m, md, o)`,
			sessionID, last, turnIDs, times, kinds, enc, models)
		if err != nil {
			return fmt.Errorf("insert records %d to %d: %w", last+1, last+int64(n), err)
		}
		if err := dialect.KeepAttachments(ctx, querier{tx}, sessionID, sqlstore.ToNanos(now), recs); err != nil {
			return fmt.Errorf("keep the attachments of records %d to %d: %w", last+1, last+int64(n), err)
		}
		for i := range out {
			out[i].Seq = last + int64(i) + 1
		}
		return nil
	})
	if err == nil && step.Finish != nil {
		sqlstore.AfterFinish(ctx, s.shared, sessionID)
	}
	if err != nil || n == 0 {
		return nil, sum, err
	}
	// Return what is stored, not the caller's own slices.
	return out, sum, sqlstore.Stored(out, recs, enc)
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
		return store.Totals{}, s.where.Fail("add totals to", sessionID, err)
	}
	return out, nil
}

// addTotals adds d to the session's totals in tx and returns the new
// totals: the UPDATE's row lock makes the add and the read one step.
func addTotals(ctx context.Context, tx pgx.Tx, sessionID string, d store.Totals) (store.Totals, error) {
	t, err := sqlstore.ScanTotals(tx.QueryRow(ctx, `UPDATE totals SET input_tokens = input_tokens + $1, output_tokens = output_tokens + $2,
cache_read_tokens = cache_read_tokens + $3, cache_write_tokens = cache_write_tokens + $4, cost_usd = cost_usd + $5,
tool_calls = tool_calls + $6, wall_time_ns = wall_time_ns + $7, turns = turns + $8 WHERE session_id = $9 RETURNING `+sqlstore.TotalsColumns,
		d.Usage.InputTokens, d.Usage.OutputTokens, d.Usage.CacheReadTokens, d.Usage.CacheWriteTokens,
		d.CostUSD, d.ToolCalls, int64(d.WallTime), d.Turns, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotProvisioned
	}
	return t, err
}
