package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/orca-agent/orca/store"
)

// Park implements store.Store.
func (s *Store) Park(ctx context.Context, p store.ParkedCall) error {
	p, rules, err := parking(p, s.clock.Now)
	if err != nil {
		return s.where.Fail("park a call of", p.SessionID, err)
	}
	input := []byte(p.Input)
	if input == nil {
		input = []byte{} // NOT NULL: no input is an empty one
	}
	return s.write(ctx, "park a call of", p.SessionID, func(ctx context.Context, tx Querier) error {
		if _, err := s.d.LastSeq(ctx, tx, p.SessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO parked ("+parkedColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', '', '', ?, 0, ?)",
			p.ID, p.SessionID, p.RuntimeID, p.TurnID, p.ToolUseID, p.ToolName, input, s.d.Text(p.Reason), rules, ToNanos(p.CreatedAt.UTC()), p.TraceParent)
		if err != nil && s.d.IsUnique(err) {
			return fmt.Errorf("%w: parked call %s exists already", store.ErrInvalid, p.ID)
		}
		return err
	})
}

// ParkedCalls implements store.Store.
func (s *Store) ParkedCalls(ctx context.Context, f store.ParkFilter) ([]store.ParkedCall, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, "SELECT "+parkedColumns+" FROM parked WHERE (? = '' OR session_id = ?) AND (? = '' OR status = ?) ORDER BY created_at, id",
		f.SessionID, f.SessionID, f.Status, f.Status)
	if err != nil {
		return nil, fmt.Errorf("list parked calls: %w", s.where.Err(err))
	}
	out, err := collect(rows, scanParked)
	if err != nil {
		return nil, fmt.Errorf("list parked calls: %w", s.where.Err(err))
	}
	return out, nil
}

// SetParkStatus implements store.Store.
func (s *Store) SetParkStatus(ctx context.Context, id, status, by, note string) (store.ParkedCall, error) {
	var out store.ParkedCall
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		p, err := scanParked(tx.QueryRow(ctx, "SELECT "+parkedColumns+" FROM parked WHERE id = ?"+s.d.ForUpdate, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("parked call %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := store.ValidateTransition(id, p.Status, status); err != nil {
			return err
		}
		p.Status = status
		if status == store.ParkApproved || status == store.ParkDenied {
			p.DecidedBy, p.Note, p.DecidedAt = by, note, s.clock.Now()
			_, err = tx.Exec(ctx, "UPDATE parked SET status = ?, decided_by = ?, note = ?, decided_at = ? WHERE id = ?", status, s.d.Text(by), s.d.Text(note), ToNanos(p.DecidedAt), id)
		} else {
			_, err = tx.Exec(ctx, "UPDATE parked SET status = ? WHERE id = ?", status, id)
		}
		out = p
		return err
	})
	if err != nil {
		if isContract(err) {
			return store.ParkedCall{}, err
		}
		return store.ParkedCall{}, fmt.Errorf("parked call %s: %w", id, s.where.Err(err))
	}
	return out, nil
}
