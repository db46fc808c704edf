package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// RecordColumns are the columns ScanRecords reads, in order.
const RecordColumns = "seq, turn_id, time, kind, message, compacted, model"

// Append implements store.Store. The batch is one transaction.
func (s *Store) Append(ctx context.Context, sessionID string, recs ...store.Record) ([]store.Record, error) {
	out, _, err := s.appendStep(ctx, "append to", sessionID, store.Step{Records: recs}, false)
	return out, err
}

// AppendStep implements store.Store: the lease check, the records and the
// totals are one transaction.
func (s *Store) AppendStep(ctx context.Context, sessionID string, step store.Step) ([]store.Record, store.Totals, error) {
	return s.appendStep(ctx, "append a step to", sessionID, step, true)
}

func (s *Store) appendStep(ctx context.Context, op, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error) {
	if err := store.ValidateAppend(sessionID, step.Records); err != nil {
		return nil, store.Totals{}, s.where.Fail(op, sessionID, err)
	}
	out, sum, err := s.db.AppendStep(ctx, sessionID, step, totals)
	if err != nil {
		return nil, store.Totals{}, s.where.Fail(op, sessionID, err)
	}
	return out, sum, nil
}

// Records implements store.Store.
func (s *Store) Records(ctx context.Context, sessionID string, f store.RecordFilter) ([]store.Record, error) {
	q, err := s.db.Read(ctx)
	if err != nil {
		return nil, s.where.Fail("read records of", sessionID, err)
	}
	var out []store.Record
	if s.hooks.Live != nil && f.AfterSeq <= 0 && !f.IncludeCompacted {
		out, err = s.hooks.Live(ctx, sessionID)
	} else {
		query := "SELECT " + RecordColumns + " FROM records WHERE session_id = ? AND seq > ?"
		if !f.IncludeCompacted {
			query += " AND NOT compacted"
		}
		query += " ORDER BY seq"
		var rows Rows
		if rows, err = q.Query(ctx, query, sessionID, f.AfterSeq); err == nil {
			out, err = ScanRecords(rows, sessionID, nil)
		}
	}
	if err == nil {
		err = withAttachments(ctx, q, out)
	}
	if err != nil {
		return nil, s.where.Fail("read records of", sessionID, err)
	}
	if len(out) == 0 {
		// Tell an empty transcript from an unknown session.
		if _, err := sessionRuntime(ctx, q, sessionID, store.ErrNotFound); err != nil {
			return nil, s.where.Fail("read records of", sessionID, err)
		}
	}
	return out, nil
}

