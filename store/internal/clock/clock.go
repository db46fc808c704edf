// Package clock is the store clock: strictly increasing UTC times, so that
// a later write always gets a later timestamp, even on a coarse system
// clock or within one clock tick.
package clock

import (
	"sync"
	"time"
)

// Clock hands out strictly increasing UTC times. The zero Clock is ready to
// use.
type Clock struct {
	mu   sync.Mutex
	last time.Time
}

// Now returns the current UTC time, or 1ns after the latest time returned
// or observed if the system clock has not moved past it.
func (c *Clock) Now() time.Time { return c.From(time.Now()) }

// From is Now for a reading of the system clock the caller took (one read
// serves the caller's own use of the time too, a lease's expiry, say).
func (c *Clock) From(t time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := t.UTC()
	if !now.After(c.last) {
		now = c.last.Add(time.Nanosecond)
	}
	c.last = now
	return now
}

// Observe makes later Now results come after t: a time that came from
// elsewhere (a CreatedAt the caller chose, the newest time in a reopened
// database).
func (c *Clock) Observe(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.last) {
		c.last = t.UTC()
	}
}
