package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orca-agent/orca/store"
)

// AppendObservations implements store.Observations: the rows go in one
// transaction, numbered after the last row stored.
//
// The transaction first locks the table against other writers (EXCLUSIVE
// mode: readers go on). Without it, a Seq taken from a sequence would give
// the store-wide order, but not the order of commits: a writer holding Seq
// 7 may commit after one holding Seq 8, and a reader that asked for rows
// after 6 in between would see 8, move on past it, and never see 7. A
// follower of the rows (a session's event stream on another worker) must
// not skip a row, so the Seqs are handed out under the lock, and a row is
// visible only once every row before it is. It also keeps the Seqs
// without gaps (a sequence leaves one at every rollback).
func (s *Store) AppendObservations(ctx context.Context, rows []store.Observation) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	times, depths := make([]int64, n), make([]int32, n)
	names, runtimes, roots, sessions, turns, execs, parents := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	data := make([][]byte, n)
	now := time.Now()
	for i, r := range rows {
		t := r.Time
		if t.IsZero() {
			t = now
		}
		times[i], depths[i] = t.UnixNano(), int32(r.Depth)
		names[i], runtimes[i], roots[i], sessions[i], turns[i], execs[i], parents[i] = r.Name, r.RuntimeID, r.RootRuntimeID, r.SessionID, r.TurnID, r.ExecutionID, r.ParentExecutionID
		data[i] = r.Data
		if data[i] == nil {
			data[i] = []byte{}
		}
	}
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE observations IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO observations (seq, time, name, runtime_id, root_runtime_id, session_id, turn_id, execution_id, parent_execution_id, depth, data)
SELECT (SELECT COALESCE(MAX(seq), 0) FROM observations) + o, tm, nm, rt, rr, ss, tu, ex, pe, dp, da
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bytea[])
	WITH ORDINALITY AS u (tm, nm, rt, rr, ss, tu, ex, pe, dp, da, o)`,
			times, names, runtimes, roots, sessions, turns, execs, parents, depths, data)
		return err
	})
	if err != nil {
		return fmt.Errorf("append %d observation rows: %w", n, s.dbErr(err))
	}
	return nil
}

// Observations implements store.Observations.
func (s *Store) Observations(ctx context.Context, f store.ObservationFilter) ([]store.Observation, error) {
	if err := s.read(ctx); err != nil {
		return nil, fmt.Errorf("read observation rows: %w", err)
	}
	q := `SELECT seq, time, name, runtime_id, root_runtime_id, session_id, turn_id, execution_id, parent_execution_id, depth, data FROM observations WHERE seq > $1`
	args := []any{f.AfterSeq}
	if f.SessionID != "" {
		args = append(args, f.SessionID)
		q += ` AND session_id = $` + strconv.Itoa(len(args))
	}
	if f.TurnID != "" {
		args = append(args, f.TurnID)
		q += ` AND turn_id = $` + strconv.Itoa(len(args))
	}
	q += ` ORDER BY seq`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", s.dbErr(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Observation, error) {
		var o store.Observation
		var t int64
		var data []byte
		err := row.Scan(&o.Seq, &t, &o.Name, &o.RuntimeID, &o.RootRuntimeID, &o.SessionID, &o.TurnID, &o.ExecutionID, &o.ParentExecutionID, &o.Depth, &data)
		o.Time, o.Data = time.Unix(0, t).UTC(), data
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", s.dbErr(err))
	}
	return out, nil
}