// ScanRecords appends the records of rows (RecordColumns) of the session
// to out, and closes rows.
func ScanRecords(rows Rows, sessionID string, out []store.Record) ([]store.Record, error) {
	defer rows.Close()
	for rows.Next() {
		r := store.Record{SessionID: sessionID}
		var at int64
		var msg text   // the message's strings share it
		var model text // text or bytes: see Bytes
		if err := rows.Scan(&r.Seq, &r.TurnID, &at, &r.Kind, &msg, &r.Compacted, &model); err != nil {
			return nil, err
		}
		r.Model = string(model)
		r.Time = fromNanos(at)
		var err error
		if r.Message, err = wire.DecodeString(string(msg)); err != nil {
			return nil, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// text is a column read as a string, whether the driver gives text
// (SQLite's TEXT, kept as it is) or bytes (PostgreSQL's BYTEA, copied).
type text string

func (t *text) Scan(src any) error {
	switch v := src.(type) {
	case string:
		*t = text(v)
	case []byte:
		*t = text(v)
	default:
		return fmt.Errorf("text stored as %T", src)
	}
	return nil
}

// Stored sets out's messages to what the store keeps of recs' (out[i]
// is recs[i] as appended), from the caller's messages (wire.Stored), or
// failing that from their stored form enc: never the caller's own slices.
func Stored[E string | []byte](out, recs []store.Record, enc []E) error {
	for i := range out {
		var ok bool
		if out[i].Message, ok = wire.Stored(recs[i].Message); ok {
			continue
		}
		var err error
		if out[i].Message, err = wire.DecodeString(string(enc[i])); err != nil {
			return err
		}
		// The bytes of its media are kept apart: the caller's are the
		// same.
		keepData(out[i].Message, recs[i].Message)
	}
	return nil
}

// keepData gives the media of dst, decoded from the stored form of src,
// src's bytes.
func keepData(dst, src llm.Message) {
	for j := range dst.Content {
		if j >= len(src.Content) {
			return
		}
		d, s := &dst.Content[j], &src.Content[j]
		if d.Media != nil && s.Media != nil {
			d.Media.Data = s.Media.Data
		}
	}
}

// MarkCompacted implements store.Store.
func (s *Store) MarkCompacted(ctx context.Context, sessionID string, throughSeq int64) error {
	return s.write(ctx, "mark compacted in", sessionID, func(ctx context.Context, tx Querier) error {
		last, err := s.d.LastSeq(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if err := store.ValidateMark(throughSeq, last); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, "UPDATE records SET compacted = true WHERE session_id = ? AND seq <= ? AND NOT compacted", sessionID, throughSeq)
		if err != nil || s.hooks.Compacted == nil {
			return err
		}
		return s.hooks.Compacted(ctx, tx, sessionID, throughSeq, n)
	})
}

// FinishTurn implements store.Store.
func (s *Store) FinishTurn(ctx context.Context, sessionID, turnID, prompt string) error {
	err := s.write(ctx, "finish turn of", sessionID, func(ctx context.Context, tx Querier) error {
		_, err := Finish(ctx, s, tx, sessionID, store.TurnEnd{TurnID: turnID, Prompt: prompt})
		return err
	})
	if err != nil {
		return err
	}
	AfterFinish(ctx, s, sessionID)
	return nil
}

// Finish is FinishTurn's work in tx, a write transaction (FinishTurn's,
// or a driver's AppendStep's for a Step.Finish): it returns how many
// turns it counted (0 or 1). Once tx has committed, the caller calls
// AfterFinish.
func Finish(ctx context.Context, s *Store, tx Querier, sessionID string, e store.TurnEnd) (int64, error) {
	var last string
	err := tx.QueryRow(ctx, s.finish[0], sessionID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrNotProvisioned
	}
	if err != nil {
		return 0, err
	}
	count := turnCount(e.TurnID, last)
	if _, err := tx.Exec(ctx, s.finish[1], count, e.TurnID, s.d.Text(e.Prompt), ToNanos(s.clock.Now()), sessionID); err != nil {
		return 0, err
	}
	if _, err = tx.Exec(ctx, s.finish[2], count, sessionID); err != nil {
		return 0, err
	}
	if s.hooks.TurnFinished != nil {
		s.hooks.TurnFinished(tx, sessionID)
	}
	return int64(count), nil
}

// FinishQueries are the statements Finish runs, in a dialect whose
// ForUpdate and UpdatedAt are forUpdate and updatedAt: always the same
// text, so that a driver may keep them prepared.
func FinishQueries(forUpdate, updatedAt string) [3]string {
	return [3]string{
		"SELECT last_turn FROM sessions WHERE id = ?" + forUpdate,
		"UPDATE sessions SET turns = turns + ?, last_turn = ?, last_prompt = ?, updated_at = " + updatedAt + " WHERE id = ?",
		"UPDATE totals SET turns = turns + ? WHERE session_id = ?",
	}
}

// AfterFinish is what follows a turn's end once its transaction has
// committed (Hooks.AfterTurn).
func AfterFinish(ctx context.Context, s *Store, sessionID string) {
	if s.hooks.AfterTurn != nil {
		s.hooks.AfterTurn(ctx, sessionID)
	}
}
