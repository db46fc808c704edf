package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/orca-agent/orca/store"
)

// Request is what a person asks of a new schedule: the CLI's flags (orca
// schedule add) and the API's body (POST /v1/schedules) alike.
type Request struct {
	// ID names the schedule (a random one if empty).
	ID string
	// Cron is a cron expression or descriptor; Every an interval: one of
	// them.
	Cron  string
	Every time.Duration
	// TimeZone is the IANA zone Cron is read in ("" UTC).
	TimeZone string
	Prompt   string
	// SessionID, when set, is the existing session each fire's prompt
	// goes to; empty, each fire starts a session.
	SessionID         string
	BudgetUSD, CapUSD float64
	Overlap           string
	CatchUp           time.Duration
	Expires           time.Time
}

// FieldError is a Request's field that is wrong, named as the API names
// it (the CLI says its flag).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// validID is the rule of a schedule's ID: letters, digits, '_', '-' and
// '.', 1 to 64 of them.
func validID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Schedule checks r and returns the schedule it asks for, of runtimeID,
// created at now. A wrong field is a *FieldError naming it.
func (r Request) Schedule(runtimeID string, now time.Time) (store.Schedule, error) {
	sc := store.Schedule{RuntimeID: runtimeID, ID: r.ID, TimeZone: strings.TrimSpace(r.TimeZone), Prompt: strings.TrimSpace(r.Prompt), SessionID: r.SessionID,
		BudgetUSD: r.BudgetUSD, CapUSD: r.CapUSD, Overlap: r.Overlap, CatchUp: r.CatchUp, Expires: r.Expires, CreatedAt: now.UTC().Truncate(time.Millisecond)}
	if sc.ID == "" {
		b := make([]byte, 6)
		rand.Read(b)
		sc.ID = "sched_" + hex.EncodeToString(b)
	} else if !validID(sc.ID) {
		return sc, fieldErr("id", "id %q: letters, digits, '_', '-' and '.' only, 1 to 64 of them", r.ID)
	}
	switch {
	case r.Cron != "" && r.Every != 0:
		return sc, fieldErr("every", "a cron expression (%q) and an interval (%v): give one of them", r.Cron, r.Every)
	case r.Cron != "":
		sc.Spec = strings.TrimSpace(r.Cron)
		if _, err := Parse(sc.Spec, sc.TimeZone, sc.CreatedAt); err != nil {
			field := "cron"
			if strings.HasPrefix(err.Error(), "time zone") {
				field = "time_zone"
			}
			return sc, fieldErr(field, "%v", err)
		}
	case r.Every != 0:
		if sc.TimeZone != "" {
			return sc, fieldErr("time_zone", "time zone %q: an interval counts the same in every zone; a time zone goes with a cron expression", r.TimeZone)
		}
		sc.Spec = "@every " + r.Every.String()
		if _, err := Parse(sc.Spec, "", sc.CreatedAt); err != nil {
			return sc, fieldErr("every", "%v", err)
		}
	default:
		return sc, fieldErr("cron", "no timetable: give a cron expression (\"0 9 * * 1-5\", \"@daily\") or an interval (every 30m)")
	}
	switch {
	case sc.Prompt == "":
		return sc, fieldErr("prompt", "the prompt is empty: say what each fire asks")
	case bad(r.BudgetUSD):
		return sc, fieldErr("budget_usd", "budget %v: want a number of dollars, 0 or more", r.BudgetUSD)
	case bad(r.CapUSD):
		return sc, fieldErr("cap_usd", "cap %v: want a number of dollars, 0 or more", r.CapUSD)
	case r.SessionID != "" && r.BudgetUSD > 0:
		return sc, fieldErr("budget_usd", "a budget per fire goes with fires in sessions of their own: a fire into session %s runs under that session's budget (PUT /v1/sessions/%s/budget)", r.SessionID, r.SessionID)
	case r.Overlap != "" && r.Overlap != store.OverlapSkip && r.Overlap != store.OverlapAllow:
		return sc, fieldErr("overlap", "overlap %q: want %q (the default: a fire due while the last one runs is skipped) or %q", r.Overlap, store.OverlapSkip, store.OverlapAllow)
	case r.CatchUp < 0:
		return sc, fieldErr("catch_up", "catch-up %v is negative", r.CatchUp)
	case !r.Expires.IsZero() && !r.Expires.After(now):
		return sc, fieldErr("expires_at", "expiry %s is not in the future", r.Expires.Format(time.RFC3339))
	}
	if sc.Overlap == "" {
		sc.Overlap = store.OverlapSkip
	}
	return sc, sc.Validate()
}

