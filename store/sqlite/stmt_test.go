package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// The observation rows' statements run prepared: a stream following a
// session reads them again and again, and parsing is most of a small
// statement's cost. So do a turn's end's, in the committer.
func TestObservationStatementsPrepared(t *testing.T) {
	finish := sqlstore.FinishQueries(dialect.ForUpdate, dialect.UpdatedAt)
	for _, q := range append(append(sqlstore.ObservationQueries[:], sqlstore.ObservationInsert), finish[:]...) {
		if _, ok := preparedIDs[q]; !ok {
			t.Errorf("not prepared: %s", q)
		}
	}
}

// A read the store runs that is not one of queries is prepared the first
// time and kept: listing the parked calls of a session (each message
// posted to orca serve) parses nothing again.
func TestReadsKeptPrepared(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "orca.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		if _, err := s.ParkedCalls(t.Context(), store.ParkFilter{SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
	}
	s.reads.mu.Lock()
	n := len(s.reads.m)
	s.reads.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d reads kept prepared after one query run three times", n)
	}
	// A query that does not parse is its own error, not kept.
	q, _ := database{s}.Read(t.Context())
	if _, err := q.Query(t.Context(), "SELEC nothing"); err == nil {
		t.Fatal("a query that does not parse ran")
	}
	if len(s.reads.m) != 1 {
		t.Fatal("a query that does not parse was kept")
	}
}
