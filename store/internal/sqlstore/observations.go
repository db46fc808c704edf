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
	args := make([]any, 1, 4)
	args[0] = f.AfterSeq
	if f.SessionID != "" {
		args = append(args, f.SessionID)
	}
	if f.TurnID != "" {
		args = append(args, f.TurnID)
	}
	if f.Limit > 0 {
		args = append(args, f.Limit)
	}
	rows, err := q.Query(ctx, ObservationQueries[observationQuery(f)], args...)
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

// ObservationQueries are the queries Observations runs, one per kind of
// filter (observationQuery): always the same text, so that a driver may
// keep them prepared.
var ObservationQueries = func() (qs [8]string) {
	for i := range qs {
		q := "SELECT seq, " + ObservationColumns + " FROM observations WHERE seq > ?"
		if i&1 != 0 {
			q += " AND session_id = ?"
		}
		if i&2 != 0 {
			q += " AND turn_id = ?"
		}
		q += " ORDER BY seq"
		if i&4 != 0 {
			q += " LIMIT ?"
		}
		qs[i] = q
	}
	return qs
}()

// ObservationInsert stores one observation row.
const ObservationInsert = "INSERT INTO observations (" + ObservationColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// observationQuery is the index in ObservationQueries of f's query.
func observationQuery(f store.ObservationFilter) int {
	i := 0
	if f.SessionID != "" {
		i |= 1
	}
	if f.TurnID != "" {
		i |= 2
	}
	if f.Limit > 0 {
		i |= 4
	}
	return i
}

// The queries of ObservationHeads.
const (
	LastObservationQuery  = "SELECT COALESCE(MAX(seq), 0) FROM observations"
	ObservationHeadsQuery = "SELECT session_id, MAX(seq) FROM observations WHERE seq > ? GROUP BY session_id"
)

// ObservationHeads implements store.ObservationHeads.
func (s *Store) ObservationHeads(ctx context.Context, afterSeq int64) (int64, map[string]int64, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("read observation heads: %w", err)
	}
	if afterSeq < 0 {
		var last int64
		if err := q.QueryRow(ctx, LastObservationQuery).Scan(&last); err != nil {
			return 0, nil, fmt.Errorf("read observation heads: %w", s.where.Err(err))
		}
		return last, nil, nil
	}
	rows, err := q.Query(ctx, ObservationHeadsQuery, afterSeq)
	if err != nil {
		return 0, nil, fmt.Errorf("read observation heads: %w", s.where.Err(err))
	}
	defer rows.Close()
	last := afterSeq
	var sessions map[string]int64
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return 0, nil, fmt.Errorf("read observation heads: %w", s.where.Err(err))
		}
		last = max(last, seq)
		if id != "" {
			if sessions == nil {
				sessions = make(map[string]int64)
			}
			sessions[id] = seq
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("read observation heads: %w", s.where.Err(err))
	}
	return last, sessions, nil
}
