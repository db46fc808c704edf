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
