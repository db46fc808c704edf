package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/orca-agent/orca/store"
)

// LeaseQuery reads a session's lease: its owner and when it expires.
const LeaseQuery = "SELECT owner, expires_at FROM leases WHERE session_id = ?"

// lease is a session's lease as stored; the zero lease is none.
type lease struct {
	held    bool // the session has a lease row
	owner   string
	expires int64 // Unix nanoseconds
}

// readLease reads the session's lease in tx.
func readLease(ctx context.Context, tx Querier, sessionID string) (lease, error) {
	l := lease{held: true}
	err := tx.QueryRow(ctx, LeaseQuery, sessionID).Scan(&l.owner, &l.expires)
	if errors.Is(err, sql.ErrNoRows) {
		return lease{}, nil
	}
	return l, err
}

// live reports whether someone holds the lease now.
func (l lease) live() bool { return l.held && l.expires > time.Now().UnixNano() }

// err is the error of a writer the lease holder keeps out.
func (l lease) err(sessionID string) error {
	return &store.LeaseError{SessionID: sessionID, Owner: l.owner, Expires: fromNanos(l.expires)}
}

// Holds checks, in tx (which holds the lock ordering the session's
// writes), that owner holds the session's lease.
func Holds(ctx context.Context, tx Querier, sessionID, owner string) error {
	l, err := readLease(ctx, tx, sessionID)
	switch {
	case err != nil:
		return err
	case !l.live():
		return fmt.Errorf("%w: the writer's lease expired and no one holds it", store.ErrLeased)
	case l.owner != owner:
		return l.err(sessionID)
	}
	return nil
}

// LastSeq returns, in tx, the session's last Seq, or ErrNotProvisioned,
// and takes the lock that orders the session's writes.
func (d Dialect) LastSeq(ctx context.Context, tx Querier, sessionID string) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, d.LastSeqQuery, sessionID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotProvisioned
	}
	return last, err
}

// AcquireLease implements store.Store. Lease times are this process's
// clock: the writers sharing a database need clocks that agree to well
// within the lease's length.
func (s *Store) AcquireLease(ctx context.Context, sessionID, owner string, ttl time.Duration) (time.Time, error) {
	if err := store.ValidateLease(owner, ttl); err != nil {
		return time.Time{}, s.where.Fail("lease", sessionID, err)
	}
	var until time.Time
	err := s.write(ctx, "lease", sessionID, func(ctx context.Context, tx Querier) error {
		if _, err := s.d.LastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		now := time.Now()
		l, err := readLease(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if l.held && l.owner != owner && l.expires > now.UnixNano() {
			return l.err(sessionID)
		}
		until = now.Add(ttl).UTC()
		_, err = tx.Exec(ctx, `INSERT INTO leases (session_id, owner, expires_at) VALUES (?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`, sessionID, owner, ToNanos(until))
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	return until, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, sessionID, owner string) error {
	return s.write(ctx, "release the lease of", sessionID, func(ctx context.Context, tx Querier) error {
		if _, err := s.d.LastSeq(ctx, tx, sessionID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DELETE FROM leases WHERE session_id = ? AND owner = ?", sessionID, owner)
		return err
	})
}
