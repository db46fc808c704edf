package storetest

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orca-agent/orca/store"
)

// RunSchedules runs the conformance suite of store.Schedules. open must
// return a new, empty store each time it is called; a store that is an
// io.Closer is closed when its subtest ends. Each property is a subtest,
// as in Run.
func RunSchedules(t *testing.T, open func(t *testing.T) store.Schedules) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Schedules)
	}{
		{"AddAndList", testAddSchedules},
		{"Update", testUpdateSchedule},
		{"Refused", testSchedulesRefused},
		{"Claim", testClaimFire},
		{"End", testEndFire},
		{"Fires", testFires},
		{"Delete", testDeleteSchedule},
		{"Runtimes", testScheduleRuntimes},
		{"ConcurrentClaims", func(t *testing.T, s store.Schedules) { testConcurrentClaims(t, s, s) }},
		{"Context", testSchedulesContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			closeAtEnd(t, s)
			tc.fn(t, s)
		})
	}
}

// RunSharedSchedules is for stores that processes share (a file, a
// database): open returns two stores opened apart on one new, empty
// database, as two processes would open it. Their claims of the same
// fires, made at once, claim each fire once in all; what one records,
// the other reads. Stores that are io.Closers are closed at the end.
func RunSharedSchedules(t *testing.T, open func(t *testing.T) (a, b store.Schedules)) {
	t.Helper()
	a, b := open(t)
	closeAtEnd(t, a)
	closeAtEnd(t, b)
	testConcurrentClaims(t, a, b)
}

