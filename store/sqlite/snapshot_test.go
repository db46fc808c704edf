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
// without it, after compaction (which leaves an empty snapshot through the
// compacted records, so that a read skips them), after a reopen, and when
// the snapshot is garbage.
func TestSnapshotIsACache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orca.db")
	s := open(t, path)
	if _, err := s.Provision(ctx, store.Session{ID: "s1", RuntimeID: "r1"}); err != nil {
		t.Fatal(err)
	}
	add := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, err := s.Append(ctx, "s1", benchMessage(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FinishTurn(ctx, "s1", "turn"); err != nil {
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
	// snapshotOf returns the session's snapshot: through which Seq, and
	// how many records it holds.
	snapshotOf := func() (through int64, n int) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var data []byte
		if err := db.QueryRowContext(ctx, "SELECT through_seq, data FROM snapshots WHERE session_id = 's1'").Scan(&through, &data); err != nil {
			return 0, 0
		}
		recs, err := wire.DecodeSnapshot(data, 0, func(r wire.SnapRecord) int64 { return r.Seq })
		if err != nil {
			t.Fatalf("the snapshot does not decode: %v", err)
		}
		return through, len(recs)
	}
	add(0, 300)
	if through, n := snapshotOf(); through != 300 || n != 300 {
		t.Fatalf("after 300 records and a turn, the snapshot holds %d records through %d", n, through)
	}
	add(300, 50)
	check("snapshot and tail")
	if err := s.MarkCompacted(ctx, "s1", 200); err != nil {
		t.Fatal(err)
	}
	if through, n := snapshotOf(); through != 200 || n != 0 {
		t.Errorf("after compacting through 200, the snapshot holds %d records through %d; want none through 200", n, through)
	}
	check("after compaction")
	add(350, 120)
	if through, n := snapshotOf(); through != 470 || n != 270 {
		t.Errorf("after 120 more records and a turn, the snapshot holds %d records through %d; want the 270 live ones through 470", n, through)
	}
	check("a new snapshot after compaction")
	// Compacting what is compacted already changes nothing, and keeps the
	// snapshot.
	if err := s.MarkCompacted(ctx, "s1", 100); err != nil {
		t.Fatal(err)
	}
	if through, n := snapshotOf(); through != 470 || n != 270 {
		t.Errorf("a compaction that marked nothing changed the snapshot to %d records through %d", n, through)
	}
	check("a compaction that marked nothing")
	s.Close()
	s = open(t, path)
	defer s.Close()
	check("reopened")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE snapshots SET data = x'01ff'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	check("a garbled snapshot")
}
