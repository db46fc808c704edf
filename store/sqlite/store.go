package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/sqlstore"
	"github.com/orca-agent/orca/store/internal/wire"
)

var (
	_ store.Store        = (*Store)(nil)
	_ store.Observations = (*Store)(nil)
	_ store.Schedules    = (*Store)(nil)
)

var errClosed = store.ErrClosed

// dialect is where SQLite's SQL differs from PostgreSQL's (store/postgres).
// A write transaction holds the file's one write lock (BEGIN IMMEDIATE),
// so a session's last Seq is read without a lock of its own, and a read
// in a write locks nothing more (no FOR UPDATE).
var dialect = sqlstore.Dialect{
	Text:            func(s string) any { return s },
	LastSeqQuery:    queries[stmtLastSeq],
	UpdatedAt:       updatedAt,
	RebindApprovals: "UPDATE OR IGNORE approvals SET runtime_id = ? WHERE runtime_id = ?",
	IsUnique:        func(err error) bool { return strings.Contains(err.Error(), "UNIQUE") },
}

// hooks keep what SQLite's store keeps besides the tables store/postgres
// has too: the transcripts' snapshots, and the committer's knowledge of
// sessions' last Seqs and totals (seqCache).
func (s *Store) hooks() sqlstore.Hooks {
	return sqlstore.Hooks{
		Live:      s.liveRecords,
		Compacted: s.compacted,
		Deleted: func(tx sqlstore.Querier, sessionID string) {
			tx.(querier).tx.forget(sessionID)
			s.frontiers.forget(sessionID)
		},
		// Its totals are read again at the next step.
		TurnFinished: func(tx sqlstore.Querier, sessionID string) { tx.(querier).tx.forgetTotals(sessionID) },
		AfterTurn:    func(ctx context.Context, sessionID string) { s.extendSnapshot(ctx, sessionID, 0, snapshotEvery) },
	}
}

// compacted resets the session's snapshot once MarkCompacted has newly
// compacted n records. Every record up to throughSeq is compacted now,
// and the snapshot's chunks may hold some: one empty chunk through
// throughSeq replaces them, so that reading the live records reads only
// the rows after it, not every row of the session to find them. If
// nothing was newly compacted, the snapshot holds.
func (s *Store) compacted(ctx context.Context, tx sqlstore.Querier, sessionID string, throughSeq, n int64) error {
	if n == 0 {
		return nil
	}
	s.frontiers.forget(sessionID)
	if _, err := tx.Exec(ctx, "DELETE FROM snapshot_chunks WHERE session_id = ?", sessionID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "INSERT INTO snapshot_chunks (session_id, through_seq, data) VALUES (?, ?, ?)", sessionID, throughSeq, wire.EncodeSnapshot(nil))
	return err
}

