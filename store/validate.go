package store

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/orca-agent/orca/budget"
	"github.com/orca-agent/orca/llm"
)

// The times a store can keep: stores may persist nanoseconds since 1970 in
// an int64.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// checkSetTime is checkTime for a time that may be left zero (the store
// sets it): a zero one is not checked, and builds no error to throw away.
func checkSetTime(what string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	return checkTime(what, t)
}

func checkTime(what string, t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("%s %v is outside the years 1678–2262 a store can keep", what, t)
	}
	return nil
}

// The Validate methods and ValidateAppend state the argument checks of the
// Store contract, so that every implementation refuses the same things. The
// errors wrap ErrInvalid.

// Validate reports whether s can be provisioned: ID and RuntimeID are set,
// and CreatedAt (if set) is a time a store can keep.
func (s Session) Validate() error {
	if s.ID == "" {
		return fmt.Errorf("%w: session ID is empty", ErrInvalid)
	}
	if s.RuntimeID == "" {
		return fmt.Errorf("%w: session %q has an empty RuntimeID", ErrInvalid, s.ID)
	}
	if err := checkSetTime("CreatedAt", s.CreatedAt); err != nil {
		return fmt.Errorf("%w: session %q: %v", ErrInvalid, s.ID, err)
	}
	return nil
}

// Validate reports whether r can be appended (to any session): Kind is
// KindMessage or KindSummary, the message has a Role, the record is not
// marked Compacted, and Time (if set) is a time a store can keep.
func (r Record) Validate() error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

func (r Record) validate() error {
	switch r.Kind {
	case KindMessage, KindSummary:
	case "":
		return fmt.Errorf("empty Kind (want %q or %q)", KindMessage, KindSummary)
	default:
		return fmt.Errorf("unknown Kind %q (want %q or %q)", r.Kind, KindMessage, KindSummary)
	}
	if r.Message.Role == "" {
		return errors.New("empty message Role")
	}
	if r.Compacted {
		return errors.New("already marked Compacted (only MarkCompacted marks records)")
	}
	if !r.Time.IsZero() {
		if err := checkTime("Time", r.Time); err != nil {
			return err
		}
	}
	return nil
}

// ValidateAppend reports whether recs can be appended to sessionID as one
// batch: every record is valid and names sessionID or no session. The error
// names the first bad record by its index in the batch.
func ValidateAppend(sessionID string, recs []Record) error {
	for i, r := range recs {
		err := r.validate()
		if err == nil && r.SessionID != "" && r.SessionID != sessionID {
			err = fmt.Errorf("SessionID %q is not the session appended to", r.SessionID)
		}
		if err != nil {
			return fmt.Errorf("%w: recs[%d] of %d: %v", ErrInvalid, i, len(recs), err)
		}
	}
	return nil
}

// ValidateBudget reports whether b can be set as a session's budget
// override (budget.Limits.Validate), wrapping ErrInvalid.
func ValidateBudget(b budget.Limits) error {
	if err := b.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// Validate reports whether a can be added: RuntimeID and Rule are set, and
// CreatedAt (if set) is a time a store can keep.
func (a Approval) Validate() error {
	if a.RuntimeID == "" {
		return fmt.Errorf("%w: approval has an empty RuntimeID", ErrInvalid)
	}
	if a.Rule == "" {
		return fmt.Errorf("%w: approval has an empty Rule", ErrInvalid)
	}
	if err := checkSetTime("CreatedAt", a.CreatedAt); err != nil {
		return fmt.Errorf("%w: approval: %v", ErrInvalid, err)
	}
	return nil
}

// Validate reports whether w is one LearnWindow keeps.
func (w LearntWindow) Validate() error {
	switch {
	case w.RuntimeID == "":
		return fmt.Errorf("%w: learnt window has an empty RuntimeID", ErrInvalid)
	case w.Model == "":
		return fmt.Errorf("%w: learnt window has an empty Model", ErrInvalid)
	case w.Tokens <= 0:
		return fmt.Errorf("%w: learnt window of %s: %d tokens is not positive", ErrInvalid, w.Model, w.Tokens)
	}
	if err := checkSetTime("LearntAt", w.LearntAt); err != nil {
		return fmt.Errorf("%w: learnt window of %s: %v", ErrInvalid, w.Model, err)
	}
	return nil
}

// Validate reports whether f is a valid filter: Limit is not negative.
func (f Filter) Validate() error {
	if f.Limit < 0 {
		return fmt.Errorf("%w: Limit %d is negative", ErrInvalid, f.Limit)
	}
	return nil
}

// ValidateMark reports whether MarkCompacted(throughSeq) is valid in a
// session whose last record has lastSeq.
func ValidateMark(throughSeq, lastSeq int64) error {
	if throughSeq < 0 {
		return fmt.Errorf("%w: throughSeq %d is negative", ErrInvalid, throughSeq)
	}
	if throughSeq > lastSeq {
		return fmt.Errorf("%w: throughSeq %d is past the last record (Seq %d)", ErrInvalid, throughSeq, lastSeq)
	}
	return nil
}

// ValidateAttachments reports whether ms can be put for sessionID
// (Attachments.PutAttachments): the id is set, and each medium has a type
// (UTF-8 text) and bytes, and, if it gives them, the digest and the size
// of those bytes. The error names the first bad medium by its index in
// the batch, its digest and its name.
func ValidateAttachments(sessionID string, ms []*llm.Media) error {
	if sessionID == "" {
		return fmt.Errorf("%w: session ID is empty", ErrInvalid)
	}
	for i, m := range ms {
		var err error
		switch {
		case m == nil:
			err = errors.New("nil")
		case m.MediaType == "":
			err = errors.New("no media type")
		case !utf8.ValidString(m.MediaType):
			err = fmt.Errorf("media type %q is not UTF-8 text", m.MediaType)
		case len(m.Data) == 0:
			err = errors.New("no bytes")
		case m.Size != 0 && m.Size != int64(len(m.Data)):
			err = fmt.Errorf("size %d, but %d bytes", m.Size, len(m.Data))
		case m.Digest != "":
			if got := llm.DigestOf(m.Data); got != m.Digest {
				err = fmt.Errorf("its bytes' digest is %s", got)
			}
		}
		if err != nil {
			return fmt.Errorf("%w: media[%d] of %d%s: %v", ErrInvalid, i, len(ms), describe(m), err)
		}
	}
	return nil
}

// describe names m in an error: " (digest, name)".
func describe(m *llm.Media) string {
	if m == nil || m.Digest == "" && m.Name == "" {
		return ""
	}
	if m.Digest == "" || m.Name == "" {
		return " (" + m.Digest + m.Name + ")"
	}
	return " (" + m.Digest + ", " + m.Name + ")"
}
