package store

import "testing"

// Every record is found where it was added, across the chunks that grow
// and those of chunkSize; no chunk is larger than chunkSize, and the
// chunks hold at most about twice the records (or one chunk more).
func TestRecordsAt(t *testing.T) {
	var rs records
	for n := range 1000 {
		rs.add(memRecord{rec: Record{Seq: int64(n)}})
		held := 0
		for _, c := range rs.chunks {
			if cap(c) > chunkSize {
				t.Fatalf("a chunk of %d records", cap(c))
			}
			held += cap(c)
		}
		if m := n + 1; held > max(2*m, m+chunkSize) {
			t.Fatalf("%d records held in %d slots", m, held)
		}
	}
	for i := range rs.len() {
		if got := rs.at(i).rec.Seq; got != int64(i) {
			t.Fatalf("at(%d) is record %d", i, got)
		}
	}
	if rs.len() != 1000 || len(rs.chunks) != 6+(1000-grown+chunkSize-1)/chunkSize {
		t.Errorf("%d records in %d chunks", rs.len(), len(rs.chunks))
	}
}
