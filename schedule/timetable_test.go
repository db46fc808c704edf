package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// A timetable's next times, in its zone (daylight saving time included)
// and, for an interval, counted from its anchor whoever asks.
func TestParse(t *testing.T) {
	anchor := utc("2026-12-07T10:00:00Z")
	for _, tc := range []struct {
		spec, zone, after string
		want              []string
	}{
		{"*/15 * * * *", "", "2026-12-07T10:07:00Z", []string{"2026-12-07T10:15:00Z", "2026-12-07T10:30:00Z"}},
		// Monday 7 December 2026, Paris in winter (UTC+1), then Friday to Monday.
		{"0 9 * * 1-5", "Europe/Paris", "2026-12-07T00:00:00Z", []string{"2026-12-07T08:00:00Z", "2026-12-08T08:00:00Z"}},
		{"0 9 * * 1-5", "Europe/Paris", "2026-12-11T09:00:00Z", []string{"2026-12-14T08:00:00Z"}},
		// In summer Paris is UTC+2; New York's 9:00 is 13:00 UTC.
		{"0 9 * * *", "Europe/Paris", "2027-06-01T00:00:00Z", []string{"2027-06-01T07:00:00Z"}},
		{"0 9 * * *", "America/New_York", "2027-06-01T00:00:00Z", []string{"2027-06-01T13:00:00Z"}},
		// The night the clocks go forward (28 March 2027), Paris has no 2:30.
		{"30 2 * * *", "Europe/Paris", "2027-03-27T02:00:00Z", []string{"2027-03-29T00:30:00Z"}},
		{"@daily", "", "2026-12-07T10:00:00Z", []string{"2026-12-08T00:00:00Z"}},
		{"@hourly", "Asia/Kolkata", "2026-12-07T10:00:00Z", []string{"2026-12-07T10:30:00Z"}},
		// From the anchor, not from whenever it is asked.
		{"@every 30m", "", "2026-12-07T10:00:00Z", []string{"2026-12-07T10:30:00Z", "2026-12-07T11:00:00Z"}},
		{"@every 30m", "", "2026-12-07T10:44:59Z", []string{"2026-12-07T11:00:00Z"}},
		{"@every 90m", "", "2026-12-07T09:00:00Z", []string{"2026-12-07T11:30:00Z"}},
	} {
		tt, err := schedule.Parse(tc.spec, tc.zone, anchor)
		if err != nil {
			t.Errorf("%q in %q: %v", tc.spec, tc.zone, err)
			continue
		}
		at := utc(tc.after)
		for _, w := range tc.want {
			at = tt.Next(at)
			if !at.Equal(utc(w)) || at.Location() != time.UTC {
				t.Errorf("%q in %q after %s: %v, want %s", tc.spec, tc.zone, tc.after, at, w)
			}
		}
	}
}

// A timetable that is wrong is refused, saying which input and why.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, zone, want string }{
		{"", "", "the schedule is empty"},
		{"* * *", "", `cron expression "* * *": expected exactly 5 fields`},
		{"* * * * * *", "", `cron expression "* * * * * *": expected exactly 5 fields`},
		{"61 * * * *", "", `cron expression "61 * * * *": end of range (61) above maximum (59)`},
		{"0 9 * * mon-fry", "", `cron expression "0 9 * * mon-fry"`},
		{"0 0 30 2 *", "", `cron expression "0 0 30 2 *" is never due`},
		{"CRON_TZ=Europe/Paris 0 9 * * *", "", "give its time zone on its own"},
		{"0 9 * * *", "Mars/Olympus", `time zone "Mars/Olympus" is not an IANA time zone`},
		{"0 9 * * *", "Local", `time zone "Local" is not an IANA time zone`},
		{"@every 30s", "", `interval "@every 30s": shorter than 1m0s`},
		{"@every soon", "", `interval "@every soon": time: invalid duration`},
		{"@fortnightly", "", `cron expression "@fortnightly"`},
	} {
		_, err := schedule.Parse(tc.spec, tc.zone, time.Now())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q in %q: %v, want it to say %q", tc.spec, tc.zone, err, tc.want)
		}
	}
}

