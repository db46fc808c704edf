package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

var _ Schedules = (*Memory)(nil)

// memSchedule is a schedule and its fires, by At in Unix nanoseconds (a
// time and the same time in another zone are one fire).
type memSchedule struct {
	s     Schedule
	fires map[int64]Fire
}

// schedule returns runtimeID's schedule id, or ErrNotFound; m.mu is held.
func (m *Memory) schedule(runtimeID, id string) (*memSchedule, error) {
	if sc := m.schedules[[2]string{runtimeID, id}]; sc != nil {
		return sc, nil
	}
	return nil, ErrNotFound
}

// AddSchedule implements Schedules.
func (m *Memory) AddSchedule(ctx context.Context, s Schedule) error {
	if err := s.Validate(); err != nil {
		return scheduleErr("add", s.RuntimeID, s.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return scheduleErr("add", s.RuntimeID, s.ID, err)
	}
	key := [2]string{s.RuntimeID, s.ID}
	if m.schedules[key] != nil {
		return scheduleErr("add", s.RuntimeID, s.ID, fmt.Errorf("%w: the runtime has a schedule %s already", ErrInvalid, s.ID))
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = m.clock.Now()
	}
	s.CreatedAt, s.Expires = s.CreatedAt.UTC(), utc(s.Expires)
	if m.schedules == nil {
		m.schedules = map[[2]string]*memSchedule{}
	}
	m.schedules[key] = &memSchedule{s: s, fires: map[int64]Fire{}}
	return nil
}

// Schedule implements Schedules.
func (m *Memory) Schedule(ctx context.Context, runtimeID, id string) (Schedule, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return Schedule{}, scheduleErr("read", runtimeID, id, err)
	}
	sc, err := m.schedule(runtimeID, id)
	if err != nil {
		return Schedule{}, scheduleErr("read", runtimeID, id, err)
	}
	return sc.s, nil
}

// Schedules implements Schedules.
func (m *Memory) Schedules(ctx context.Context, runtimeID string) ([]Schedule, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, fmt.Errorf("list the schedules of runtime %q: %w", runtimeID, err)
	}
	var out []Schedule
	for k, sc := range m.schedules {
		if k[0] == runtimeID {
			out = append(out, sc.s)
		}
	}
	slices.SortFunc(out, func(a, b Schedule) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// UpdateSchedule implements Schedules.
func (m *Memory) UpdateSchedule(ctx context.Context, s Schedule) error {
	if err := s.Validate(); err != nil {
		return scheduleErr("update", s.RuntimeID, s.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return scheduleErr("update", s.RuntimeID, s.ID, err)
	}
	sc, err := m.schedule(s.RuntimeID, s.ID)
	if err != nil {
		return scheduleErr("update", s.RuntimeID, s.ID, err)
	}
	s.CreatedAt, s.Spent, s.Expires = sc.s.CreatedAt, sc.s.Spent, utc(s.Expires)
	sc.s = s
	return nil
}

// DeleteSchedule implements Schedules.
func (m *Memory) DeleteSchedule(ctx context.Context, runtimeID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return scheduleErr("delete", runtimeID, id, err)
	}
	if _, err := m.schedule(runtimeID, id); err != nil {
		return scheduleErr("delete", runtimeID, id, err)
	}
	delete(m.schedules, [2]string{runtimeID, id})
	return nil
}

// ClaimFire implements Schedules.
func (m *Memory) ClaimFire(ctx context.Context, f Fire) (bool, error) {
	if err := f.Validate(); err != nil {
		return false, fireErr("claim", f, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return false, fireErr("claim", f, err)
	}
	sc, err := m.schedule(f.RuntimeID, f.ScheduleID)
	if err != nil {
		return false, fireErr("claim", f, err)
	}
	at := f.At.UnixNano()
	if _, ok := sc.fires[at]; ok {
		return false, nil
	}
	sc.fires[at] = claimed(f, m.clock.Now)
	sc.s.Spent += f.Spent
	return true, nil
}

// EndFire implements Schedules.
func (m *Memory) EndFire(ctx context.Context, f Fire) error {
	if err := f.ValidateEnd(); err != nil {
		return fireErr("end", f, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.begin(ctx); err != nil {
		return fireErr("end", f, err)
	}
	sc, err := m.schedule(f.RuntimeID, f.ScheduleID)
	if err != nil {
		return fireErr("end", f, err)
	}
	at := f.At.UnixNano()
	old, ok := sc.fires[at]
	if !ok || old.Status != FireRunning {
		return fireErr("end", f, fmt.Errorf("%w: no running fire at that time", ErrNotFound))
	}
	old.Status, old.Error, old.Spent = f.Status, f.Error, old.Spent+f.Spent
	if f.SessionID != "" {
		old.SessionID = f.SessionID
	}
	if old.EndedAt = f.EndedAt.UTC(); f.EndedAt.IsZero() {
		old.EndedAt = m.clock.Now()
	}
	sc.fires[at] = old
	sc.s.Spent += f.Spent
	return nil
}

// Fires implements Schedules.
func (m *Memory) Fires(ctx context.Context, runtimeID, id string, limit int) ([]Fire, error) {
	if err := ValidateLimit(limit); err != nil {
		return nil, scheduleErr("list the fires of", runtimeID, id, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.begin(ctx); err != nil {
		return nil, scheduleErr("list the fires of", runtimeID, id, err)
	}
	sc, err := m.schedule(runtimeID, id)
	if err != nil {
		return nil, scheduleErr("list the fires of", runtimeID, id, err)
	}
	ats := slices.Sorted(maps.Keys(sc.fires))
	slices.Reverse(ats)
	if limit > 0 && len(ats) > limit {
		ats = ats[:limit]
	}
	out := make([]Fire, len(ats))
	for i, at := range ats {
		out[i] = sc.fires[at]
	}
	return out, nil
}

// claimed is f as ClaimFire records it: its times in UTC, ClaimedAt now
// when zero; a running fire has not ended, a skipped or missed one ends
// as it is claimed.
func claimed(f Fire, now func() time.Time) Fire {
	f.At, f.ClaimedAt, f.EndedAt = f.At.UTC(), utc(f.ClaimedAt), utc(f.EndedAt)
	if f.ClaimedAt.IsZero() {
		f.ClaimedAt = now()
	}
	switch {
	case f.Status == FireRunning:
		f.EndedAt = time.Time{}
	case f.EndedAt.IsZero():
		f.EndedAt = f.ClaimedAt
	}
	return f
}

// utc is t in UTC, and the zero time (unset) as it is.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// scheduleErr names the operation, the runtime and the schedule in err.
func scheduleErr(op, runtimeID, id string, err error) error {
	return fmt.Errorf("%s schedule %q of runtime %q: %w", op, id, runtimeID, err)
}

// fireErr names the operation and the fire in err.
func fireErr(op string, f Fire, err error) error {
	return fmt.Errorf("%s the fire of schedule %q of runtime %q at %v: %w", op, f.ScheduleID, f.RuntimeID, f.At, err)
}