func closeAtEnd(t *testing.T, s store.Schedules) {
	if c, ok := s.(io.Closer); ok {
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// day is a time the tests' schedules and fires are due at, in a zone of
// its own: stores give times back in UTC, the same instants.
var day = time.Date(2026, 12, 7, 9, 0, 0, 0, time.FixedZone("CET", 3600))

// nightly is a schedule with every field set.
func nightly(runtimeID, id string) store.Schedule {
	return store.Schedule{
		RuntimeID: runtimeID, ID: id,
		Spec: "0 2 * * *", TimeZone: "Europe/Paris",
		Prompt:    "Run the nightly checks \x00\xff ☃", // bytes a person may type
		SessionID: "s-" + id,
		BudgetUSD: 0.5, CapUSD: 10, Spent: 0.25,
		Overlap: store.OverlapAllow, CatchUp: 90 * time.Minute,
		Expires: day.AddDate(1, 0, 0), Paused: true,
		CreatedAt: day,
	}
}

// hourly is a schedule with only what it needs.
func hourly(runtimeID, id string) store.Schedule {
	return store.Schedule{RuntimeID: runtimeID, ID: id, Spec: "@hourly", Prompt: "check the queue"}
}

func addSchedule(t *testing.T, s store.Schedules, sc store.Schedule) {
	t.Helper()
	if err := s.AddSchedule(ctx, sc); err != nil {
		t.Fatalf("AddSchedule(%s/%s): %v", sc.RuntimeID, sc.ID, err)
	}
}

func getSchedule(t *testing.T, s store.Schedules, runtimeID, id string) store.Schedule {
	t.Helper()
	got, err := s.Schedule(ctx, runtimeID, id)
	if err != nil {
		t.Fatalf("Schedule(%s, %s): %v", runtimeID, id, err)
	}
	return got
}

// wantSchedule compares every field, times as instants, and wants the
// times in UTC.
func wantSchedule(t *testing.T, what string, got, want store.Schedule) {
	t.Helper()
	wantUTC(t, what+": CreatedAt", got.CreatedAt)
	if !got.Expires.IsZero() {
		wantUTC(t, what+": Expires", got.Expires)
	}
	g, w := got, want
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.Expires.Equal(w.Expires) {
		t.Errorf("%s: CreatedAt %v, Expires %v; want %v, %v", what, g.CreatedAt, g.Expires, w.CreatedAt, w.Expires)
	}
	g.CreatedAt, g.Expires, w.CreatedAt, w.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g != w {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
}

func scheduleIDs(scs []store.Schedule) []string {
	ids := make([]string, len(scs))
	for i, sc := range scs {
		ids[i] = sc.ID
	}
	return ids
}

func wantScheduleIDs(t *testing.T, s store.Schedules, runtimeID string, want ...string) {
	t.Helper()
	got, err := s.Schedules(ctx, runtimeID)
	if err != nil {
		t.Fatalf("Schedules(%s): %v", runtimeID, err)
	}
	if ids := scheduleIDs(got); !slices.Equal(ids, want) {
		t.Errorf("Schedules(%s) = %q, want %q", runtimeID, ids, want)
	}
}

func claim(t *testing.T, s store.Schedules, f store.Fire) bool {
	t.Helper()
	ok, err := s.ClaimFire(ctx, f)
	if err != nil {
		t.Fatalf("ClaimFire(%s at %v): %v", f.ScheduleID, f.At, err)
	}
	return ok
}

func fires(t *testing.T, s store.Schedules, runtimeID, id string, limit int) []store.Fire {
	t.Helper()
	got, err := s.Fires(ctx, runtimeID, id, limit)
	if err != nil {
		t.Fatalf("Fires(%s, %s, %d): %v", runtimeID, id, limit, err)
	}
	for _, f := range got {
		wantUTC(t, "a fire's At", f.At)
		wantUTC(t, "a fire's ClaimedAt", f.ClaimedAt)
		if !f.EndedAt.IsZero() {
			wantUTC(t, "a fire's EndedAt", f.EndedAt)
		}
	}
	return got
}

// ats is the times of fs, in Unix seconds.
func ats(fs []store.Fire) []int64 {
	out := make([]int64, len(fs))
	for i, f := range fs {
		out[i] = f.At.Unix()
	}
	return out
}

func spent(t *testing.T, s store.Schedules, runtimeID, id string) float64 {
	t.Helper()
	return getSchedule(t, s, runtimeID, id).Spent
}

// Schedules come back as added, every field; a CreatedAt left zero is
// now; a runtime's are listed oldest first, ties by ID; an ID the
// runtime has already is refused and changes nothing.
func testAddSchedules(t *testing.T, s store.Schedules) {
	wantScheduleIDs(t, s, "r1")
	full := nightly("r1", "nightly")
	addSchedule(t, s, full)
	wantSchedule(t, "a schedule with every field", getSchedule(t, s, "r1", "nightly"), full)

	before := time.Now()
	addSchedule(t, s, hourly("r1", "hourly"))
	got := getSchedule(t, s, "r1", "hourly")
	if got.CreatedAt.Before(before.Add(-time.Second)) || got.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt left zero became %v, not now (%v)", got.CreatedAt, before)
	}
	want := hourly("r1", "hourly")
	want.CreatedAt = got.CreatedAt
	wantSchedule(t, "a schedule with only what it needs", got, want)

	// Same CreatedAt as nightly: by ID.
	early := hourly("r1", "b-early")
	early.CreatedAt = day
	addSchedule(t, s, early)
	earliest := hourly("r1", "z-earliest")
	earliest.CreatedAt = day.Add(-time.Hour)
	addSchedule(t, s, earliest)
	wantScheduleIDs(t, s, "r1", "z-earliest", "b-early", "nightly", "hourly")

	again := hourly("r1", "nightly")
	wantErr(t, "AddSchedule of an ID the runtime has", s.AddSchedule(ctx, again), store.ErrInvalid, "nightly")
	wantSchedule(t, "after adding its ID again", getSchedule(t, s, "r1", "nightly"), full)
	wantScheduleIDs(t, s, "r1", "z-earliest", "b-early", "nightly", "hourly")
}

// UpdateSchedule replaces what the schedule says, but not its Spent nor
// its CreatedAt; an unknown schedule, or a schedule that breaks the
// contract, is refused and changes nothing.
func testUpdateSchedule(t *testing.T, s store.Schedules) {
	old := nightly("r1", "n")
	addSchedule(t, s, old)
	if !claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "n", At: day, Status: store.FireRunning}) {
		t.Fatal("the first claim lost")
	}
	if err := s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "n", At: day, Status: store.FireDone, Spent: 1.5}); err != nil {
		t.Fatal(err)
	}
	upd := store.Schedule{
		RuntimeID: "r1", ID: "n",
		Spec: "@every 10m", Prompt: "something else",
		BudgetUSD: 2, Overlap: store.OverlapSkip,
		Spent: 99, CreatedAt: day.AddDate(0, 0, 3), // not the caller's to change
	}
	if err := s.UpdateSchedule(ctx, upd); err != nil {
		t.Fatalf("UpdateSchedule: %v", err)
	}
	want := upd
	want.Spent, want.CreatedAt = old.Spent+1.5, old.CreatedAt
	wantSchedule(t, "after UpdateSchedule", getSchedule(t, s, "r1", "n"), want)
	if got := fires(t, s, "r1", "n", 0); len(got) != 1 || got[0].Status != store.FireDone {
		t.Errorf("the fires after UpdateSchedule: %+v", got)
	}

	wantErr(t, "UpdateSchedule of an unknown schedule", s.UpdateSchedule(ctx, hourly("r1", "nope")), store.ErrNotFound, "nope")
	wantScheduleIDs(t, s, "r1", "n")
	bad := upd
	bad.Prompt = ""
	wantErr(t, "UpdateSchedule with an empty Prompt", s.UpdateSchedule(ctx, bad), store.ErrInvalid, "Prompt")
	bad = upd
	bad.CapUSD = -1
	wantErr(t, "UpdateSchedule with a negative cap", s.UpdateSchedule(ctx, bad), store.ErrInvalid, "negative")
	wantSchedule(t, "after refused updates", getSchedule(t, s, "r1", "n"), want)
}

