package store

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Schedules is the role of a store that keeps scheduled runs (orca
// schedule): a prompt run on a timetable, and a record of each time it
// was due — its fires. A fire is recorded once per (schedule, time):
// ClaimFire is the one place where a process that finds a fire due
// decides to run it, so that two processes sharing the store (orca
// serve on one PostgreSQL database, or one restarted) never both run it.
// Schedules are kept per runtime, like approvals, and outlive the
// sessions their fires make.
type Schedules interface {
	// AddSchedule stores s, a new schedule (s.Validate); an ID the
	// runtime has already is ErrInvalid. CreatedAt is set to now when
	// zero.
	AddSchedule(ctx context.Context, s Schedule) error
	// Schedule returns runtimeID's schedule id; ErrNotFound if it has
	// none of that ID.
	Schedule(ctx context.Context, runtimeID, id string) (Schedule, error)
	// Schedules lists runtimeID's schedules, oldest first (by CreatedAt,
	// then ID).
	Schedules(ctx context.Context, runtimeID string) ([]Schedule, error)
	// UpdateSchedule replaces what a schedule says (all of s but
	// RuntimeID, ID, CreatedAt and Spent, which stay as stored; s.Validate
	// must hold); ErrNotFound for a schedule that is not there.
	UpdateSchedule(ctx context.Context, s Schedule) error
	// DeleteSchedule removes the schedule and its fires (the sessions
	// they made stay); ErrNotFound for one that is not there.
	DeleteSchedule(ctx context.Context, runtimeID, id string) error
	// ClaimFire records f if the schedule has no fire at f.At yet, in one
	// transaction, and reports whether it did: true means this call's
	// caller, and no one else, fires it (or records it skipped or
	// missed, as f.Status says). The schedule must exist (ErrNotFound);
	// f.Validate must hold. ClaimedAt is set to now when zero; a fire
	// claimed running has not ended (EndedAt zero), one recorded skipped
	// or missed ends as it is claimed (EndedAt its ClaimedAt when zero).
	// f.Spent, normally 0, is added to the schedule's Spent as EndFire's
	// is: a schedule's Spent is what it was added with plus what its
	// fires spent.
	ClaimFire(ctx context.Context, f Fire) (bool, error)
	// EndFire records how the running fire of f.ScheduleID at f.At
	// ended (f.ValidateEnd): its Status (FireDone or FireFailed),
	// SessionID (the one claimed stays when f's is empty), Error,
	// EndedAt (now when zero) and Spent, which it adds to the fire's and
	// the schedule's Spent in the same transaction. Owner and ClaimedAt
	// stay as claimed. A fire not claimed, recorded skipped or missed, or
	// ended already, is ErrNotFound.
	EndFire(ctx context.Context, f Fire) error
	// Fires lists the schedule's fires, newest first (by At), at most
	// limit of them (0: all; negative: ErrInvalid); ErrNotFound for a
	// schedule that is not there.
	Fires(ctx context.Context, runtimeID, id string, limit int) ([]Fire, error)
}

// Schedule is a prompt run on a timetable.
type Schedule struct {
	RuntimeID string
	// ID names the schedule in its runtime (internal/names' rules: the
	// CLI and the API make one from the user's name, or a random one).
	ID string
	// Spec is when it is due, as the schedule package parses it: a cron
	// expression of five fields or a descriptor (@hourly, @every 10m).
	Spec string
	// TimeZone is the IANA time zone the cron expression is read in;
	// "" is UTC.
	TimeZone string
	// Prompt is what each fire asks.
	Prompt string
	// SessionID, when set, is the session whose queue each fire's prompt
	// joins; empty, each fire runs in a session of its own.
	SessionID string
	// BudgetUSD caps what one fire may spend (0: no cap of the
	// schedule's own); CapUSD caps what all its fires spend together:
	// once Spent reaches it, no fire runs.
	BudgetUSD, CapUSD float64
	// Spent is what the schedule's fires have spent, in USD (EndFire
	// adds to it).
	Spent float64
	// Overlap says what a fire does while the schedule's previous fire
	// still runs: OverlapSkip (the default, "") records it skipped;
	// OverlapAllow runs it beside.
	Overlap string
	// CatchUp is how late a fire may still run: a fire found due later
	// than this after its time (the servers were down) is recorded
	// missed, not run. 0 is the schedule package's default.
	CatchUp time.Duration
	// Expires, when set, is when the schedule stops firing.
	Expires time.Time
	// Paused schedules do not fire.
	Paused    bool
	CreatedAt time.Time
}

// The overlap policies of a Schedule.
const (
	OverlapSkip  = "skip"
	OverlapAllow = "allow"
)

// Fire is one time a schedule was due, as recorded.
type Fire struct {
	RuntimeID, ScheduleID string
	// At is the time the schedule was due (not when it ran).
	At time.Time
	// Status is what became of it (the Fire* constants).
	Status string
	// Owner names the process that claimed it.
	Owner string
	// SessionID is the session the fire ran in.
	SessionID string
	// Error says why a fire failed, was skipped or missed; of one done,
	// how its turn ended if not by answering (a call parked for a
	// person).
	Error string
	// Spent is what the fire spent, in USD.
	Spent              float64
	ClaimedAt, EndedAt time.Time
}

// What became of a fire.
const (
	FireRunning = "running" // claimed, not ended
	FireDone    = "done"
	FireFailed  = "failed"
	FireSkipped = "skipped" // the previous fire still ran (OverlapSkip), the schedule was paused or over its cap
	FireMissed  = "missed"  // found due after its catch-up window
)

// Validate reports whether s can be added: RuntimeID, ID, Spec and Prompt
// are set, the overlap policy and the budgets are ones a schedule has,
// and its times are ones a store can keep. (Whether Spec and TimeZone
// parse is the schedule package's to say.)
func (s Schedule) Validate() error {
	switch {
	case s.RuntimeID == "":
		return fmt.Errorf("%w: schedule has an empty RuntimeID", ErrInvalid)
	case s.ID == "":
		return fmt.Errorf("%w: schedule has an empty ID", ErrInvalid)
	case s.Spec == "":
		return fmt.Errorf("%w: schedule %s has an empty Spec", ErrInvalid, s.ID)
	case s.Prompt == "":
		return fmt.Errorf("%w: schedule %s has an empty Prompt", ErrInvalid, s.ID)
	case s.Overlap != "" && s.Overlap != OverlapSkip && s.Overlap != OverlapAllow:
		return fmt.Errorf("%w: schedule %s: overlap %q is neither %q nor %q", ErrInvalid, s.ID, s.Overlap, OverlapSkip, OverlapAllow)
	case !money(s.BudgetUSD) || !money(s.CapUSD) || !money(s.Spent):
		return fmt.Errorf("%w: schedule %s: a budget or spending is negative or not a finite number", ErrInvalid, s.ID)
	case s.CatchUp < 0:
		return fmt.Errorf("%w: schedule %s: catch-up %v is negative", ErrInvalid, s.ID, s.CatchUp)
	}
	for what, t := range map[string]time.Time{"Expires": s.Expires, "CreatedAt": s.CreatedAt} {
		if err := checkSetTime(what, t); err != nil {
			return fmt.Errorf("%w: schedule %s: %v", ErrInvalid, s.ID, err)
		}
	}
	return nil
}

// Validate reports whether f can be claimed: it names its runtime,
// schedule and time, its status is one a claim records (FireRunning,
// FireSkipped, FireMissed), and its spending and times are ones a store
// can keep.
func (f Fire) Validate() error {
	ok := f.Status == FireRunning || f.Status == FireSkipped || f.Status == FireMissed
	return f.validate(ok, "is not one a claim records")
}

// ValidateEnd reports whether f can end a running fire (EndFire): it
// names its runtime, schedule and time, its status is FireDone or
// FireFailed, and its spending and times are ones a store can keep.
func (f Fire) ValidateEnd() error {
	return f.validate(f.Status == FireDone || f.Status == FireFailed, "does not end a fire")
}

// validate is what Validate and ValidateEnd both check; statusOK is
// their verdict on f.Status, why what is wrong with it if not.
func (f Fire) validate(statusOK bool, why string) error {
	switch {
	case f.RuntimeID == "" || f.ScheduleID == "":
		return fmt.Errorf("%w: fire has an empty RuntimeID or ScheduleID", ErrInvalid)
	case !statusOK:
		return fmt.Errorf("%w: fire of %s at %v: status %q %s", ErrInvalid, f.ScheduleID, f.At, f.Status, why)
	case !money(f.Spent):
		return fmt.Errorf("%w: fire of %s: spent %v is negative or not a finite number", ErrInvalid, f.ScheduleID, f.Spent)
	}
	if err := checkTime("At", f.At); err != nil {
		return fmt.Errorf("%w: fire of %s: %v", ErrInvalid, f.ScheduleID, err)
	}
	for what, t := range map[string]time.Time{"ClaimedAt": f.ClaimedAt, "EndedAt": f.EndedAt} {
		if err := checkSetTime(what, t); err != nil {
			return fmt.Errorf("%w: fire of %s: %v", ErrInvalid, f.ScheduleID, err)
		}
	}
	return nil
}

// money reports whether usd is an amount a schedule keeps: not negative,
// and a finite number (NaN would make every sum NaN).
func money(usd float64) bool { return usd >= 0 && !math.IsInf(usd, 1) }

// ValidateLimit reports whether limit caps a listing (0: no cap), as
// Fires takes it: it is not negative.
func ValidateLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("%w: limit %d is negative", ErrInvalid, limit)
	}
	return nil
}
