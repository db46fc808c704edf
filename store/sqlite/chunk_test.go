package sqlite

import (
	"context"
	"testing"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/wire"
)

// A chunk computed from a snapshot that has moved on since (another
// chunk, or a compaction, came first) is dropped, not stored on top.
func TestStaleChunkIsDropped(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for i := range snapshotEvery + 10 {
		if _, err := s.Append(ctx, "s1", note(string(rune('a'+i%26)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishTurn(ctx, "s1", "", "go"); err != nil {
		t.Fatal(err)
	}
	var frontier int64
	if err := s.stmts[stmtFrontier].QueryRowContext(ctx, "s1").Scan(&frontier); err != nil || frontier != snapshotEvery+10 {
		t.Fatalf("frontier %d, %v; want a chunk through %d", frontier, err, snapshotEvery+10)
	}
	if s.addChunk(ctx, "s1", 0, snapshotEvery+10, wire.EncodeSnapshot(nil)) {
		t.Error("a chunk computed after frontier 0 was stored over the chunk through 266")
	}
	var chunks int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM snapshot_chunks WHERE session_id = 's1'").Scan(&chunks); err != nil || chunks != 1 {
		t.Errorf("%d chunks (%v), want the one through 266", chunks, err)
	}
	if recs, err := s.Records(ctx, "s1", store.RecordFilter{}); err != nil || len(recs) != snapshotEvery+10 {
		t.Errorf("Records = %d, %v; want %d", len(recs), err, snapshotEvery+10)
	}
}

// A turn's end does not read its session's snapshot frontier again once
// the store knows it; a frontier another process moved (its compaction
// here) costs the next chunk one try, after which chunks are added again.
func TestFrontierMovedElsewhere(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	turn := func(s *Store, n int) {
		t.Helper()
		recs := make([]store.Record, n)
		for i := range recs {
			recs[i] = note(string(rune('a' + i%26)))
		}
		if _, _, err := s.AppendStep(ctx, "s1", store.Step{Records: recs, Finish: &store.TurnEnd{Prompt: "go"}}); err != nil {
			t.Fatal(err)
		}
	}
	frontier := func() int64 {
		t.Helper()
		var f int64
		if err := s.stmts[stmtFrontier].QueryRowContext(ctx, "s1").Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	turn(s, snapshotEvery)
	if f, known := s.frontiers.get("s1"); !known || f != snapshotEvery || frontier() != snapshotEvery {
		t.Fatalf("frontier known %d (%v), stored %d; want %d", f, known, frontier(), snapshotEvery)
	}
	// Another process compacts the session: the snapshot restarts there.
	other, err := Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	turn(s, 10)
	if err := other.MarkCompacted(ctx, "s1", snapshotEvery+5); err != nil {
		t.Fatal(err)
	}
	turn(s, snapshotEvery) // a try from the old frontier: it finds the new one
	if f, _ := s.frontiers.get("s1"); f != snapshotEvery+5 || frontier() != snapshotEvery+5 {
		t.Fatalf("frontier known %d, stored %d; want the compaction's %d", f, frontier(), snapshotEvery+5)
	}
	turn(s, 10)
	want := int64(2*snapshotEvery + 20)
	if f, _ := s.frontiers.get("s1"); f != want || frontier() != want {
		t.Errorf("frontier known %d, stored %d; want %d: the next chunk added", f, frontier(), want)
	}
	if recs, err := s.Records(ctx, "s1", store.RecordFilter{}); err != nil || len(recs) != int(want-snapshotEvery-5) {
		t.Errorf("Records = %d, %v; want %d", len(recs), err, want-snapshotEvery-5)
	}
}
