package sqlstore

import (
	"context"

	"github.com/orca-agent/orca/store"
)

// LearnWindow implements store.Store.
func (s *Store) LearnWindow(ctx context.Context, w store.LearntWindow) error {
	if err := w.Validate(); err != nil {
		return s.where.failWindows("learn", w.RuntimeID, err)
	}
	if w.LearntAt.IsZero() {
		w.LearntAt = s.clock.Now()
	}
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO windows (runtime_id, model, tokens, learnt_at) VALUES (?, ?, ?, ?)
ON CONFLICT (runtime_id, model) DO UPDATE SET tokens = excluded.tokens, learnt_at = excluded.learnt_at`,
			w.RuntimeID, s.d.Text(w.Model), w.Tokens, ToNanos(w.LearntAt))
		return err
	})
	if err != nil {
		return s.where.failWindows("learn", w.RuntimeID, err)
	}
	return nil
}

// LearntWindows implements store.Store.
func (s *Store) LearntWindows(ctx context.Context, runtimeID string) ([]store.LearntWindow, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, s.where.failWindows("read", runtimeID, err)
	}
	rows, err := q.Query(ctx, "SELECT model, tokens, learnt_at FROM windows WHERE runtime_id = ? ORDER BY model", runtimeID)
	if err != nil {
		return nil, s.where.failWindows("read", runtimeID, err)
	}
	out, err := collect(rows, func(row Scanner) (store.LearntWindow, error) {
		w := store.LearntWindow{RuntimeID: runtimeID}
		var model []byte // text or bytes: see Bytes
		var at int64
		err := row.Scan(&model, &w.Tokens, &at)
		w.Model, w.LearntAt = string(model), fromNanos(at)
		return w, err
	})
	if err != nil {
		return nil, s.where.failWindows("read", runtimeID, err)
	}
	return out, nil
}