// AppendStep appends a step (see sqlstore.DB): the records, the totals
// and the lease check are one transaction.
func (s database) AppendStep(ctx context.Context, sessionID string, step store.Step, totals bool) ([]store.Record, store.Totals, error) {
	recs := step.Records
	// Encoded here, on the caller's goroutine, not the committer's.
	enc := make([]string, len(recs))
	for i, r := range recs {
		b, err := wire.Encode(r.Message)
		if err != nil {
			return nil, store.Totals{}, fmt.Errorf("recs[%d]: %w", i, err)
		}
		enc[i] = string(b)
	}
	out := make([]store.Record, len(recs))
	var sum store.Totals
	var lastSeq int64 // the session's last Seq once the step is in
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		now := s.clock.Now()
		var last int64
		var err error
		switch {
		case len(recs) == 0:
			if last, err = dialect.LastSeq(ctx, querier{tx: tx}, sessionID); err == nil && step.Owner != "" {
				err = sqlstore.Holds(ctx, querier{tx: tx}, sessionID, step.Owner)
			}
		case step.Owner != "":
			// Moving UpdatedAt checks the lease too; only if it moved
			// nothing is it worth asking why.
			err = touched(tx.stmt(stmtTouchLeased).ExecContext(ctx, sqlstore.ToNanos(now), sessionID, step.Owner, time.Now().UnixNano()))
			if errors.Is(err, store.ErrNotProvisioned) {
				if _, err = dialect.LastSeq(ctx, querier{tx: tx}, sessionID); err == nil {
					err = sqlstore.Holds(ctx, querier{tx: tx}, sessionID, step.Owner)
				}
				if err == nil { // holds asks what the UPDATE did; should they disagree, the lease decides
					err = touched(tx.stmt(stmtTouchSession).ExecContext(ctx, sqlstore.ToNanos(now), sessionID))
				}
			}
		default:
			err = touched(tx.stmt(stmtTouchSession).ExecContext(ctx, sqlstore.ToNanos(now), sessionID))
		}
		if err == nil && len(recs) > 0 {
			var known bool
			if last, known = tx.knownSeq(sessionID); !known {
				err = tx.stmt(stmtMaxSeq).QueryRowContext(ctx, sessionID).Scan(&last)
			}
		}
		if err != nil {
			return err
		}
		if totals {
			if sum, err = s.addTotals(ctx, tx, sessionID, step.Totals); err != nil {
				return err
			}
		}
		// The turn's end (its hook forgets the totals the committer
		// knows: they are read again at the next step).
		finished := step.Finish != nil
		if finished {
			n, err := sqlstore.Finish(ctx, s.shared, querier{tx: tx}, sessionID, *step.Finish)
			if err != nil {
				return err
			}
			sum.Turns += n
		}
		lastSeq = last + int64(len(recs))
		if len(recs) == 0 {
			if totals && !finished {
				tx.totalled(sessionID, sum)
			}
			return nil
		}
		insert := tx.stmt(stmtInsertRecord)
		for i, r := range recs {
			r.Seq = last + int64(i) + 1
			r.SessionID = sessionID
			if r.Time.IsZero() {
				r.Time = now
			}
			r.Time = r.Time.UTC()
			if _, err := insert.ExecContext(ctx, sessionID, r.Seq, r.TurnID, sqlstore.ToNanos(r.Time), r.Kind, enc[i], r.Model); err != nil {
				return fmt.Errorf("insert record %d: %w", r.Seq, err)
			}
			out[i] = r
		}
		if err := dialect.KeepAttachments(ctx, querier{tx: tx}, sessionID, sqlstore.ToNanos(now), recs); err != nil {
			return fmt.Errorf("keep the attachments of records %d to %d: %w", last+1, last+int64(len(recs)), err)
		}
		tx.appended(sessionID, last+int64(len(recs)))
		if totals && !finished {
			tx.totalled(sessionID, sum)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, sum, err
	case step.Finish != nil:
		s.extendSnapshot(ctx, sessionID, lastSeq, snapshotEvery) // FinishTurn's work after its commit
	case lastSeq/snapshotEvery != (lastSeq-int64(len(out)))/snapshotEvery:
		s.extendSnapshot(ctx, sessionID, lastSeq, snapshotBehind)
	}
	if len(recs) == 0 {
		return nil, sum, nil
	}
	// Return what is stored, not the caller's own slices.
	return out, sum, sqlstore.Stored(out, recs, enc)
}

// snapshotEvery is how many live records past the last chunk of a
// session's snapshot make FinishTurn add a chunk: the turn's writer pays
// for it once the turn is over, and a resume decodes at most that many
// rows past a finished turn.
const snapshotEvery = 256

// snapshotBehind is how many make an append add one (appends check at
// every multiple of snapshotEvery): a session whose turns never end — its
// writer crashed mid-turn, or never calls FinishTurn — still has a
// snapshot, and appends, the hot path, seldom pay for one.
const snapshotBehind = 8 * snapshotEvery

// liveRecords returns the session's live records: its snapshot's chunks,
// and the records after them. A snapshot that does not decode is not
// trusted: the records are read instead.
func (s *Store) liveRecords(ctx context.Context, sessionID string) ([]store.Record, error) {
	rows, err := s.stmts[stmtChunks].QueryContext(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	var through int64
	var chunks [][]byte
	n := 0
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&through, &data); err != nil {
			rows.Close()
			return nil, err
		}
		chunks = append(chunks, data)
		n += wire.SnapshotLen(data)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]store.Record, 0, n+snapshotEvery)
	var arena wire.Arena
	for _, data := range chunks {
		if out, err = wire.DecodeSnapshot(data, out, &arena, func(r wire.SnapRecord) store.Record {
			return store.Record{Seq: r.Seq, SessionID: sessionID, TurnID: r.TurnID, Time: r.Time, Kind: r.Kind, Message: r.Message, Model: r.Model}
		}); err != nil {
			out, through = out[:0], 0
			break
		}
	}
	if rows, err = s.stmts[stmtLiveAfter].QueryContext(ctx, sessionID, through); err != nil {
		return nil, err
	}
	return readRecords(rows, sessionID, out)
}

