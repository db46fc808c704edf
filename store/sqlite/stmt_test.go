package sqlite

import (
	"testing"

	"github.com/orca-agent/orca/store/internal/sqlstore"
)

// The observation rows' statements run prepared: a stream following a
// session reads them again and again, and parsing is most of a small
// statement's cost.
func TestObservationStatementsPrepared(t *testing.T) {
	for _, q := range append(sqlstore.ObservationQueries[:], sqlstore.ObservationInsert) {
		if _, ok := preparedIDs[q]; !ok {
			t.Errorf("not prepared: %s", q)
		}
	}
}
