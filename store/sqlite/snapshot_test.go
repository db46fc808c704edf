package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/orca-agent/orca/store"
)

// The snapshot is a cache: what Records returns is the same with it as
// without it, after compaction, after a reopen, and when the snapshot is
// garbage.
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
	snapshotOf := func() (through int64) {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRowContext(ctx, "SELECT through_seq FROM snapshots WHERE session_id = 's1'").Scan(&through); err != nil {
			return 0
		}
		return through
	}
	add(0, 300)
	if snapshotOf() != 300 {
		t.Fatalf("no snapshot after 300 records: %d", snapshotOf())
	}
	add(300, 50)
	check("snapshot and tail")
	if err := s.MarkCompacted(ctx, "s1", 200); err != nil {
		t.Fatal(err)
	}
	if snapshotOf() != 0 {
		t.Error("compaction left a snapshot holding compacted records")
	}
	check("after compaction")
	add(350, 120)
	check("a new snapshot after compaction")
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
