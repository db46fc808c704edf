package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store/postgres/pgtest"
)

// Two orca serve processes on one PostgreSQL database fire a one-minute
// schedule once a minute, every minute once, one of them killed (SIGKILL)
// after the first fire and started again: real processes and real minutes,
// three of them. Fake time cannot reach another process; the scheduler's
// own test (schedule.TestExactlyOnceAcrossServers) runs twenty minutes of
// it, two schedulers in one process.
func TestServeFiresOnceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("three minutes of real time")
	}
	t.Parallel()
	dsn := pgtest.DSN(t, "orca_serve_schedules")
	ws := t.TempDir()
	o := options{configDir: t.TempDir(), getenv: func(k string) string {
		if k == app.StoreDSNEnv {
			return dsn
		}
		return ""
	}}
	if out, errOut, code := orcaWith(t, t.Context(), o, "", "schedule", "add", "--cron", "* * * * *", "--name", "tick", "-w", ws, "say", "tick"); code != 0 {
		t.Fatalf("schedule add: exit %d\n%s%s", code, out, errOut)
	}
	answers := make([]string, 12)
	for i := range answers {
		answers[i] = `{"text": "tick"}`
	}
	sc := writeScript(t, answers...)
	start := func() *exec.Cmd {
		return startOrcaEnv(t, t.TempDir(), []string{app.StoreDSNEnv + "=" + dsn, serve.TokenEnv + "=a-token-long-enough-for-orca-serve"},
			"serve", "--script", sc, "-w", ws, "--addr", "127.0.0.1:0", "--no-sandbox")
	}
	type fire struct {
		At        time.Time `json:"at"`
		Status    string    `json:"status"`
		Owner     string    `json:"owner"`
		SessionID string    `json:"session_id"`
	}
	fires := func() []fire {
		t.Helper()
		out, errOut, code := orcaWith(t, t.Context(), o, "", "schedule", "show", "tick", "-w", ws, "--json")
		var shown struct{ Fires []fire }
		if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil {
			t.Fatalf("schedule show: exit %d, %v\n%s%s", code, err, out, errOut)
		}
		return shown.Fires
	}
	// waitDone waits until n fires are done (each minute one, ~3 at most).
	waitDone := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Duration(n)*time.Minute + 30*time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			done := 0
			for _, f := range fires() {
				if f.Status == "done" {
					done++
				}
			}
			if done >= n {
				return
			}
		}
		t.Fatalf("%d fires done in time: %+v", n, fires())
	}
	a, b := start(), start()
	waitDone(1)
	a.Process.Signal(syscall.SIGKILL)
	a.Wait()
	a2 := start()
	waitDone(3)
	// Let the minute after the third go by too: no fire of a minute that
	// was fired already, whoever was up.
	time.Sleep(5 * time.Second)
	for _, c := range []*exec.Cmd{a2, b} {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}

	fs := fires()
	owners := map[string]int{}
	sessions := map[string]bool{}
	seen := map[time.Time]bool{}
	for i, f := range fs {
		owners[f.Owner]++
		if f.At.Second() != 0 || seen[f.At] || sessions[f.SessionID] || f.SessionID == "" {
			t.Errorf("fire %d: %+v (a minute or a session twice)", i, f)
		}
		seen[f.At], sessions[f.SessionID] = true, true
		if f.Status != "done" && f.Status != "running" {
			t.Errorf("fire %d: %+v", i, f)
		}
	}
	for i := 1; i < len(fs); i++ {
		if d := fs[i-1].At.Sub(fs[i].At); d != time.Minute && d != -time.Minute {
			t.Errorf("fires %d and %d are %v apart: a minute missed", i-1, i, d)
		}
	}
	if len(fs) < 3 {
		t.Errorf("fires: %+v", fs)
	}
	for owner := range owners {
		if !strings.HasPrefix(owner, "orca serve ") {
			t.Errorf("a fire claimed by %q", owner)
		}
	}
	// Each fire ran one turn, in a session of its own.
	for id := range sessions {
		out, errOut, code := orcaWith(t, t.Context(), o, "", "sessions", "show", id, "-w", ws, "--json")
		var shown struct{ Session struct{ Turns int } }
		if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Session.Turns != 1 {
			t.Errorf("the session of a fire, %s: exit %d, %v\n%s%s", id, code, err, out, errOut)
		}
	}
	// And no turn ran but the fires': no session besides theirs.
	out, errOut, code := orcaWith(t, t.Context(), o, "", "sessions", "-w", ws, "--json")
	var listed struct{ Sessions []struct{ ID string } }
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed.Sessions) != len(sessions) {
		t.Errorf("sessions: exit %d, %v, %d sessions for %d fires\n%s%s", code, err, len(listed.Sessions), len(sessions), out, errOut)
	}
	t.Logf("%d fires, claimed by %v", len(fs), owners)
}
