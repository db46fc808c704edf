package store

import (
	"errors"
	"fmt"
	"time"
)

// ErrLeased: another writer holds the session's lease (see LeaseError for
// who). Nothing was written.
var ErrLeased = errors.New("store: the session is held by another writer")

// LeaseError names the writer that holds a session's lease. It wraps
// ErrLeased.
type LeaseError struct {
	SessionID string
	// Owner is the holder, as it named itself to AcquireLease.
	Owner string
	// Expires is when the holder's lease ends unless renewed.
	Expires time.Time
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("%v: %s holds it until %s", ErrLeased, e.Owner, e.Expires.Local().Format("15:04:05"))
}

// Unwrap returns ErrLeased.
func (e *LeaseError) Unwrap() error { return ErrLeased }

// Step is what one step of a turn writes: its records and what it spent,
// in one transaction, so that a crash between steps loses neither.
type Step struct {
	// Owner, if set, is the writer that must hold the session's lease:
	// a writer whose lease expired or was taken over writes nothing
	// (*LeaseError).
	Owner string
	// Records are appended as by Append (a step may have none). The
	// store keeps copies: the caller may reuse the slice once it returns.
	Records []Record
	// Totals are added to the session's totals.
	Totals Totals
	// Finish, if set, finishes the turn as FinishTurn does, in the same
	// transaction: the turn's last records, its totals and its end are
	// one write.
	Finish *TurnEnd
}

// TurnEnd is what FinishTurn is told of a turn that ended (Step.Finish).
type TurnEnd struct {
	TurnID, Prompt string
}

// ValidateLease checks AcquireLease's arguments.
func ValidateLease(owner string, ttl time.Duration) error {
	if owner == "" {
		return fmt.Errorf("%w: the lease owner is empty", ErrInvalid)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: the lease duration %v is not positive", ErrInvalid, ttl)
	}
	return nil
}
