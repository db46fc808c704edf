package sqlstore

import (
	"context"
	"fmt"

	"github.com/orca-agent/orca/store"
)

// ObservationColumns are the columns of an observation row but its Seq,
// in the order both stores write them.
const ObservationColumns = "time, name, runtime_id, root_runtime_id, session_id, turn_id, execution_id, parent_execution_id, depth, data"

// AppendObservations implements store.Observations: the rows go in one
// transaction.
func (s *Store) AppendObservations(ctx context.Context, rows []store.Observation) error {
	if len(rows) == 0 {
		return nil
	}
	if err := s.db.AppendObservations(ctx, rows); err != nil {
		return fmt.Errorf("append %d observation rows: %w", len(rows), s.where.Err(err))
	}
	return nil
}

// Observations implements store.Observations.
func (s *Store) Observations(ctx context.Context, f store.ObservationFilter) ([]store.Observation, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", err)
	}
	query := "SELECT seq, " + ObservationColumns + " FROM observations WHERE seq > ?"
	args := []any{f.AfterSeq}
	if f.SessionID != "" {
		query, args = query+" AND session_id = ?", append(args, f.SessionID)
	}
	if f.TurnID != "" {
		query, args = query+" AND turn_id = ?", append(args, f.TurnID)
	}
	query += " ORDER BY seq"
	if f.Limit > 0 {
		query, args = query+" LIMIT ?", append(args, f.Limit)
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", s.where.Err(err))
	}
	out, err := collect(rows, func(row Scanner) (store.Observation, error) {
		var o store.Observation
		var t int64
		var data []byte // the event's JSON, text or bytes: a copy of its own
		err := row.Scan(&o.Seq, &t, &o.Name, &o.RuntimeID, &o.RootRuntimeID, &o.SessionID, &o.TurnID, &o.ExecutionID, &o.ParentExecutionID, &o.Depth, &data)
		o.Time, o.Data = fromNanos(t), data
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", s.where.Err(err))
	}
	return out, nil
}