// What breaks the contract is ErrInvalid, naming what, and stores
// nothing.
func testSchedulesRefused(t *testing.T, s store.Schedules) {
	ok := hourly("r1", "ok")
	for _, c := range []struct {
		mutate  func(*store.Schedule)
		mention string
	}{
		{func(sc *store.Schedule) { sc.RuntimeID = "" }, "RuntimeID"},
		{func(sc *store.Schedule) { sc.ID = "" }, "ID"},
		{func(sc *store.Schedule) { sc.Spec = "" }, "Spec"},
		{func(sc *store.Schedule) { sc.Prompt = "" }, "Prompt"},
		{func(sc *store.Schedule) { sc.Overlap = "queue" }, "queue"},
		{func(sc *store.Schedule) { sc.BudgetUSD = -0.01 }, "negative"},
		{func(sc *store.Schedule) { sc.CapUSD = -1 }, "negative"},
		{func(sc *store.Schedule) { sc.Spent = -1 }, "negative"},
		{func(sc *store.Schedule) { sc.Spent = math.NaN() }, "finite"},
		{func(sc *store.Schedule) { sc.CapUSD = math.Inf(1) }, "finite"},
		{func(sc *store.Schedule) { sc.CatchUp = -time.Second }, "catch-up"},
		{func(sc *store.Schedule) { sc.Expires = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }, "Expires"},
		{func(sc *store.Schedule) { sc.CreatedAt = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC) }, "CreatedAt"},
	} {
		sc := ok
		c.mutate(&sc)
		wantErr(t, fmt.Sprintf("AddSchedule(%+v)", sc), s.AddSchedule(ctx, sc), store.ErrInvalid, c.mention)
		if _, err := s.Schedule(ctx, sc.RuntimeID, sc.ID); err == nil {
			t.Errorf("refused schedule %+v was stored", sc)
		}
	}
	wantScheduleIDs(t, s, "r1")

	addSchedule(t, s, ok)
	fire := store.Fire{RuntimeID: "r1", ScheduleID: "ok", At: day, Status: store.FireRunning, Owner: "p1"}
	for _, c := range []struct {
		mutate  func(*store.Fire)
		mention string
	}{
		{func(f *store.Fire) { f.RuntimeID = "" }, "RuntimeID"},
		{func(f *store.Fire) { f.ScheduleID = "" }, "ScheduleID"},
		{func(f *store.Fire) { f.Status = "" }, "status"},
		{func(f *store.Fire) { f.Status = store.FireDone }, "status"},
		{func(f *store.Fire) { f.Spent = -1 }, "negative"},
		{func(f *store.Fire) { f.Spent = math.NaN() }, "finite"},
		{func(f *store.Fire) { f.At = time.Time{} }, "At"},
		{func(f *store.Fire) { f.ClaimedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }, "ClaimedAt"},
	} {
		f := fire
		c.mutate(&f)
		claimed, err := s.ClaimFire(ctx, f)
		wantErr(t, fmt.Sprintf("ClaimFire(%+v)", f), err, store.ErrInvalid, c.mention)
		if claimed {
			t.Errorf("ClaimFire(%+v) refused, and claimed", f)
		}
	}
	if got := fires(t, s, "r1", "ok", 0); len(got) != 0 {
		t.Errorf("refused claims recorded %+v", got)
	}

	if !claim(t, s, fire) {
		t.Fatal("a valid claim lost")
	}
	end := store.Fire{RuntimeID: "r1", ScheduleID: "ok", At: day, Status: store.FireDone, Spent: 0.5}
	for _, c := range []struct {
		mutate  func(*store.Fire)
		mention string
	}{
		{func(f *store.Fire) { f.Status = store.FireRunning }, "status"},
		{func(f *store.Fire) { f.Status = store.FireSkipped }, "status"},
		{func(f *store.Fire) { f.Spent = -0.5 }, "negative"},
		{func(f *store.Fire) { f.Spent = math.Inf(1) }, "finite"},
		{func(f *store.Fire) { f.ScheduleID = "" }, "ScheduleID"},
		{func(f *store.Fire) { f.EndedAt = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }, "EndedAt"},
	} {
		f := end
		c.mutate(&f)
		wantErr(t, fmt.Sprintf("EndFire(%+v)", f), s.EndFire(ctx, f), store.ErrInvalid, c.mention)
	}
	if got := fires(t, s, "r1", "ok", 0); len(got) != 1 || got[0].Status != store.FireRunning || got[0].Spent != 0 {
		t.Errorf("refused ends changed the fire: %+v", got)
	}
	if got := spent(t, s, "r1", "ok"); got != 0 {
		t.Errorf("refused ends added %v to the schedule's Spent", got)
	}
	_, err := s.Fires(ctx, "r1", "ok", -1)
	wantErr(t, "Fires with a negative limit", err, store.ErrInvalid, "-1")
}

