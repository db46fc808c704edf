package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/orca-agent/orca/store"
)

// The columns scanSchedule and scanFire read, in order.
const (
	scheduleColumns = "runtime_id, id, spec, time_zone, prompt, session_id, budget_usd, cap_usd, spent_usd, overlap, catch_up_ns, expires_at, paused, created_at"
	fireColumns     = "runtime_id, schedule_id, at, status, owner, session_id, error, spent_usd, claimed_at, ended_at"
	// scheduleKey is the WHERE of one schedule's row, by runtime and id.
	scheduleKey = " WHERE runtime_id = ? AND id = ?"
)

// AddSchedule implements store.Schedules.
func (s *Store) AddSchedule(ctx context.Context, sc store.Schedule) error {
	if err := sc.Validate(); err != nil {
		return s.where.failSchedule("add", sc.RuntimeID, sc.ID, err)
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = s.clock.Now()
	}
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		n, err := tx.Exec(ctx, "INSERT INTO schedules ("+scheduleColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (runtime_id, id) DO NOTHING",
			sc.RuntimeID, sc.ID, s.d.Text(sc.Spec), s.d.Text(sc.TimeZone), s.d.Text(sc.Prompt), sc.SessionID,
			sc.BudgetUSD, sc.CapUSD, sc.Spent, sc.Overlap, int64(sc.CatchUp), optNanos(sc.Expires), sc.Paused, ToNanos(sc.CreatedAt))
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: the runtime has a schedule %s already", store.ErrInvalid, sc.ID)
		}
		return err
	})
	if err != nil {
		return s.where.failSchedule("add", sc.RuntimeID, sc.ID, err)
	}
	return nil
}

// Schedule implements store.Schedules.
func (s *Store) Schedule(ctx context.Context, runtimeID, id string) (store.Schedule, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return store.Schedule{}, s.where.failSchedule("read", runtimeID, id, err)
	}
	sc, err := scanSchedule(q.QueryRow(ctx, "SELECT "+scheduleColumns+" FROM schedules"+scheduleKey, runtimeID, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Schedule{}, s.where.failSchedule("read", runtimeID, id, err)
	}
	return sc, nil
}

// Schedules implements store.Schedules.
func (s *Store) Schedules(ctx context.Context, runtimeID string) ([]store.Schedule, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the schedules of runtime %q: %w", runtimeID, s.where.Err(err))
	}
	rows, err := q.Query(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE runtime_id = ? ORDER BY created_at, id", runtimeID)
	if err != nil {
		return nil, fmt.Errorf("list the schedules of runtime %q: %w", runtimeID, s.where.Err(err))
	}
	out, err := collect(rows, scanSchedule)
	if err != nil {
		return nil, fmt.Errorf("list the schedules of runtime %q: %w", runtimeID, s.where.Err(err))
	}
	return out, nil
}

// UpdateSchedule implements store.Schedules.
func (s *Store) UpdateSchedule(ctx context.Context, sc store.Schedule) error {
	if err := sc.Validate(); err != nil {
		return s.where.failSchedule("update", sc.RuntimeID, sc.ID, err)
	}
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		n, err := tx.Exec(ctx, `UPDATE schedules SET spec = ?, time_zone = ?, prompt = ?, session_id = ?, budget_usd = ?, cap_usd = ?,
overlap = ?, catch_up_ns = ?, expires_at = ?, paused = ?`+scheduleKey,
			s.d.Text(sc.Spec), s.d.Text(sc.TimeZone), s.d.Text(sc.Prompt), sc.SessionID, sc.BudgetUSD, sc.CapUSD,
			sc.Overlap, int64(sc.CatchUp), optNanos(sc.Expires), sc.Paused, sc.RuntimeID, sc.ID)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return s.where.failSchedule("update", sc.RuntimeID, sc.ID, err)
	}
	return nil
}

// DeleteSchedule implements store.Schedules. Its fires go with it (the
// foreign key cascades), after its row: on PostgreSQL, the schedule's
// row lock is the one ClaimFire and EndFire take first too, so that none
// of them waits for another in the other order.
func (s *Store) DeleteSchedule(ctx context.Context, runtimeID, id string) error {
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		n, err := tx.Exec(ctx, "DELETE FROM schedules"+scheduleKey, runtimeID, id)
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return s.where.failSchedule("delete", runtimeID, id, err)
	}
	return nil
}

// ClaimFire implements store.Schedules. The schedule's row is locked
// (FOR UPDATE on PostgreSQL) so that it cannot go before the claim
// commits; of claims of one time, the unique key lets one insert and the
// others, having waited for it, insert nothing.
func (s *Store) ClaimFire(ctx context.Context, f store.Fire) (bool, error) {
	if err := f.Validate(); err != nil {
		return false, s.where.failFire("claim", f, err)
	}
	f = claimed(f, s.clock.Now)
	var won bool
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		won = false
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM schedules"+scheduleKey+s.d.ForUpdate, f.RuntimeID, f.ScheduleID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		n, err := tx.Exec(ctx, "INSERT INTO schedule_fires ("+fireColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (runtime_id, schedule_id, at) DO NOTHING",
			f.RuntimeID, f.ScheduleID, ToNanos(f.At), f.Status, f.Owner, f.SessionID, s.d.Text(f.Error), f.Spent, ToNanos(f.ClaimedAt), optNanos(f.EndedAt))
		if err != nil || n == 0 {
			return err
		}
		if f.Spent != 0 {
			if _, err := tx.Exec(ctx, "UPDATE schedules SET spent_usd = spent_usd + ?"+scheduleKey, f.Spent, f.RuntimeID, f.ScheduleID); err != nil {
				return err
			}
		}
		won = true
		return nil
	})
	if err != nil {
		return false, s.where.failFire("claim", f, err)
	}
	return won, nil
}

