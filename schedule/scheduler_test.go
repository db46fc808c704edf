package schedule_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/store/postgres"
	"github.com/orca-agent/orca/store/postgres/pgtest"
)

// firings counts the fires a Firer ran, by due time.
type firings struct {
	mu    sync.Mutex
	at    map[time.Time]int
	order []time.Time
	// hold, when set, is how long (fake time) each fire runs; holds, how
	// long the fires of a schedule run, by its ID.
	hold  time.Duration
	holds map[string]time.Duration
	// fail, when set, fails the fires.
	fail error
}

func (f *firings) fire(ctx context.Context, sc store.Schedule, at time.Time) (schedule.Outcome, error) {
	f.mu.Lock()
	if f.at == nil {
		f.at = map[time.Time]int{}
	}
	f.at[at]++
	f.order = append(f.order, at)
	f.mu.Unlock()
	hold := f.hold
	if d, ok := f.holds[sc.ID]; ok {
		hold = d
	}
	if hold > 0 {
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			return schedule.Outcome{}, ctx.Err()
		}
	}
	return schedule.Outcome{SessionID: "session-" + at.Format("1504"), Spent: 0.25}, f.fail
}

func (f *firings) times() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.order)
}

// run runs a Scheduler of st until stop is called, which returns when it
// has stopped.
func run(t *testing.T, st store.Schedules, owner string, fire schedule.Firer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &schedule.Scheduler{Store: st, RuntimeID: "rt", Owner: owner, Fire: fire, Poll: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	return func() {
		cancel()
		<-done
	}
}

func add(t *testing.T, st store.Schedules, sc store.Schedule) store.Schedule {
	t.Helper()
	sc.RuntimeID = "rt"
	if sc.ID == "" {
		sc.ID = "s"
	}
	if sc.Prompt == "" {
		sc.Prompt = "do it"
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = time.Now()
	}
	if err := st.AddSchedule(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

func fires(t *testing.T, st store.Schedules, id string) []store.Fire {
	t.Helper()
	fs, err := st.Fires(context.Background(), "rt", id, 0)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(fs) // oldest first
	return fs
}

// statuses is each fire's status, oldest first.
func statuses(fs []store.Fire) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Status)
	}
	return strings.Join(out, " ")
}

// A one-minute schedule fires once a minute, at the minute, each fire
// recorded done with its session and what it spent, which the schedule
// adds up; the Scheduler waits for the minute, it does not poll for it.
func TestFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		add(t, st, store.Schedule{Spec: "* * * * *"})
		var f firings
		stop := run(t, st, "a", f.fire)
		time.Sleep(20*time.Minute + 30*time.Second)
		stop()
		got := f.times()
		if len(got) != 20 {
			t.Fatalf("%d fires in 20 minutes: %v", len(got), got)
		}
		for i, at := range got {
			if want := time.Now().Add(-20*time.Minute - 30*time.Second).Truncate(time.Minute).Add(time.Duration(i+1) * time.Minute); !at.Equal(want) {
				t.Errorf("fire %d at %v, want %v", i+1, at, want)
			}
		}
		fs := fires(t, st, "s")
		if statuses(fs) != strings.TrimSpace(strings.Repeat("done ", 20)) {
			t.Errorf("recorded %s", statuses(fs))
		}
		if fs[0].SessionID != "session-"+fs[0].At.Format("1504") || fs[0].Spent != 0.25 || fs[0].Owner != "a" || fs[0].EndedAt.IsZero() {
			t.Errorf("first fire %+v", fs[0])
		}
		sc, _ := st.Schedule(context.Background(), "rt", "s")
		if sc.Spent != 5 {
			t.Errorf("the schedule spent %v, want 20 × 0.25", sc.Spent)
		}
	})
}

// A fire due while the last one runs is skipped (the default) or runs
// beside it (allow); a paused schedule records its fires skipped; a
// schedule that has spent its cap skips them; an expired one fires no
// more. A fire still running when the server stops is cancelled: failed.
func TestPolicies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		start := time.Now()
		add(t, st, store.Schedule{ID: "skip", Spec: "* * * * *"})
		add(t, st, store.Schedule{ID: "allow", Spec: "* * * * *", Overlap: store.OverlapAllow})
		add(t, st, store.Schedule{ID: "paused", Spec: "* * * * *", Paused: true})
		add(t, st, store.Schedule{ID: "capped", Spec: "* * * * *", CapUSD: 0.5})
		add(t, st, store.Schedule{ID: "expiring", Spec: "* * * * *", Expires: start.Add(3*time.Minute + 30*time.Second)})
		// The fires of skip and allow run two and a half minutes.
		f := firings{holds: map[string]time.Duration{"skip": 150 * time.Second, "allow": 150 * time.Second}}
		stop := run(t, st, "a", f.fire)
		time.Sleep(6*time.Minute + 15*time.Second)
		stop()
		for id, want := range map[string]string{
			// The fire of minute 1 runs to 3:30, of minute 4 to 6:30.
			"skip":     "done skipped skipped failed skipped skipped",
			"allow":    "done done done failed failed failed",
			"paused":   "skipped skipped skipped skipped skipped skipped",
			"capped":   "done done skipped skipped skipped skipped",
			"expiring": "done done done",
		} {
			if got := statuses(fires(t, st, id)); got != want {
				t.Errorf("%s: %s, want %s", id, got, want)
			}
		}
		notes := map[string]string{"paused": "the schedule is paused", "capped": "the schedule has spent its cap of $0.50", "skip": "the schedule's previous fire still runs"}
		for id, note := range notes {
			for _, fr := range fires(t, st, id) {
				if fr.Status == store.FireSkipped && fr.Error != note {
					t.Errorf("%s: %q, want %q", id, fr.Error, note)
				}
			}
		}
		if fr := fires(t, st, "skip")[3]; fr.Error != context.Canceled.Error() {
			t.Errorf("the fire cancelled: %q", fr.Error)
		}
	})
}