func bad(usd float64) bool { return usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) }

// View is a schedule as orca shows it: orca schedule --json and orca
// serve's API alike.
type View struct {
	ID        string     `json:"id"`
	Spec      string     `json:"spec"`
	TimeZone  string     `json:"time_zone,omitempty"`
	Prompt    string     `json:"prompt"`
	SessionID string     `json:"session_id,omitempty"`
	BudgetUSD float64    `json:"budget_usd,omitempty"`
	CapUSD    float64    `json:"cap_usd,omitempty"`
	SpentUSD  float64    `json:"spent_usd"`
	Overlap   string     `json:"overlap"`
	CatchUp   string     `json:"catch_up"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	// State is "active", "paused", "expired" or "spent" (its cap is).
	State string `json:"state"`
	// NextAt is when it is due next (none if it will not fire again).
	NextAt *time.Time `json:"next_at,omitempty"`
	Fires  []FireView `json:"fires,omitempty"`
}

// FireView is a fire as orca shows it.
type FireView struct {
	At        time.Time  `json:"at"`
	Status    string     `json:"status"`
	SessionID string     `json:"session_id,omitempty"`
	Note      string     `json:"note,omitempty"`
	SpentUSD  float64    `json:"spent_usd"`
	Owner     string     `json:"owner"`
	ClaimedAt time.Time  `json:"claimed_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// ViewOf is sc as shown at now, with its fires (newest first) if any.
func ViewOf(sc store.Schedule, fires []store.Fire, now time.Time) View {
	v := View{ID: sc.ID, Spec: sc.Spec, TimeZone: sc.TimeZone, Prompt: sc.Prompt, SessionID: sc.SessionID, BudgetUSD: sc.BudgetUSD,
		CapUSD: sc.CapUSD, SpentUSD: sc.Spent, Overlap: sc.Overlap, CatchUp: cmpDur(sc.CatchUp, DefaultCatchUp).String(),
		CreatedAt: sc.CreatedAt.UTC(), State: "active"}
	if v.Overlap == "" {
		v.Overlap = store.OverlapSkip
	}
	if !sc.Expires.IsZero() {
		e := sc.Expires.UTC()
		v.ExpiresAt = &e
	}
	if tt, err := Parse(sc.Spec, sc.TimeZone, sc.CreatedAt); err == nil {
		from := now
		if len(fires) > 0 && fires[0].At.After(from) {
			from = fires[0].At
		}
		if n := tt.Next(from); !n.IsZero() && (sc.Expires.IsZero() || !n.After(sc.Expires)) {
			v.NextAt = &n
		}
	}
	switch {
	case !sc.Expires.IsZero() && !now.Before(sc.Expires):
		v.State, v.NextAt = "expired", nil
	case sc.CapUSD > 0 && sc.Spent >= sc.CapUSD:
		v.State = "spent"
	case sc.Paused:
		v.State = "paused"
	}
	for _, f := range fires {
		fv := FireView{At: f.At.UTC(), Status: f.Status, SessionID: f.SessionID, Note: f.Error, SpentUSD: f.Spent, Owner: f.Owner, ClaimedAt: f.ClaimedAt.UTC()}
		if !f.EndedAt.IsZero() {
			e := f.EndedAt.UTC()
			fv.EndedAt = &e
		}
		v.Fires = append(v.Fires, fv)
	}
	return v
}

func cmpDur(d, or time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return or
}

// Claim claims a fire of sc at now (to the second), outside its
// timetable, to run at once — orca schedule run, POST
// /v1/schedules/{id}/run —, paused or not; a schedule that has spent its
// cap is refused, and so is a second fire in the same second.
func Claim(ctx context.Context, st store.Schedules, sc store.Schedule, owner string, now time.Time) (store.Fire, error) {
	if sc.CapUSD > 0 && sc.Spent >= sc.CapUSD {
		return store.Fire{}, fmt.Errorf("schedule %s has spent its cap of $%.2f ($%.2f)", sc.ID, sc.CapUSD, sc.Spent)
	}
	f := store.Fire{RuntimeID: sc.RuntimeID, ScheduleID: sc.ID, At: now.UTC().Truncate(time.Second), Owner: owner, ClaimedAt: now, Status: store.FireRunning}
	claimed, err := st.ClaimFire(ctx, f)
	if err != nil {
		return store.Fire{}, err
	}
	if !claimed {
		return store.Fire{}, fmt.Errorf("schedule %s has a fire at %s already: try again in a second", sc.ID, f.At.Format(time.RFC3339))
	}
	return f, nil
}
