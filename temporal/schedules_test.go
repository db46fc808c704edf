package temporal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orca-agent/orca/schedule"
	"github.com/orca-agent/orca/store"
	"github.com/orca-agent/orca/temporal"
)

// Scheduled runs as Temporal Schedules, through orca-temporal schedule:
// bad input named by its flag; added with its cron and time zone (or an
// interval counted from its creation, as orca serve counts it), listed,
// paused and resumed; fired now, its turn runs on the worker in a session
// of its own, and its Bash call parks — nothing runs, the fire says so;
// removed.
func TestServerSchedules(t *testing.T) {
	model := newFakeModel(t, func(step int) (string, []fakeCall) {
		if step == 0 {
			return "", []fakeCall{{"Bash", map[string]string{"command": "echo fired >> ran"}}}
		}
		return "it ran", nil
	})
	c := newCluster(t, model, temporal.Options{})
	c.start("w1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "* *", "p"}, `--cron: cron expression "* *": expected exactly 5 fields`},
		{[]string{"--cron", "@daily", "--tz", "Mars/Olympus", "p"}, `--tz: time zone "Mars/Olympus"`},
		{[]string{"--every", "10s", "p"}, `--every: interval "@every 10s": shorter than 1m0s`},
	} {
		if _, stderr, code := c.orca(append([]string{"schedule", "add"}, tc.args...)...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %s", tc.args, code, stderr)
		}
	}

	out, stderr, code := c.orca("schedule", "add", "--cron", "0 9 * * 1-5", "--tz", "Europe/Paris", "--name", "standup", "--json", "run", "it")
	var v schedule.View
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("add: exit %d\n%s%s", code, out, stderr)
	}
	if v.ID != "standup" || v.Spec != "0 9 * * 1-5" || v.TimeZone != "Europe/Paris" || v.State != "active" || v.Prompt != "run it" || v.NextAt == nil {
		t.Errorf("added %+v", v)
	}
	// Temporal's next time is the one orca computes.
	tt, _ := schedule.Parse("0 9 * * 1-5", "Europe/Paris", time.Now())
	if want := tt.Next(time.Now()); v.NextAt != nil && !v.NextAt.Equal(want) {
		t.Errorf("next at %v, orca says %v", v.NextAt, want)
	}
	if _, stderr, code := c.orca("schedule", "add", "--cron", "@daily", "--name", "standup", "again"); code != 1 || !strings.Contains(stderr, "schedule standup exists already") {
		t.Errorf("the same name again: exit %d %s", code, stderr)
	}
	out, _, _ = c.orca("schedule", "add", "--every", "90m", "--name", "every", "--json", "tick")
	json.Unmarshal([]byte(out), &v)
	et, _ := schedule.Parse("@every 1h30m0s", "", v.CreatedAt)
	if v.NextAt == nil || !v.NextAt.Equal(et.Next(time.Now())) {
		t.Errorf("an interval's next time %v, orca says %v (created %v)", v.NextAt, et.Next(time.Now()), v.CreatedAt)
	}

	if _, _, code := c.orca("schedule", "pause", "standup"); code != 0 {
		t.Errorf("pause: %d", code)
	}
	out, _, _ = c.orca("schedule", "list", "--json")
	var list struct{ Schedules []schedule.View }
	json.Unmarshal([]byte(out), &list)
	if len(list.Schedules) != 2 || list.Schedules[0].ID != "every" && list.Schedules[1].ID != "every" {
		t.Errorf("list: %s", out)
	}
	for _, s := range list.Schedules {
		if s.ID == "standup" && s.State != "paused" {
			t.Errorf("paused: %+v", s)
		}
	}
	if _, _, code := c.orca("schedule", "resume", "standup"); code != 0 {
		t.Errorf("resume: %d", code)
	}

	if out, stderr, code := c.orca("schedule", "run", "standup"); code != 0 || !strings.Contains(out, "Fired schedule standup.") {
		t.Fatalf("run: exit %d %s%s", code, out, stderr)
	}
	var fire schedule.FireView
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, _, _ = c.orca("schedule", "show", "standup", "--json")
		json.Unmarshal([]byte(out), &v)
		if len(v.Fires) == 1 && v.Fires[0].Status != store.FireRunning {
			fire = v.Fires[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fire ended: %s", out)
		}
	}
	if fire.Status != store.FireDone || !strings.HasPrefix(fire.SessionID, "session_") || !strings.Contains(fire.Note, "ended awaiting approval: its Bash call parked") {
		t.Errorf("the fire %+v", fire)
	}
	if b, _ := os.ReadFile(filepath.Join(c.ws, "ran")); len(b) != 0 {
		t.Errorf("a fired prompt's call ran: %q", b)
	}
	calls, _ := c.store().ParkedCalls(t.Context(), store.ParkFilter{SessionID: fire.SessionID, Status: store.ParkPending})
	if len(calls) != 1 || calls[0].ToolName != "Bash" {
		t.Errorf("parked in %s: %+v", fire.SessionID, calls)
	}

	for _, id := range []string{"standup", "every"} {
		if _, _, code := c.orca("schedule", "rm", id); code != 0 {
			t.Errorf("rm %s: %d", id, code)
		}
	}
	if _, stderr, code := c.orca("schedule", "show", "standup"); code != 2 || !strings.Contains(stderr, "no such schedule: standup") {
		t.Errorf("show a removed one: exit %d %s", code, stderr)
	}
}
