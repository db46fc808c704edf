package sqlstore

import (
	"context"
	"fmt"

	"github.com/orca-agent/orca/store"
)

// AddApproval implements store.Store.
func (s *Store) AddApproval(ctx context.Context, a store.Approval) error {
	if err := a.Validate(); err != nil {
		return s.where.failApproval("add", a.RuntimeID, a.SessionID, err)
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.clock.Now()
	}
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		if a.SessionID != "" {
			runtimeID, err := sessionRuntime(ctx, tx, a.SessionID, store.ErrNotProvisioned)
			if err != nil {
				return err
			}
			if runtimeID != a.RuntimeID {
				return fmt.Errorf("%w (%q)", store.ErrWrongRuntime, runtimeID)
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO approvals (runtime_id, session_id, rule, created_at) VALUES (?, NULLIF(?, ''), ?, ?) ON CONFLICT DO NOTHING",
			a.RuntimeID, a.SessionID, s.d.Text(a.Rule), ToNanos(a.CreatedAt))
		return err
	})
	if err != nil {
		return s.where.failApproval("add", a.RuntimeID, a.SessionID, err)
	}
	return nil
}

// Approvals implements store.Store.
func (s *Store) Approvals(ctx context.Context, runtimeID, sessionID string) ([]store.Approval, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, s.where.failApproval("read", runtimeID, sessionID, err)
	}
	if runtimeID == "" {
		return nil, s.where.failApproval("read", runtimeID, sessionID, fmt.Errorf("%w: runtime ID is empty", store.ErrInvalid))
	}
	if sessionID != "" {
		owner, err := sessionRuntime(ctx, q, sessionID, store.ErrNotFound)
		if err == nil && owner != runtimeID {
			err = fmt.Errorf("%w (%q)", store.ErrWrongRuntime, owner)
		}
		if err != nil {
			return nil, s.where.failApproval("read", runtimeID, sessionID, err)
		}
	}
	rows, err := q.Query(ctx, `SELECT COALESCE(session_id, ''), rule, created_at FROM approvals
WHERE runtime_id = ? AND (session_id IS NULL OR session_id = ?) ORDER BY id`, runtimeID, sessionID)
	if err != nil {
		return nil, s.where.failApproval("read", runtimeID, sessionID, err)
	}
	out, err := collect(rows, func(row Scanner) (store.Approval, error) {
		a := store.Approval{RuntimeID: runtimeID}
		var at int64
		var rule []byte // text or bytes: see Bytes
		err := row.Scan(&a.SessionID, &rule, &at)
		a.Rule, a.CreatedAt = string(rule), fromNanos(at)
		return a, err
	})
	if err != nil {
		return nil, s.where.failApproval("read", runtimeID, sessionID, err)
	}
	return out, nil
}
