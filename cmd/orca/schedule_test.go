package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orca schedule as a person uses it: bad input is a usage error naming
// the flag, and leaves no store behind; a schedule added is listed,
// shown, paused, resumed; fired here its prompt's call that needs
// approval parks (nothing runs), and the fire says so; removed.
func TestScheduleCommands(t *testing.T) {
	ws := t.TempDir()
	o := options{configDir: t.TempDir()}
	sched := func(args ...string) (string, string, int) {
		t.Helper()
		return orcaWith(t, t.Context(), o, "", append([]string{"schedule"}, append(args, "-w", ws)...)...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--cron", "* *", "p"}, `--cron: cron expression "* *": expected exactly 5 fields`},
		{[]string{"add", "--cron", "0 9 * * *", "--tz", "Mars/Olympus", "p"}, `--tz: time zone "Mars/Olympus" is not an IANA time zone`},
		{[]string{"add", "--every", "10s", "p"}, `--every: interval "@every 10s": shorter than 1m0s`},
		{[]string{"add", "--cron", "@daily", "--every", "1h", "p"}, "--every: a cron expression"},
		{[]string{"add", "--cron", "@daily"}, "needs the prompt each fire asks"},
		{[]string{"add", "p"}, "--cron: no timetable"},
		{[]string{"add", "--cron", "@daily", "--expires", "someday", "p"}, `--expires "someday"`},
		{[]string{"add", "--cron", "@daily", "--overlap", "queue", "p"}, `--overlap: overlap "queue"`},
		{[]string{"add", "--cron", "@daily", "--name", "a/b", "p"}, `--name: id "a/b"`},
		{[]string{"show", "nothing"}, "has no schedule nothing"},
	} {
		_, stderr, code := sched(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s\nwant it to say %s", tc.args, code, stderr, tc.want)
		}
	}
	// A flag's mistake made no store.
	if _, err := os.Stat(filepath.Join(ws, ".orca", "orca.db")); err == nil {
		t.Error("a refused orca schedule add made the store")
	}
	if _, stderr, code := sched("add", "--cron", "@daily", "--session", "nowhere", "p"); code != exitUsage || !strings.Contains(stderr, "--session nowhere: workspace") {
		t.Errorf("--session nowhere: %d %s", code, stderr)
	}

	out, stderr, code := sched("add", "--cron", "0 9 * * 1-5", "--tz", "Europe/Paris", "--name", "standup", "--budget-usd", "0.5", "Run", "it")
	if code != 0 || !strings.Contains(out, "Added schedule standup: \"0 9 * * 1-5\" in Europe/Paris, next at ") || !strings.Contains(out, "'orca serve' fires it") {
		t.Fatalf("add: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := sched("add", "--cron", "@daily", "--name", "standup", "again"); code != exitUsage || !strings.Contains(stderr, "has a schedule standup already") {
		t.Errorf("the same name again: %d %s", code, stderr)
	}
	out, _, _ = sched("list")
	if !strings.Contains(out, "standup") || !strings.Contains(out, "active") || !strings.Contains(out, "Run it") {
		t.Errorf("list:\n%s", out)
	}
	if _, _, code := sched("pause", "standup"); code != 0 {
		t.Errorf("pause: %d", code)
	}
	out, _, _ = sched("list", "--json")
	var list struct {
		Schedules []map[string]any `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Schedules) != 1 || list.Schedules[0]["state"] != "paused" || list.Schedules[0]["budget_usd"] != 0.5 {
		t.Errorf("list --json after pause: %v\n%s", err, out)
	}
	if out, _, code := sched("resume", "standup"); code != 0 || !strings.Contains(out, "Resumed schedule standup: next at ") {
		t.Errorf("resume: %d %s", code, out)
	}

	// Fired here: a new session, whose Bash call parks.
	script := writeScript(t, `{"tool_calls": [{"name": "Bash", "input": {"command": "echo ran > ran.txt"}}]}`, `{"text": "ran it"}`)
	out, stderr, code = sched("run", "standup", "--script", script)
	if code != 0 || !strings.Contains(out, "Fired schedule standup: done in session session_") || !strings.Contains(out, "ended awaiting approval: its Bash call parked") {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); err == nil {
		t.Error("a fired prompt's call ran without approval")
	}
	out, _, _ = orcaWith(t, t.Context(), o, "", "approvals", "-w", ws, "--json")
	var parked struct {
		Parked []struct {
			ToolName string `json:"tool_name"`
			Status   string `json:"status"`
		} `json:"parked"`
	}
	if err := json.Unmarshal([]byte(out), &parked); err != nil || len(parked.Parked) != 1 || parked.Parked[0].Status != "pending" || parked.Parked[0].ToolName != "Bash" {
		t.Errorf("approvals: %v %s", err, out)
	}
	out, _, _ = sched("show", "standup", "--json")
	var shown map[string]any
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err, out)
	}
	fires, _ := shown["fires"].([]any)
	if len(fires) != 1 || fires[0].(map[string]any)["status"] != "done" || fires[0].(map[string]any)["owner"] != "orca schedule run" {
		t.Errorf("show --json: %s", out)
	}
	if out, _, _ := sched("show", "standup"); !strings.Contains(out, "Schedule standup:") || !strings.Contains(out, "at most $0.50 a fire") || !strings.Contains(out, "done") {
		t.Errorf("show:\n%s", out)
	}
	if _, stderr, code := sched("run", "standup", "--session", "x", "--script", script); code != exitUsage || !strings.Contains(stderr, "--session does not apply") {
		t.Errorf("run --session: %d %s", code, stderr)
	}

	// One that expires: shown so; the fires after it are none.
	if _, stderr, code := sched("add", "--every", "2h", "--expires", "3h", "--name", "brief", "brief me"); code != 0 {
		t.Fatalf("add --expires: %d %s", code, stderr)
	}
	out, _, _ = sched("show", "brief", "--json")
	var brief map[string]any
	json.Unmarshal([]byte(out), &brief)
	if brief["expires_at"] == nil || brief["next_at"] == nil || brief["state"] != "active" {
		t.Errorf("show --json of one that expires: %s", out)
	}
	if out, _, _ := sched("show", "brief"); !strings.Contains(out, ". Expires ") {
		t.Errorf("show of one that expires:\n%s", out)
	}
	sched("rm", "brief")

	if out, _, code := sched("rm", "standup"); code != 0 || !strings.Contains(out, "Removed schedule standup") {
		t.Errorf("rm: %d %s", code, out)
	}
	if out, _, _ := sched("list"); !strings.Contains(out, "No schedules") {
		t.Errorf("list after rm:\n%s", out)
	}
}
