package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// The snapshot is a cache: what Records returns is the same with it as
// without it — as finished turns (and, far enough past the last chunk,
// appends) add chunks to it, after a compaction (which leaves one empty
// chunk through the compacted records, so that a read skips them), after
// a reopen, and when a chunk is garbage.
func TestSnapshotIsACache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s := open(t, path)
	// appendOnly appends records from to from+n-1, one by one; add does,
	// and then finishes the turn.
	appendOnly := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, err := s.Append(ctx, "s1", benchMessage(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add := func(from, n int) {
		t.Helper()
		appendOnly(from, n)
		if err := s.FinishTurn(ctx, "s1", "", "go on"); err != nil {
			t.Fatal(err)
		}
	}
	// What Records must return: the live records, as stored.
	check := func(what string) {
		t.Helper()
		all, err := s.Records(ctx, "s1", store.RecordFilter{IncludeCompacted: true})
		if err != nil {
			t.Fatal(err)
		}
		var want []store.Record
		for _, r := range all {
			if !r.Compacted {
				want = append(want, r)
			}
		}
		got, err := s.Records(ctx, "s1", store.RecordFilter{})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d records (%v), want %d", what, len(got), err, len(want))
		}
	}
	// snapshot returns the session's chunks as "through:records" and
	// checks that each holds records after the one before, up to its
	// through_seq, in order.
	snapshot := func() (chunks [][2]int64) {
		t.Helper()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, "SELECT through_seq, data FROM snapshot_chunks WHERE session_id = 's1' ORDER BY through_seq")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var prev int64
		for rows.Next() {
			var through int64
			var data []byte
			if err := rows.Scan(&through, &data); err != nil {
				t.Fatal(err)
			}
			seqs, err := wire.DecodeSnapshot(data, nil, nil, func(r wire.SnapRecord) int64 { return r.Seq })
			if err != nil {
				t.Fatalf("chunk through %d does not decode: %v", through, err)
			}
			for _, seq := range seqs {
				if seq <= prev || seq > through {
					t.Fatalf("chunk through %d after %d holds Seq %d", through, prev, seq)
				}
				prev = seq
			}
			prev = through
			chunks = append(chunks, [2]int64{through, int64(len(seqs))})
		}
		return chunks
	}
	want := func(what string, chunks ...[2]int64) {
		t.Helper()
		if got := snapshot(); !reflect.DeepEqual(got, chunks) {
			t.Errorf("%s: chunks (through, records) %v, want %v", what, got, chunks)
		}
	}
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	add(0, 300)
	want("after a turn of 300", [2]int64{300, 300})
	add(300, 50)
	want("after a turn of 50 more", [2]int64{300, 300})
	check("a chunk and a tail")
	if err := s.MarkCompacted(ctx, "s1", 200); err != nil {
		t.Fatal(err)
	}
	want("after compacting through 200", [2]int64{200, 0})
	check("after compaction")
	add(350, 200) // to Seq 550: 350 live records after the empty chunk
	want("after a turn of 200 more", [2]int64{200, 0}, [2]int64{550, 350})
	check("a chunk after compaction")
	// Compacting what is compacted already changes nothing, and keeps the
	// snapshot.
	if err := s.MarkCompacted(ctx, "s1", 100); err != nil {
		t.Fatal(err)
	}
	want("after a compaction that marked nothing", [2]int64{200, 0}, [2]int64{550, 350})
	add(550, 260)
	want("after a turn of 260 more", [2]int64{200, 0}, [2]int64{550, 350}, [2]int64{810, 260})
	check("three chunks and a tail")
	// A turn that never ends: appends add a chunk once they are far
	// enough past the last one, checking at every multiple of 256 (the
	// first past 810+2,048 is 3,072).
	appendOnly(810, 2300)
	want("after 2,300 appends in a turn that did not end", [2]int64{200, 0}, [2]int64{550, 350}, [2]int64{810, 260}, [2]int64{3072, 2262})
	check("four chunks and a tail")
	s.Close()
	s = open(t, path)
	defer s.Close()
	check("reopened")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE snapshot_chunks SET data = x'01ff' WHERE through_seq = 810"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	check("a garbled chunk")
}