// Fires found due past their catch-up window (the servers were down) are
// recorded missed, at most the latest 100, and not run; those within it
// (its bounds included: six of a one-minute schedule in five minutes)
// run.
func TestCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		add(t, st, store.Schedule{ID: "s", Spec: "* * * * *", CatchUp: 5 * time.Minute, Overlap: store.OverlapAllow, CreatedAt: time.Now().Add(-3 * time.Hour)})
		var f firings
		stop := run(t, st, "a", f.fire)
		time.Sleep(30 * time.Second)
		stop()
		fs := fires(t, st, "s")
		var missed, done int
		for _, fr := range fs {
			switch fr.Status {
			case store.FireMissed:
				missed++
				if !strings.Contains(fr.Error, "past its catch-up window of 5m0s") {
					t.Errorf("missed: %q", fr.Error)
				}
			case store.FireDone:
				done++
			}
		}
		if missed != 100 || done != 6 || len(f.times()) != 6 {
			t.Errorf("%d missed, %d done, %d run: %s", missed, done, len(f.times()), statuses(fs))
		}
	})
}

// A fire recorded running by a server that stopped (it was never ended)
// holds the schedule's next fires back until schedule.StaleAfter (two
// hours) has passed; then it is ended failed, and the next fire runs.
func TestStaleFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		sc := add(t, st, store.Schedule{Spec: "@every 1h", CatchUp: time.Hour})
		first := sc.CreatedAt.Add(time.Hour).Truncate(time.Second)
		time.Sleep(time.Hour)
		if ok, err := st.ClaimFire(context.Background(), store.Fire{RuntimeID: "rt", ScheduleID: "s", At: first, Status: store.FireRunning, Owner: "gone", ClaimedAt: time.Now()}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		var f firings
		stop := run(t, st, "a", f.fire)
		time.Sleep(3*time.Hour + time.Minute)
		stop()
		fs := fires(t, st, "s")
		if statuses(fs) != "failed skipped skipped done" || !strings.Contains(fs[0].Error, "claimed by gone: its server stopped") {
			t.Errorf("%s: %+v", statuses(fs), fs)
		}
	})
}

// FireNow fires at once, paused or not, and is refused past the cap.
func TestFireNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		sc := add(t, st, store.Schedule{Spec: "@daily", Paused: true, CapUSD: 0.25})
		f := firings{fail: errors.New("the model is down")}
		fr, err := schedule.FireNow(context.Background(), st, sc, "cli", time.Now(), f.fire)
		if err != nil || fr.Status != store.FireFailed || fr.Error != "the model is down" || fr.Owner != "cli" {
			t.Fatalf("%+v %v", fr, err)
		}
		sc, _ = st.Schedule(context.Background(), "rt", "s")
		if _, err := schedule.FireNow(context.Background(), st, sc, "cli", time.Now().Add(time.Second), f.fire); err == nil || !strings.Contains(err.Error(), "spent its cap") {
			t.Errorf("past the cap: %v", err)
		}
	})
}

// Two servers on one PostgreSQL store fire a one-minute schedule exactly
// once a minute over 20 minutes, one of them stopped after 10 and
// started again 3 minutes later: every minute fired, none twice, by
// whichever server claimed it first.
func TestExactlyOnceAcrossServers(t *testing.T) {
	dsn := pgtest.DSN(t, "schedule")
	synctest.Test(t, func(t *testing.T) {
		open := func() *postgres.Store {
			st, err := postgres.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		a, b := open(), open()
		defer b.Close()
		start := time.Now()
		add(t, a, store.Schedule{Spec: "* * * * *"})
		f := firings{hold: 15 * time.Second}
		stopA, stopB := run(t, a, "a", f.fire), run(t, b, "b", f.fire)
		time.Sleep(10*time.Minute + 30*time.Second)
		stopA()
		a.Close()
		time.Sleep(3 * time.Minute)
		a = open()
		defer a.Close()
		stopA = run(t, a, "a2", f.fire)
		time.Sleep(6*time.Minute + 50*time.Second)
		stopA()
		stopB()

		fs := fires(t, a, "s")
		for i, fr := range fs {
			want := start.Truncate(time.Minute).Add(time.Duration(i+1) * time.Minute)
			if !fr.At.Equal(want) || fr.Status != store.FireDone || f.at[fr.At] != 1 {
				t.Errorf("fire %d: %s at %v (run %d times), want done at %v", i+1, fr.Status, fr.At, f.at[fr.At], want)
			}
			// While a was down (minutes 11 to 13), b fired alone; before,
			// a or b; after, a2 or b.
			if down := i+1 >= 11 && i+1 <= 13; down && fr.Owner != "b" || !down && i+1 > 13 && fr.Owner == "a" || i+1 <= 10 && fr.Owner == "a2" {
				t.Errorf("fire %d claimed by %s", i+1, fr.Owner)
			}
		}
		if len(fs) != 20 || len(f.times()) != 20 {
			t.Errorf("%d fires recorded, %d run in 20 minutes: %s", len(fs), len(f.times()), statuses(fs))
		}
	})
}
