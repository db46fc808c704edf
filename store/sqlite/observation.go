package sqlite

import (
	"context"
	"time"

	"github.com/orca-agent/orca/store"
)

// AppendObservations stores rows (see sqlstore.DB) in one transaction, and
// sets their Seqs (again, should the committer run the write again).
func (s database) AppendObservations(ctx context.Context, rows []store.Observation) error {
	return s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		stmt := tx.stmt(stmtInsertObservation)
		for i, r := range rows {
			t := r.Time
			if t.IsZero() {
				t = time.Now()
			}
			res, err := stmt.ExecContext(ctx, t.UnixNano(), r.Name, r.RuntimeID, r.RootRuntimeID, r.SessionID, r.TurnID, r.ExecutionID, r.ParentExecutionID, r.Depth, string(r.Data))
			if err != nil {
				return err
			}
			// seq is the rowid: the last inserted.
			if rows[i].Seq, err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	})
}