// EndFire implements store.Schedules. The schedule's spending is added
// first, taking its row's lock before the fire's, as ClaimFire does; a
// fire that is not running undoes it.
func (s *Store) EndFire(ctx context.Context, f store.Fire) error {
	if err := f.ValidateEnd(); err != nil {
		return s.where.failFire("end", f, err)
	}
	if f.EndedAt.IsZero() {
		f.EndedAt = s.clock.Now()
	}
	err := s.db.Write(ctx, func(ctx context.Context, tx Querier) error {
		n, err := tx.Exec(ctx, "UPDATE schedules SET spent_usd = spent_usd + ?"+scheduleKey, f.Spent, f.RuntimeID, f.ScheduleID)
		if err == nil && n == 1 {
			n, err = tx.Exec(ctx, `UPDATE schedule_fires SET status = ?, session_id = COALESCE(NULLIF(?, ''), session_id), error = ?, spent_usd = spent_usd + ?, ended_at = ?
WHERE runtime_id = ? AND schedule_id = ? AND at = ? AND status = 'running'`,
				f.Status, f.SessionID, s.d.Text(f.Error), f.Spent, ToNanos(f.EndedAt), f.RuntimeID, f.ScheduleID, ToNanos(f.At))
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: no running fire at that time", store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return s.where.failFire("end", f, err)
	}
	return nil
}

// Fires implements store.Schedules.
func (s *Store) Fires(ctx context.Context, runtimeID, id string, limit int) ([]store.Fire, error) {
	if err := store.ValidateLimit(limit); err != nil {
		return nil, s.where.failSchedule("list the fires of", runtimeID, id, err)
	}
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, s.where.failSchedule("list the fires of", runtimeID, id, err)
	}
	var one int
	if err := q.QueryRow(ctx, "SELECT 1 FROM schedules"+scheduleKey, runtimeID, id).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = store.ErrNotFound
		}
		return nil, s.where.failSchedule("list the fires of", runtimeID, id, err)
	}
	query, args := "SELECT "+fireColumns+" FROM schedule_fires WHERE runtime_id = ? AND schedule_id = ? ORDER BY at DESC", []any{runtimeID, id}
	if limit > 0 {
		query, args = query+" LIMIT ?", append(args, limit)
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, s.where.failSchedule("list the fires of", runtimeID, id, err)
	}
	out, err := collect(rows, scanFire)
	if err != nil {
		return nil, s.where.failSchedule("list the fires of", runtimeID, id, err)
	}
	return out, nil
}

// scanSchedule reads a row of scheduleColumns.
func scanSchedule(row Scanner) (store.Schedule, error) {
	var sc store.Schedule
	var spec, zone, prompt []byte // text or bytes: see Bytes
	var catchUp, expires, created int64
	if err := row.Scan(&sc.RuntimeID, &sc.ID, &spec, &zone, &prompt, &sc.SessionID, &sc.BudgetUSD, &sc.CapUSD, &sc.Spent,
		&sc.Overlap, &catchUp, &expires, &sc.Paused, &created); err != nil {
		return store.Schedule{}, err
	}
	sc.Spec, sc.TimeZone, sc.Prompt = string(spec), string(zone), string(prompt)
	sc.CatchUp, sc.Expires, sc.CreatedAt = time.Duration(catchUp), fromOptNanos(expires), fromNanos(created)
	return sc, nil
}

// scanFire reads a row of fireColumns.
func scanFire(row Scanner) (store.Fire, error) {
	var f store.Fire
	var msg []byte // text or bytes: see Bytes
	var at, claimedAt, endedAt int64
	if err := row.Scan(&f.RuntimeID, &f.ScheduleID, &at, &f.Status, &f.Owner, &f.SessionID, &msg, &f.Spent, &claimedAt, &endedAt); err != nil {
		return store.Fire{}, err
	}
	f.Error = string(msg)
	f.At, f.ClaimedAt, f.EndedAt = fromNanos(at), fromNanos(claimedAt), fromOptNanos(endedAt)
	return f, nil
}

// claimed is f as ClaimFire records it (as store.Memory does): ClaimedAt
// now when zero; a running fire has not ended, a skipped or missed one
// ends as it is claimed.
func claimed(f store.Fire, now func() time.Time) store.Fire {
	if f.ClaimedAt.IsZero() {
		f.ClaimedAt = now()
	}
	switch {
	case f.Status == store.FireRunning:
		f.EndedAt = time.Time{}
	case f.EndedAt.IsZero():
		f.EndedAt = f.ClaimedAt
	}
	return f
}

// optNanos is ToNanos of a time that may be unset: 0 for the zero time.
func optNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ToNanos(t)
}

// fromOptNanos is optNanos undone.
func fromOptNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromNanos(n)
}