// A fire is claimed once: the first claim of a time wins and is kept as
// claimed, the same time again (in any zone) loses and changes nothing;
// a schedule that is not there has no fires to claim.
func testClaimFire(t *testing.T, s store.Schedules) {
	addSchedule(t, s, hourly("r1", "h"))
	first := store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day, Status: store.FireRunning, Owner: "proc-1", SessionID: "s1"}
	before := time.Now()
	if !claim(t, s, first) {
		t.Fatal("the first claim of a time lost")
	}
	second := first
	second.Owner, second.SessionID = "proc-2", "s2"
	if claim(t, s, second) {
		t.Error("a second claim of the same time won")
	}
	second.At = day.UTC() // the same instant
	if claim(t, s, second) {
		t.Error("a claim of the same time, in UTC, won")
	}
	got := fires(t, s, "r1", "h", 0)
	if len(got) != 1 {
		t.Fatalf("%d fires after claiming one time thrice: %+v", len(got), got)
	}
	f := got[0]
	if f.RuntimeID != "r1" || f.ScheduleID != "h" || !f.At.Equal(day) || f.Status != store.FireRunning || f.Owner != "proc-1" || f.SessionID != "s1" || f.Error != "" || f.Spent != 0 || !f.EndedAt.IsZero() {
		t.Errorf("the claimed fire is %+v, want the first claim's, running", f)
	}
	if f.ClaimedAt.Before(before.Add(-time.Second)) || f.ClaimedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("ClaimedAt left zero became %v, not now", f.ClaimedAt)
	}

	// Skipped and missed fires end as they are claimed, with the reason.
	skipped := store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day.Add(time.Hour), Status: store.FireSkipped, Owner: "proc-2", Error: "the previous fire still runs", ClaimedAt: day.Add(time.Hour + time.Second)}
	missed := store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day.Add(2 * time.Hour), Status: store.FireMissed, Owner: "proc-2", Error: "found due 3h late \xff"}
	if !claim(t, s, skipped) || !claim(t, s, missed) {
		t.Fatal("a claim of a new time lost")
	}
	got = fires(t, s, "r1", "h", 0)
	if len(got) != 3 {
		t.Fatalf("%d fires, want 3: %+v", len(got), got)
	}
	m, sk := got[0], got[1]
	if m.Status != store.FireMissed || m.Error != missed.Error || m.EndedAt.IsZero() || !m.EndedAt.Equal(m.ClaimedAt) {
		t.Errorf("the missed fire is %+v", m)
	}
	if sk.Status != store.FireSkipped || sk.Error != skipped.Error || !sk.ClaimedAt.Equal(skipped.ClaimedAt) || !sk.EndedAt.Equal(skipped.ClaimedAt) {
		t.Errorf("the skipped fire is %+v", sk)
	}

	for _, f := range []store.Fire{
		{RuntimeID: "r1", ScheduleID: "nope", At: day, Status: store.FireRunning},
		{RuntimeID: "r2", ScheduleID: "h", At: day.Add(5 * time.Hour), Status: store.FireRunning},
	} {
		ok, err := s.ClaimFire(ctx, f)
		wantErr(t, fmt.Sprintf("ClaimFire of %s/%s, which is not there", f.RuntimeID, f.ScheduleID), err, store.ErrNotFound, f.ScheduleID)
		if ok {
			t.Errorf("ClaimFire of %s/%s, which is not there, claimed", f.RuntimeID, f.ScheduleID)
		}
	}
	if got := fires(t, s, "r1", "h", 0); len(got) != 3 {
		t.Errorf("claims of schedules not there recorded fires: %+v", got)
	}
}

