package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/orca-agent/orca/store"
)

// Defaults of the Scheduler and of a schedule's zero fields.
const (
	// DefaultCatchUp is how late a fire may still run when its schedule
	// says nothing (store.Schedule.CatchUp zero).
	DefaultCatchUp = 15 * time.Minute
	// DefaultPoll is how often a Scheduler looks at its store for
	// schedules another process added or changed.
	DefaultPoll = 30 * time.Second
	// StaleAfter is how long a fire recorded running counts as running:
	// a fire claimed longer ago is taken for one whose server stopped
	// (it is ended failed, saying so), and no longer holds back the next
	// fire of a schedule that does not overlap.
	StaleAfter = 2 * time.Hour
	// maxMissed is how many missed fires of one schedule a tick records
	// at most (the most recent ones).
	maxMissed = 100
	// recent is how many of a schedule's newest fires a tick reads.
	recent = 50
)

// Outcome is what a fire did.
type Outcome struct {
	// SessionID is the session the fire ran in.
	SessionID string
	// Spent is what it spent, in USD.
	Spent float64
	// Note says how a fire that did not fail ended, if not by answering
	// (a call parked for approval); it is recorded as the fire's Error.
	Note string
}

// FireBudget is what one fire of sc may spend, in USD: its budget per
// fire, or what is left of its cap if that is less (0: no cap).
func FireBudget(sc store.Schedule) float64 {
	limit := sc.BudgetUSD
	if sc.CapUSD > 0 {
		left := max(sc.CapUSD-sc.Spent, 0.000001)
		if limit == 0 || left < limit {
			limit = left
		}
	}
	return limit
}

// Firer runs schedule s's fire due at at: it asks s.Prompt (in a session
// of its own, or in s.SessionID's), and returns where it ran and what it
// spent. An error fails the fire (recorded, with the error).
type Firer func(ctx context.Context, s store.Schedule, at time.Time) (Outcome, error)

// Scheduler fires the due schedules of one runtime. Run it in one
// goroutine per process; several processes may share a store: each fire
// is claimed once (store.Schedules.ClaimFire), by whichever finds it due
// first.
type Scheduler struct {
	Store     store.Schedules
	RuntimeID string
	// Owner names this process in the fires it claims (host and pid).
	Owner string
	// Fire runs a claimed fire. Required.
	Fire Firer
	// Poll is how often Run looks for schedules added or changed
	// elsewhere (DefaultPoll if zero).
	Poll   time.Duration
	Logger *slog.Logger

	mu      sync.Mutex
	running map[string]int // schedule ID → fires of this process running
	wg      sync.WaitGroup
	wake    chan struct{}
}

// Wake makes Run look at the schedules now (one was added or changed).
func (s *Scheduler) Wake() {
	select {
	case s.wakeup() <- struct{}{}:
	default:
	}
}

func (s *Scheduler) wakeup() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	return s.wake
}

// Run fires the schedules as they come due until ctx ends, then waits for
// the fires it started (they see ctx end).
func (s *Scheduler) Run(ctx context.Context) {
	defer s.wg.Wait()
	poll := s.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	wake := s.wakeup()
	for {
		now := time.Now()
		next := s.Tick(ctx, now)
		wait := poll
		if !next.IsZero() && next.Sub(now) < wait {
			wait = next.Sub(now)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-wake:
			t.Stop()
		}
	}
}

