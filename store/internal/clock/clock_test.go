package clock

import (
	"testing"
	"time"
)

func TestStrictlyIncreasing(t *testing.T) {
	var c Clock
	future := time.Now().Add(time.Hour)
	c.Observe(future)
	prev := c.Now()
	if !prev.After(future) {
		t.Fatalf("Now() = %v, not after the observed %v", prev, future)
	}
	for range 1000 {
		now := c.Now()
		if !now.After(prev) {
			t.Fatalf("Now() = %v after %v", now, prev)
		}
		if now.Location() != time.UTC {
			t.Fatalf("Now() in %v, want UTC", now.Location())
		}
		prev = now
	}
}