// EndFire records how a running fire ended and adds what it spent to
// the schedule's Spent, once: a fire ended already, one never claimed,
// and one recorded skipped are not there to end.
func testEndFire(t *testing.T, s store.Schedules) {
	sc := hourly("r1", "h")
	sc.Spent = 1
	addSchedule(t, s, sc)
	at := day
	claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: at, Status: store.FireRunning, Owner: "proc-1", SessionID: "s1"})
	before := time.Now()
	if err := s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: at.UTC(), Status: store.FireDone, Spent: 0.25, Owner: "someone else"}); err != nil {
		t.Fatalf("EndFire: %v", err)
	}
	if got := spent(t, s, "r1", "h"); got != 1.25 {
		t.Errorf("the schedule's Spent after a fire spent 0.25: %v, want 1.25", got)
	}
	f := fires(t, s, "r1", "h", 0)[0]
	if f.Status != store.FireDone || f.Spent != 0.25 || f.SessionID != "s1" || f.Owner != "proc-1" || f.EndedAt.Before(before.Add(-time.Second)) || f.EndedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("the ended fire is %+v: want done, 0.25 spent, s1 (the claim's session), proc-1's, ended now", f)
	}

	err := s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: at, Status: store.FireFailed, Spent: 0.25})
	wantErr(t, "EndFire of a fire ended already", err, store.ErrNotFound, "h")
	if got := spent(t, s, "r1", "h"); got != 1.25 {
		t.Errorf("ending a fire twice added to Spent: %v, want 1.25", got)
	}
	if f := fires(t, s, "r1", "h", 0)[0]; f.Status != store.FireDone || f.Spent != 0.25 {
		t.Errorf("ending a fire twice changed it: %+v", f)
	}

	// A failed fire, its session and end given; a second running fire.
	at2 := day.Add(time.Hour)
	claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: at2, Status: store.FireRunning, Owner: "proc-2"})
	ended := day.Add(time.Hour + 3*time.Minute)
	msg := "the model refused \x00\xff"
	if err := s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: at2, Status: store.FireFailed, SessionID: "s9", Error: msg, Spent: 0.5, EndedAt: ended}); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, "r1", "h"); got != 1.75 {
		t.Errorf("Spent after two fires: %v, want 1.75", got)
	}
	f = fires(t, s, "r1", "h", 1)[0]
	if f.Status != store.FireFailed || f.SessionID != "s9" || f.Error != msg || f.Spent != 0.5 || !f.EndedAt.Equal(ended) || f.Owner != "proc-2" {
		t.Errorf("the failed fire is %+v", f)
	}

	// Never claimed; recorded skipped; of another runtime; of a schedule
	// not there.
	claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day.Add(2 * time.Hour), Status: store.FireSkipped})
	for _, f := range []store.Fire{
		{RuntimeID: "r1", ScheduleID: "h", At: day.Add(-time.Hour), Status: store.FireDone, Spent: 1},
		{RuntimeID: "r1", ScheduleID: "h", At: day.Add(2 * time.Hour), Status: store.FireDone, Spent: 1},
		{RuntimeID: "r2", ScheduleID: "h", At: at2, Status: store.FireDone, Spent: 1},
		{RuntimeID: "r1", ScheduleID: "nope", At: at2, Status: store.FireDone, Spent: 1},
	} {
		wantErr(t, fmt.Sprintf("EndFire(%s/%s at %v)", f.RuntimeID, f.ScheduleID, f.At), s.EndFire(ctx, f), store.ErrNotFound)
	}
	if got := spent(t, s, "r1", "h"); got != 1.75 {
		t.Errorf("Spent after ends of fires not running: %v, want 1.75", got)
	}
	if f := fires(t, s, "r1", "h", 1)[0]; f.Status != store.FireSkipped {
		t.Errorf("the skipped fire became %+v", f)
	}
}