// extendSnapshot adds a chunk to the session's snapshot if least live
// records or more are past its last chunk. last is the session's last
// Seq, if the caller knows it (else 0). It runs once the caller's own
// write is committed, on the caller's goroutine, not the committer's.
// The snapshot is a cache, so this is best effort: a failure, or a chunk
// made stale by a concurrent compaction or chunk, leaves the snapshot as
// it was, and only makes the next resume read more rows.
func (s *Store) extendSnapshot(ctx context.Context, sessionID string, last int64, least int) {
	frontier, known := s.frontiers.get(sessionID)
	if !known {
		if err := s.stmts[stmtFrontier].QueryRowContext(ctx, sessionID).Scan(&frontier); err != nil {
			return
		}
		s.frontiers.set(sessionID, frontier)
	}
	if last == 0 {
		if err := s.stmts[stmtMaxSeq].QueryRowContext(ctx, sessionID).Scan(&last); err != nil {
			return
		}
	}
	if last-frontier < int64(least) {
		return
	}
	rows, err := s.stmts[stmtLiveAfter].QueryContext(ctx, sessionID, frontier)
	if err != nil {
		return
	}
	recs, err := readRecords(rows, sessionID, nil)
	if err != nil || len(recs) < least {
		return
	}
	snap := make([]wire.SnapRecord, len(recs))
	for i, r := range recs {
		snap[i] = wire.SnapRecord{Seq: r.Seq, Time: r.Time, TurnID: r.TurnID, Kind: r.Kind, Message: r.Message, Model: r.Model}
	}
	s.addChunk(ctx, sessionID, frontier, recs[len(recs)-1].Seq, wire.EncodeSnapshot(snap))
}

// addChunk stores a chunk holding the live records after frontier through
// through, unless the snapshot no longer ends at frontier (another chunk,
// or a compaction, came first); it reports whether it stored it. The
// frontier it leaves, or finds, is the one the store knows from then on.
func (s *Store) addChunk(ctx context.Context, sessionID string, frontier, through int64, data []byte) bool {
	added := false
	var now int64
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		added = false
		if err := tx.stmt(stmtFrontier).QueryRowContext(ctx, sessionID).Scan(&now); err != nil || now != frontier {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO snapshot_chunks (session_id, through_seq, data) VALUES (?, ?, ?)", sessionID, through, data); err != nil {
			return err
		}
		added, now = true, through
		return nil
	})
	if err != nil {
		s.frontiers.forget(sessionID)
		return false
	}
	s.frontiers.set(sessionID, now)
	return added
}

// frontiers are the sessions' snapshot frontiers (the last chunk's
// through_seq) as this store last read or moved them, so that a turn's
// end need not read its session's again. Another process's chunk or
// compaction leaves one behind the truth, which costs the next chunk a
// try (addChunk finds the frontier moved, and it is known again).
type frontiers struct {
	mu sync.Mutex
	m  map[string]int64
}

func (f *frontiers) get(sessionID string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[sessionID]
	return v, ok
}

func (f *frontiers) set(sessionID string, frontier int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || len(f.m) >= maxCachedSeqs {
		f.m = make(map[string]int64)
	}
	f.m[sessionID] = frontier
}

func (f *frontiers) forget(sessionID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, sessionID)
}

// readRecords appends the records of rows (sqlstore.RecordColumns) to
// out, and closes rows.
func readRecords(rows *sql.Rows, sessionID string, out []store.Record) ([]store.Record, error) {
	return sqlstore.ScanRecords(sqlRows{rows}, sessionID, out)
}

// AddTotals implements store.Store.
func (s *Store) AddTotals(ctx context.Context, sessionID string, d store.Totals) (store.Totals, error) {
	var out store.Totals
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		var err error
		if out, err = s.addTotals(ctx, tx, sessionID, d); err == nil {
			tx.totalled(sessionID, out)
		}
		return err
	})
	if err != nil {
		return store.Totals{}, s.where.Fail("add totals to", sessionID, err)
	}
	return out, nil
}

// addTotals adds d to the session's totals in tx and returns the new
// totals; the write transaction makes the add and the read one step.
// When the committer knows the old totals (see seqCache) they are not read
// back: the UPDATE succeeded, so their sum is the row's (an integer that
// overflows, or money that would be NaN, fails it in the STRICT table),
// and Go adds float64s as SQLite does, infinities included. The caller
// notes the new totals (tx.totalled) once its whole write has succeeded.
func (s *Store) addTotals(ctx context.Context, tx *writeTx, sessionID string, d store.Totals) (store.Totals, error) {
	err := touched(tx.stmt(stmtAddTotals).ExecContext(ctx,
		d.Usage.InputTokens, d.Usage.OutputTokens, d.Usage.CacheReadTokens, d.Usage.CacheWriteTokens,
		d.CostUSD, d.ToolCalls, int64(d.WallTime), d.Turns, sessionID))
	if err != nil {
		return store.Totals{}, err
	}
	if old, ok := tx.knownTotals(sessionID); ok {
		return old.Add(d), nil
	}
	return sqlstore.ScanTotals(tx.stmt(stmtTotals).QueryRowContext(ctx, sessionID))
}

// touched returns the error of an UPDATE of one session's row:
// ErrNotProvisioned if it changed no row.
func touched(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		err = store.ErrNotProvisioned
	}
	return err
}
