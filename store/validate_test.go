package store_test

import (
	"testing"
	"time"

	"github.com/orca-agent/orca/store"
)

// The checks of what is valid build no error for what is: a time left
// zero for the store to set is not checked (nor an error made for it and
// dropped, as each session opened did).
func TestValidateAllocatesNothingForValidInput(t *testing.T) {
	s := store.Session{ID: "s1", RuntimeID: "r1"}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Session.Validate: %v allocations", n)
	}
	if err := (store.Session{ID: "s1", RuntimeID: "r1", CreatedAt: time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)}).Validate(); err == nil {
		t.Error("a CreatedAt in the year 1000 is valid")
	}
}