// Fires lists a schedule's fires newest first, as many as asked.
func testFires(t *testing.T, s store.Schedules) {
	addSchedule(t, s, hourly("r1", "h"))
	addSchedule(t, s, hourly("r1", "other"))
	if got := fires(t, s, "r1", "h", 0); len(got) != 0 {
		t.Errorf("a new schedule's fires: %+v", got)
	}
	// Claimed out of order.
	for _, h := range []int{3, 1, 4, 0, 2} {
		claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day.Add(time.Duration(h) * time.Hour), Status: store.FireRunning})
	}
	claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "other", At: day.Add(10 * time.Hour), Status: store.FireRunning})
	h := func(n int) int64 { return day.Add(time.Duration(n) * time.Hour).Unix() }
	all := []int64{h(4), h(3), h(2), h(1), h(0)}
	for _, c := range []struct {
		limit int
		want  []int64
	}{
		{0, all}, {2, all[:2]}, {1, all[:1]}, {5, all}, {50, all},
	} {
		if got := ats(fires(t, s, "r1", "h", c.limit)); !slices.Equal(got, c.want) {
			t.Errorf("Fires(limit %d) at %v, want %v", c.limit, got, c.want)
		}
	}
	_, err := s.Fires(ctx, "r1", "nope", 0)
	wantErr(t, "Fires of a schedule not there", err, store.ErrNotFound, "nope")
}

