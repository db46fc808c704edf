package session

import (
	"testing"

	"github.com/orca-agent/orca/store"
)

// A read of the totals that began before a write ended does not replace
// what the write found (a call outside a turn reads them while the turn
// writes); a write's totals replace a read's, and a forgetting drops a
// read or write begun before it.
func TestKnownTotalsKeepTheNewest(t *testing.T) {
	s := &LiveSession{}
	older, newer := store.Totals{ToolCalls: 1}, store.Totals{ToolCalls: 2}
	gen := s.totalsGen()
	s.noteTotals(gen, newer) // the turn's write ends first
	s.noteRead(gen, older)   // then the read begun before it
	if !s.totals.ok || s.totals.t != newer {
		t.Errorf("after a write and an older read: %+v", s.totals)
	}

	s.forgetTotals()
	gen = s.totalsGen()
	s.noteRead(gen, older)
	if !s.totals.ok || s.totals.t != older {
		t.Errorf("a read with nothing known: %+v", s.totals)
	}
	s.noteTotals(gen, newer)
	if s.totals.t != newer {
		t.Errorf("a write after a read: %+v", s.totals)
	}

	s.forgetTotals()
	s.noteRead(gen, older)
	s.noteTotals(gen, older)
	if s.totals.ok {
		t.Errorf("a read and a write begun before a forgetting: %+v", s.totals)
	}
}