// A request's wrong field is named as the API names it; a good one is a
// schedule of the runtime, skipping overlaps unless told.
func TestRequest(t *testing.T) {
	now := utc("2026-12-07T10:00:00Z")
	good := schedule.Request{Cron: "0 9 * * 1-5", TimeZone: "Europe/Paris", Prompt: " Summarise the day "}
	sc, err := good.Schedule("rt", now)
	if err != nil {
		t.Fatal(err)
	}
	if padded, err := (schedule.Request{Cron: "@daily", TimeZone: " Asia/Tokyo\n", Prompt: "p"}).Schedule("rt", now); err != nil || padded.TimeZone != "Asia/Tokyo" {
		t.Errorf("a zone with spaces around it: %q, %v", padded.TimeZone, err)
	}
	if sc.RuntimeID != "rt" || !strings.HasPrefix(sc.ID, "sched_") || sc.Prompt != "Summarise the day" || sc.Overlap != store.OverlapSkip ||
		sc.Spec != "0 9 * * 1-5" || !sc.CreatedAt.Equal(now) {
		t.Errorf("%+v", sc)
	}
	if sc, err := (schedule.Request{Every: 45 * time.Minute, Prompt: "p", ID: "tests.nightly-1"}).Schedule("rt", now); err != nil || sc.Spec != "@every 45m0s" || sc.ID != "tests.nightly-1" {
		t.Errorf("%+v %v", sc, err)
	}
	for _, tc := range []struct {
		r     schedule.Request
		field string
	}{
		{schedule.Request{Prompt: "p"}, "cron"},
		{schedule.Request{Cron: "@daily", Every: time.Hour, Prompt: "p"}, "every"},
		{schedule.Request{Cron: "* *", Prompt: "p"}, "cron"},
		{schedule.Request{Cron: "@daily", TimeZone: "Nowhere/Town", Prompt: "p"}, "time_zone"},
		{schedule.Request{Every: time.Hour, TimeZone: "Europe/Paris", Prompt: "p"}, "time_zone"},
		{schedule.Request{Every: time.Second, Prompt: "p"}, "every"},
		{schedule.Request{Cron: "@daily", Prompt: "  "}, "prompt"},
		{schedule.Request{Cron: "@daily", Prompt: "p", ID: "no spaces"}, "id"},
		{schedule.Request{Cron: "@daily", Prompt: "p", BudgetUSD: -1}, "budget_usd"},
		{schedule.Request{Cron: "@daily", Prompt: "p", CapUSD: -1}, "cap_usd"},
		{schedule.Request{Cron: "@daily", Prompt: "p", SessionID: "s", BudgetUSD: 1}, "budget_usd"},
		{schedule.Request{Cron: "@daily", Prompt: "p", Overlap: "queue"}, "overlap"},
		{schedule.Request{Cron: "@daily", Prompt: "p", CatchUp: -time.Minute}, "catch_up"},
		{schedule.Request{Cron: "@daily", Prompt: "p", Expires: now.Add(-time.Hour)}, "expires_at"},
	} {
		_, err := tc.r.Schedule("rt", now)
		var fe *schedule.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want an error of field %s", tc.r, err, tc.field)
		}
	}
}

// What a fire may spend: its budget, or what is left of the cap.
func TestFireBudget(t *testing.T) {
	for _, tc := range []struct {
		budget, cap, spent, want float64
	}{
		{0, 0, 0, 0}, {1, 0, 5, 1}, {0, 10, 4, 6}, {2, 10, 9, 1}, {2, 10, 4, 2},
	} {
		if got := schedule.FireBudget(store.Schedule{BudgetUSD: tc.budget, CapUSD: tc.cap, Spent: tc.spent}); got != tc.want {
			t.Errorf("budget %v cap %v spent %v: %v, want %v", tc.budget, tc.cap, tc.spent, got, tc.want)
		}
	}
}

// A schedule as shown: due next from its last fire, none once expired
// (its state says so), paused, or over its cap.
func TestViewOf(t *testing.T) {
	created := utc("2026-12-07T10:00:00Z")
	sc := store.Schedule{ID: "s", Spec: "@every 1h", CreatedAt: created, Expires: utc("2026-12-07T12:30:00Z"), Prompt: "p"}
	v := schedule.ViewOf(sc, nil, utc("2026-12-07T10:10:00Z"))
	if v.State != "active" || v.NextAt == nil || !v.NextAt.Equal(utc("2026-12-07T11:00:00Z")) || v.Overlap != store.OverlapSkip || v.CatchUp != "15m0s" {
		t.Errorf("active: %+v", v)
	}
	if v := schedule.ViewOf(sc, nil, utc("2026-12-07T12:10:00Z")); v.NextAt != nil || v.State != "active" {
		t.Errorf("its last fire before expiry is past: next %v, %s", v.NextAt, v.State)
	}
	if v := schedule.ViewOf(sc, nil, utc("2026-12-07T12:30:00Z")); v.State != "expired" || v.NextAt != nil {
		t.Errorf("expired: %+v", v)
	}
	sc.Paused = true
	if v := schedule.ViewOf(sc, nil, utc("2026-12-07T10:10:00Z")); v.State != "paused" {
		t.Errorf("paused: %s", v.State)
	}
	sc.Paused, sc.CapUSD, sc.Spent = false, 1, 1
	if v := schedule.ViewOf(sc, nil, utc("2026-12-07T10:10:00Z")); v.State != "spent" {
		t.Errorf("spent: %s", v.State)
	}
}