// Deleting a schedule deletes its fires: the ID added again starts with
// none, and its old times can be claimed again. Another runtime's
// schedule of the same ID stays, with its fires.
func testDeleteSchedule(t *testing.T, s store.Schedules) {
	addSchedule(t, s, hourly("r1", "h"))
	addSchedule(t, s, hourly("r2", "h"))
	addSchedule(t, s, hourly("r1", "keep"))
	for _, rt := range []string{"r1", "r2"} {
		claim(t, s, store.Fire{RuntimeID: rt, ScheduleID: "h", At: day, Status: store.FireRunning})
		claim(t, s, store.Fire{RuntimeID: rt, ScheduleID: "h", At: day.Add(time.Hour), Status: store.FireMissed})
	}
	if err := s.DeleteSchedule(ctx, "r1", "h"); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	_, err := s.Schedule(ctx, "r1", "h")
	wantErr(t, "Schedule after DeleteSchedule", err, store.ErrNotFound, "h")
	_, err = s.Fires(ctx, "r1", "h", 0)
	wantErr(t, "Fires after DeleteSchedule", err, store.ErrNotFound, "h")
	_, err = s.ClaimFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day.Add(2 * time.Hour), Status: store.FireRunning})
	wantErr(t, "ClaimFire after DeleteSchedule", err, store.ErrNotFound, "h")
	wantErr(t, "EndFire after DeleteSchedule", s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day, Status: store.FireDone}), store.ErrNotFound)
	wantErr(t, "DeleteSchedule again", s.DeleteSchedule(ctx, "r1", "h"), store.ErrNotFound, "h")
	wantScheduleIDs(t, s, "r1", "keep")

	addSchedule(t, s, hourly("r1", "h"))
	if got := fires(t, s, "r1", "h", 0); len(got) != 0 {
		t.Errorf("a deleted schedule's fires are back with its ID: %+v", got)
	}
	if !claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day, Status: store.FireRunning}) {
		t.Error("a time of a deleted schedule's fire cannot be claimed again")
	}
	if got := fires(t, s, "r2", "h", 0); len(got) != 2 {
		t.Errorf("r2's schedule of the same ID lost its fires: %+v", got)
	}
}

// A runtime sees its own schedules only, and reaches no other's: the
// same ID in two runtimes is two schedules.
func testScheduleRuntimes(t *testing.T, s store.Schedules) {
	a, b := nightly("r1", "same"), hourly("r2", "same")
	b.CreatedAt = day
	addSchedule(t, s, a)
	addSchedule(t, s, b)
	addSchedule(t, s, hourly("r2", "only-r2"))
	wantSchedule(t, "r1's", getSchedule(t, s, "r1", "same"), a)
	wantSchedule(t, "r2's", getSchedule(t, s, "r2", "same"), b)
	wantScheduleIDs(t, s, "r1", "same")
	wantScheduleIDs(t, s, "r3")
	for _, op := range []struct {
		name string
		err  error
	}{
		{"Schedule", func() error { _, err := s.Schedule(ctx, "r1", "only-r2"); return err }()},
		{"UpdateSchedule", s.UpdateSchedule(ctx, hourly("r1", "only-r2"))},
		{"Fires", func() error { _, err := s.Fires(ctx, "r1", "only-r2", 0); return err }()},
		{"ClaimFire", func() error {
			_, err := s.ClaimFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "only-r2", At: day, Status: store.FireRunning})
			return err
		}()},
		{"DeleteSchedule", s.DeleteSchedule(ctx, "r1", "only-r2")},
	} {
		wantErr(t, op.name+" of another runtime's schedule", op.err, store.ErrNotFound, "only-r2")
	}
	wantSchedule(t, "r2's, after r1's calls", getSchedule(t, s, "r2", "only-r2"), func() store.Schedule {
		sc := hourly("r2", "only-r2")
		sc.CreatedAt = getSchedule(t, s, "r2", "only-r2").CreatedAt
		return sc
	}())
	if got := fires(t, s, "r2", "only-r2", 0); len(got) != 0 {
		t.Errorf("r1's claim reached r2's schedule: %+v", got)
	}
	// A fire of r1's does not count for r2's schedule of the same ID.
	claim(t, s, store.Fire{RuntimeID: "r1", ScheduleID: "same", At: day, Status: store.FireRunning})
	if !claim(t, s, store.Fire{RuntimeID: "r2", ScheduleID: "same", At: day, Status: store.FireRunning}) {
		t.Error("r2's schedule lost the claim of a time r1's schedule of the same ID claimed")
	}
}

