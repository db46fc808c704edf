package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// AppendObservations stores rows (see sqlstore.DB), in one transaction,
// numbered after the last row stored.
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
func (s db) AppendObservations(ctx context.Context, rows []store.Observation) error {
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
	var first int64 // the first row's Seq: the others follow it, in order
	err := s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE observations IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `WITH ins AS (INSERT INTO observations (seq, `+sqlstore.ObservationColumns+`)
SELECT (SELECT COALESCE(MAX(seq), 0) FROM observations) + o, tm, nm, rt, rr, ss, tu, ex, pe, dp, da
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::bytea[])
	WITH ORDINALITY AS u (tm, nm, rt, rr, ss, tu, ex, pe, dp, da, o)
RETURNING seq)
SELECT MIN(seq) FROM ins`,
			times, names, runtimes, roots, sessions, turns, execs, parents, depths, data).Scan(&first)
	})
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Seq = first + int64(i)
	}
	return nil
}
