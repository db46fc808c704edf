package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/orca-agent/orca/store"
)

// The queries of one session's row.
const (
	sessionQuery = "SELECT " + sessionColumns + " FROM sessions WHERE id = ?"
	runtimeQuery = "SELECT runtime_id FROM sessions WHERE id = ?"
)

// Provision implements store.Store.
func (s *Store) Provision(ctx context.Context, in store.Session) (store.Session, error) {
	if err := in.Validate(); err != nil {
		return store.Session{}, s.where.Fail("provision", in.ID, err)
	}
	var out store.Session
	err := s.write(ctx, "provision", in.ID, func(ctx context.Context, tx Querier) error {
		out = in
		if out.CreatedAt.IsZero() {
			out.CreatedAt = s.clock.Now()
		}
		out.CreatedAt = out.CreatedAt.UTC()
		s.clock.Observe(out.CreatedAt)
		out.UpdatedAt, out.Turns, out.LastPrompt = out.CreatedAt, 0, ""
		n, err := tx.Exec(ctx, "INSERT INTO sessions ("+sessionColumns+") VALUES (?, ?, ?, ?, ?, ?, 0, '') ON CONFLICT (id) DO NOTHING",
			out.ID, out.RuntimeID, s.d.Text(out.Workspace), s.d.Text(out.Agent), ToNanos(out.CreatedAt), ToNanos(out.UpdatedAt))
		if err != nil {
			return err
		}
		if n == 1 {
			_, err = tx.Exec(ctx, "INSERT INTO totals (session_id) VALUES (?)", out.ID)
			return err
		}
		// The session exists (on PostgreSQL, an INSERT that conflicted
		// waited for it to be committed, so this statement sees it).
		old, err := scanSession(tx.QueryRow(ctx, sessionQuery, in.ID))
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
		return store.Session{}, err
	}
	return out, nil
}

// Session implements store.Store.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	return readOne(ctx, s, "read", id, sessionQuery, scanSession)
}

// Sessions implements store.Store.
func (s *Store) Sessions(ctx context.Context, f store.Filter) ([]store.Session, error) {
	fail := func(err error) error { return fmt.Errorf("list sessions: %w", s.where.Err(err)) }
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, fail(err)
	}
	if err := f.Validate(); err != nil {
		return nil, fail(err)
	}
	var where []string
	var args []any
	if f.RuntimeID != "" {
		where, args = append(where, "runtime_id = ?"), append(args, f.RuntimeID)
	}
	if f.Workspace != "" {
		where, args = append(where, "workspace = ?"), append(args, s.d.Text(f.Workspace))
	}
	query := "SELECT " + sessionColumns + " FROM sessions"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY updated_at DESC, id"
	if f.Limit > 0 {
		query, args = query+" LIMIT ?", append(args, f.Limit)
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fail(err)
	}
	out, err := collect(rows, scanSession)
	if err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// DeleteSession implements store.Store: the session's row goes, and with
// it (ON DELETE CASCADE) every row kept for it but the observations and
// its attachments, which may have been put before it was provisioned
// (dropAttachments).
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	absent := false
	err := s.write(ctx, "delete", id, func(ctx context.Context, tx Querier) error {
		// The lock the DELETE will need, taken before the lease is read.
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM sessions WHERE id = ?"+s.d.ForUpdate+") s", id).Scan(&n); err != nil {
			return err
		}
		if absent = n == 0; absent {
			// Attachments put for the id, never provisioned, go all the
			// same (committed: the session's absence is the answer).
			return dropAttachments(ctx, tx, id)
		}
		l, err := readLease(ctx, tx, id)
		if err != nil {
			return err
		}
		if l.live() {
			return l.err(id)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id = ?", id); err != nil {
			return err
		}
		if err := dropAttachments(ctx, tx, id); err != nil {
			return err
		}
		if s.hooks.Deleted != nil {
			s.hooks.Deleted(tx, id)
		}
		return nil
	})
	if err == nil && absent {
		err = s.where.Fail("delete", id, store.ErrNotFound)
	}
	return err
}

// dropAttachments forgets, in tx, the attachments session id keeps, and
// deletes the bytes of those no other session keeps.
func dropAttachments(ctx context.Context, tx Querier, id string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM attachments WHERE digest IN (SELECT digest FROM attachment_refs WHERE session_id = ?)
AND NOT EXISTS (SELECT 1 FROM attachment_refs r WHERE r.digest = attachments.digest AND r.session_id <> ?)`, id, id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "DELETE FROM attachment_refs WHERE session_id = ?", id)
	return err
}

// RebindRuntime implements store.Store.
func (s *Store) RebindRuntime(ctx context.Context, from, to string) (int, error) {
	if from == "" || to == "" {
		return 0, fmt.Errorf("rebind runtime %q to %q: %w: a runtime id is empty", from, to, store.ErrInvalid)
	}
	var n int64
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		var err error
		if n, err = tx.Exec(ctx, "UPDATE sessions SET runtime_id = ? WHERE runtime_id = ?", to, from); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.d.RebindApprovals, to, from); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "DELETE FROM approvals WHERE runtime_id = ?", from) // the ones to had already
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rebind runtime %q to %q: %w", from, to, s.where.Err(err))
	}
	return int(n), nil
}

// sessionRuntime returns the runtime of a session, or notFound.
func sessionRuntime(ctx context.Context, q Querier, sessionID string, notFound error) (string, error) {
	var runtimeID string
	err := q.QueryRow(ctx, runtimeQuery, sessionID).Scan(&runtimeID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound
	}
	return runtimeID, err
}

// collect reads every row of rows with scan, and closes rows.
func collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