// Claims of the same fires at once, from many goroutines on a and b
// (one store twice, or two stores on one database): each fire is claimed
// once in all, and once ended through one store, the other sees it
// ended and its spending added.
func testConcurrentClaims(t *testing.T, a, b store.Schedules) {
	const times, workers = 50, 8
	addSchedule(t, a, hourly("r1", "busy"))
	getSchedule(t, b, "r1", "busy") // the other sees it
	won := make([][]string, times)  // by time, the owners that won it
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 2 * workers {
		s, owner := a, fmt.Sprintf("a%d", w)
		if w%2 == 1 {
			s, owner = b, fmt.Sprintf("b%d", w)
		}
		wg.Go(func() {
			for i := range times {
				k := (i + w*7) % times // each worker in its own order
				ok, err := s.ClaimFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "busy", At: day.Add(time.Duration(k) * time.Minute), Status: store.FireRunning, Owner: owner})
				if err != nil {
					t.Errorf("ClaimFire by %s: %v", owner, err)
					return
				}
				if ok {
					mu.Lock()
					won[k] = append(won[k], owner)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k, owners := range won {
		if len(owners) != 1 {
			t.Errorf("fire %d was claimed %d times: by %q", k, len(owners), owners)
		}
	}
	for _, s := range []store.Schedules{a, b} {
		got := fires(t, s, "r1", "busy", 0)
		if len(got) != times {
			t.Fatalf("%d fires recorded, want %d", len(got), times)
		}
		for _, f := range got {
			k := int(f.At.Sub(day) / time.Minute)
			if len(won[k]) == 1 && f.Owner != won[k][0] {
				t.Errorf("fire %d is recorded %s's, but %s won it", k, f.Owner, won[k][0])
			}
		}
	}
	// Each fire ended once, half through each store, at once.
	for k := range times {
		s := a
		if k%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if err := s.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "busy", At: day.Add(time.Duration(k) * time.Minute), Status: store.FireDone, Spent: 0.125}); err != nil {
				t.Errorf("EndFire %d: %v", k, err)
			}
		})
	}
	wg.Wait()
	for _, s := range []store.Schedules{a, b} {
		if got := spent(t, s, "r1", "busy"); got != times*0.125 {
			t.Errorf("Spent after %d fires of 0.125: %v", times, got)
		}
	}
	err := b.EndFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: "busy", At: day, Status: store.FireDone, Spent: 0.125})
	wantErr(t, "EndFire through the other store of a fire ended", err, store.ErrNotFound)
}

// A call whose context has ended stores nothing and says so.
func testSchedulesContext(t *testing.T, s store.Schedules) {
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	wantErr(t, "AddSchedule with a canceled context", s.AddSchedule(canceled, hourly("r1", "late")), context.Canceled)
	wantScheduleIDs(t, s, "r1")
	addSchedule(t, s, hourly("r1", "h"))
	ok, err := s.ClaimFire(canceled, store.Fire{RuntimeID: "r1", ScheduleID: "h", At: day, Status: store.FireRunning})
	wantErr(t, "ClaimFire with a canceled context", err, context.Canceled)
	if ok {
		t.Error("ClaimFire with a canceled context claimed")
	}
	if got := fires(t, s, "r1", "h", 0); len(got) != 0 {
		t.Errorf("a canceled claim recorded %+v", got)
	}
	_, err = s.Schedules(canceled, "r1")
	wantErr(t, "Schedules with a canceled context", err, context.Canceled)
}

// RunDeleteScheduleDeletesFires checks, in a store of its own (empty),
// that deleting a schedule deletes its fires' rows, not only what the
// contract shows of them: fireRows counts the rows the store keeps of a
// schedule's fires (its own query, under the contract).
func RunDeleteScheduleDeletesFires(t *testing.T, s store.Schedules, fireRows func(scheduleID string) (int, error)) {
	t.Helper()
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		if err := s.AddSchedule(ctx, store.Schedule{RuntimeID: "r1", ID: id, Spec: "@hourly", Prompt: "p"}); err != nil {
			t.Fatal(err)
		}
		for h := range 3 {
			if _, err := s.ClaimFire(ctx, store.Fire{RuntimeID: "r1", ScheduleID: id, At: time.Unix(int64(h)*3600, 0), Status: store.FireRunning}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.DeleteSchedule(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	a, err := fireRows("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fireRows("b")
	if err != nil {
		t.Fatal(err)
	}
	if a != 0 || b != 3 {
		t.Errorf("after deleting schedule a: %d of its fires' rows, %d of b's; want 0 and 3", a, b)
	}
}
