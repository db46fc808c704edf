package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/orca-agent/orca/store"
)

// AppendObservations implements store.Observations: the rows go in one
// transaction.
func (s *Store) AppendObservations(ctx context.Context, rows []store.Observation) error {
	if len(rows) == 0 {
		return nil
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO observations (time, name, runtime_id, root_runtime_id, session_id, turn_id, execution_id, parent_execution_id, depth, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, r := range rows {
			t := r.Time
			if t.IsZero() {
				t = time.Now()
			}
			if _, err := stmt.ExecContext(ctx, t.UnixNano(), r.Name, r.RuntimeID, r.RootRuntimeID, r.SessionID, r.TurnID, r.ExecutionID, r.ParentExecutionID, r.Depth, string(r.Data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %d observation rows: %w", len(rows), err)
	}
	return nil
}

// Observations implements store.Observations.
func (s *Store) Observations(ctx context.Context, f store.ObservationFilter) ([]store.Observation, error) {
	q := `SELECT seq, time, name, runtime_id, root_runtime_id, session_id, turn_id, execution_id, parent_execution_id, depth, data FROM observations WHERE seq > ?`
	args := []any{f.AfterSeq}
	if f.SessionID != "" {
		q += ` AND session_id = ?`
		args = append(args, f.SessionID)
	}
	if f.TurnID != "" {
		q += ` AND turn_id = ?`
		args = append(args, f.TurnID)
	}
	q += ` ORDER BY seq`
	if f.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read observation rows: %w", err)
	}
	defer rows.Close()
	var out []store.Observation
	for rows.Next() {
		var o store.Observation
		var t int64
		var data string
		if err := rows.Scan(&o.Seq, &t, &o.Name, &o.RuntimeID, &o.RootRuntimeID, &o.SessionID, &o.TurnID, &o.ExecutionID, &o.ParentExecutionID, &o.Depth, &data); err != nil {
			return nil, fmt.Errorf("read observation rows: %w", err)
		}
		o.Time = time.Unix(0, t).UTC()
		o.Data = json.RawMessage(strings.Clone(data))
		out = append(out, o)
	}
	return out, rows.Err()
}