// Wait waits for the fires Tick started.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Tick records each fire due by now and starts the ones this process
// claimed to run, and returns when the next schedule is due after now
// (zero if none is). Errors are logged; a schedule that fails is tried
// again at the next tick.
func (s *Scheduler) Tick(ctx context.Context, now time.Time) time.Time {
	all, err := s.Store.Schedules(ctx, s.RuntimeID)
	if err != nil {
		if ctx.Err() == nil {
			s.log().Warn("orca schedule: listing the schedules", "err", err)
		}
		return time.Time{}
	}
	var next time.Time
	for _, sc := range all {
		n, err := s.tick(ctx, sc, now)
		if err != nil && ctx.Err() == nil {
			s.log().Warn("orca schedule: a schedule's fires", "schedule", sc.ID, "err", err)
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

func (s *Scheduler) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// tick handles sc's fires due by now and returns its next due time.
func (s *Scheduler) tick(ctx context.Context, sc store.Schedule, now time.Time) (time.Time, error) {
	tt, err := Parse(sc.Spec, sc.TimeZone, sc.CreatedAt)
	if err != nil {
		return time.Time{}, err
	}
	fires, err := s.Store.Fires(ctx, s.RuntimeID, sc.ID, recent)
	if err != nil {
		return time.Time{}, err
	}
	from := sc.CreatedAt
	if len(fires) > 0 && fires[0].At.After(from) {
		from = fires[0].At
	}
	running := false
	for _, f := range fires {
		if f.Status != store.FireRunning {
			continue
		}
		if now.Sub(f.ClaimedAt) > StaleAfter {
			f.Status, f.Error, f.EndedAt = store.FireFailed, fmt.Sprintf("still running %v after it was claimed by %s: its server stopped", StaleAfter, f.Owner), now
			if err := s.Store.EndFire(ctx, f); err != nil && !errors.Is(err, store.ErrNotFound) {
				return time.Time{}, err
			}
			continue
		}
		running = true
	}
	catchUp := sc.CatchUp
	if catchUp <= 0 {
		catchUp = DefaultCatchUp
	}

	// The times due: at most maxMissed of those past the catch-up window
	// (the latest), and those within it.
	var due []time.Time
	t := tt.Next(from)
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if !sc.Expires.IsZero() && t.After(sc.Expires) {
			break
		}
		due = append(due, t)
		if now.Sub(t) > catchUp && len(due) > maxMissed {
			due = due[1:]
		}
		if n > 1_000_000 {
			return time.Time{}, fmt.Errorf("over a million fires due since %v: recorded none", from)
		}
		t = tt.Next(t)
	}
	for _, at := range due {
		f := store.Fire{RuntimeID: s.RuntimeID, ScheduleID: sc.ID, At: at, Owner: s.Owner, ClaimedAt: now, Status: store.FireRunning}
		switch {
		case now.Sub(at) > catchUp:
			f.Status, f.Error = store.FireMissed, fmt.Sprintf("found due at %s, past its catch-up window of %v", now.UTC().Format(time.RFC3339), catchUp)
		case sc.Paused:
			f.Status, f.Error = store.FireSkipped, "the schedule is paused"
		case sc.CapUSD > 0 && sc.Spent >= sc.CapUSD:
			f.Status, f.Error = store.FireSkipped, fmt.Sprintf("the schedule has spent its cap of $%.2f", sc.CapUSD)
		case sc.Overlap != store.OverlapAllow && (running || s.runs(sc.ID)):
			f.Status, f.Error = store.FireSkipped, "the schedule's previous fire still runs"
		}
		claimed, err := s.Store.ClaimFire(ctx, f)
		if err != nil {
			return time.Time{}, err
		}
		if claimed && f.Status == store.FireRunning {
			running = true
			s.start(ctx, sc, f)
		}
	}
	if t.IsZero() || (!sc.Expires.IsZero() && t.After(sc.Expires)) {
		return time.Time{}, nil
	}
	return t, nil
}

// runs reports whether a fire of schedule id that this process started
// still runs.
func (s *Scheduler) runs(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[id] > 0
}

// Start runs fire f of sc, which the caller claimed (Claim), on a
// goroutine of the Scheduler's, as Run would run one it claimed: Run's
// end waits for it, and the schedule's next fire counts it as running.
func (s *Scheduler) Start(ctx context.Context, sc store.Schedule, f store.Fire) { s.start(ctx, sc, f) }

// start runs claimed fire f of sc on a goroutine of its own.
func (s *Scheduler) start(ctx context.Context, sc store.Schedule, f store.Fire) {
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]int{}
	}
	s.running[sc.ID]++
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			s.running[sc.ID]--
			s.mu.Unlock()
		}()
		if err := Run(ctx, s.Store, sc, f, s.Fire); err != nil {
			s.log().Warn("orca schedule: a fire", "schedule", sc.ID, "at", f.At, "err", err)
		}
	}()
}

// Run runs claimed fire f of sc through fire and records how it ended.
// The error is the store's, if it could not record that; the fire's own
// failure is recorded, not returned.
func Run(ctx context.Context, st store.Schedules, sc store.Schedule, f store.Fire, fire Firer) error {
	out, err := fire(ctx, sc, f.At)
	f.Status, f.SessionID, f.Spent, f.EndedAt, f.Error = store.FireDone, out.SessionID, max(out.Spent, 0), time.Now(), out.Note
	if err != nil {
		f.Status, f.Error = store.FireFailed, err.Error()
	}
	// Recorded even when ctx has ended (the server stops): the fire ran.
	return st.EndFire(context.WithoutCancel(ctx), f)
}

// FireNow claims a fire of sc at now (Claim) and runs it through fire,
// and returns it as recorded.
func FireNow(ctx context.Context, st store.Schedules, sc store.Schedule, owner string, now time.Time, fire Firer) (store.Fire, error) {
	f, err := Claim(ctx, st, sc, owner, now)
	if err != nil {
		return store.Fire{}, err
	}
	if err := Run(ctx, st, sc, f, fire); err != nil {
		return store.Fire{}, err
	}
	fires, err := st.Fires(ctx, sc.RuntimeID, sc.ID, recent)
	if err != nil {
		return store.Fire{}, err
	}
	for _, g := range fires {
		if g.At.Equal(f.At) {
			return g, nil
		}
	}
	return store.Fire{}, fmt.Errorf("schedule %s: the fire at %s is not recorded", sc.ID, f.At.Format(time.RFC3339))
}
