package serve_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
)

// fireEnded waits for schedule id's newest fire to end, and returns it.
func (f *fixture) fireEnded(id string) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v := f.json("GET", "/v1/schedules/"+id, "", 200)
		if fires, _ := v["fires"].([]any); len(fires) > 0 {
			if fr := fires[0].(map[string]any); fr["status"] != "running" {
				return fr
			}
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("schedule %s: no fire ended: %v", id, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Schedules through the API: bad input named by field; added, listed,
// paused and resumed, fired now; a fired prompt's call that needs
// approval parks (the fire ends done, saying so, under the schedule's
// budget), nothing runs; a fire into a session that waits for a decision
// fails, saying so; removed.
func TestSchedulesThroughTheAPI(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	for body, field := range map[string]string{
		`{"prompt": "p"}`:                "cron",
		`{"cron": "* *", "prompt": "p"}`: "cron",
		`{"cron": "@daily", "time_zone": "Mars/Olympus", "prompt": "p"}`:          "time_zone",
		`{"every_ms": 1000, "prompt": "p"}`:                                       "every_ms",
		`{"cron": "@daily"}`:                                                      "prompt",
		`{"cron": "@daily", "prompt": "p", "overlap": "queue"}`:                   "overlap",
		`{"cron": "@daily", "prompt": "p", "colour": "red"}`:                      "colour",
		`{"cron": "@daily", "prompt": "p", "id": "a b"}`:                          "id",
		`{"cron": "@daily", "prompt": "p", "expires_at": "2001-01-01T00:00:00Z"}`: "expires_at",
	} {
		if code, out := f.do("POST", "/v1/schedules", body); code != 400 || !strings.Contains(out, `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", body, code, out, field)
		}
	}
	if code, out := f.do("POST", "/v1/schedules", `{"cron": "@daily", "prompt": "p", "session_id": "nowhere"}`); code != 404 {
		t.Errorf("a session of nowhere: %d %s", code, out)
	}
	if v := f.json("GET", "/v1/schedules", "", 200); len(v["schedules"].([]any)) != 0 {
		t.Fatalf("bad input added %v", v)
	}

	v := f.json("POST", "/v1/schedules", `{"id": "standup", "cron": "0 9 * * 1-5", "time_zone": "Europe/Paris", "prompt": "run it", "budget_usd": 0.5}`, 201)
	if v["state"] != "active" || v["overlap"] != "skip" || v["time_zone"] != "Europe/Paris" || v["next_at"] == nil || v["catch_up"] != "15m0s" {
		t.Errorf("added %v", v)
	}
	if code, _ := f.do("POST", "/v1/schedules", `{"id": "standup", "cron": "@daily", "prompt": "p"}`); code != 409 {
		t.Errorf("the same id again: %d", code)
	}
	if v := f.json("POST", "/v1/schedules/standup/pause", "", 200); v["state"] != "paused" {
		t.Errorf("paused %v", v)
	}
	if v := f.json("GET", "/v1/schedules", "", 200)["schedules"].([]any); len(v) != 1 || v[0].(map[string]any)["state"] != "paused" {
		t.Errorf("listed %v", v)
	}
	if v := f.json("POST", "/v1/schedules/standup/resume", "", 200); v["state"] != "active" {
		t.Errorf("resumed %v", v)
	}

	// Fired now (paused or not): a new session, whose Bash call parks.
	f.model.ScriptPrefix("session_",
		script.Call("Bash", map[string]string{"command": "echo ran > ran.txt"}),
		script.Text("ran it"))
	if fr := f.json("POST", "/v1/schedules/standup/run", "", 202); fr["status"] != "running" {
		t.Errorf("fired %v", fr)
	}
	fr := f.fireEnded("standup")
	sid, _ := fr["session_id"].(string)
	if fr["status"] != "done" || !strings.HasPrefix(sid, "session_") || !strings.Contains(fr["note"].(string), "ended awaiting approval: its Bash call parked") {
		t.Fatalf("the fire %v", fr)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "ran.txt")); err == nil {
		t.Error("a fired prompt's call ran without approval")
	}
	list := f.json("GET", "/v1/approvals", "", 200)["approvals"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["session_id"] != sid || list[0].(map[string]any)["status"] != "pending" {
		t.Errorf("parked %v", list)
	}
	if b := f.json("GET", "/v1/sessions/"+sid+"/budget", "", 200); b["cost_usd"] != 0.5 {
		t.Errorf("the fire's session's budget %v", b)
	}

	// Into that session, which waits for a decision: the fire fails.
	f.json("POST", "/v1/schedules", `{"id": "nudge", "every_ms": 3600000, "prompt": "go on", "session_id": "`+sid+`"}`, 201)
	f.json("POST", "/v1/schedules/nudge/run", "", 202)
	if fr := f.fireEnded("nudge"); fr["status"] != "failed" || !strings.Contains(fr["note"].(string), "waits for a decision on its parked Bash call") || fr["session_id"] != sid {
		t.Errorf("a fire into a parked session %v", fr)
	}
	if list := f.json("GET", "/v1/approvals", "", 200)["approvals"].([]any); len(list) != 1 || list[0].(map[string]any)["status"] != "pending" {
		t.Errorf("after the second fire: %v", list)
	}

	exp := time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)
	if v := f.json("POST", "/v1/schedules", `{"id": "brief", "every_ms": 7200000, "prompt": "brief me", "expires_at": "`+exp+`"}`, 201); v["expires_at"] != exp || v["next_at"] == nil {
		t.Errorf("one that expires: %v", v)
	}

	f.json("DELETE", "/v1/schedules/standup", "", 204)
	if code, _ := f.do("GET", "/v1/schedules/standup", ""); code != 404 {
		t.Errorf("removed: %d", code)
	}
	if code, _ := f.do("POST", "/v1/schedules/standup/run", ""); code != 404 {
		t.Errorf("fire a removed one: %d", code)
	}
}

// A server told not to fire schedules says so.
func TestNoSchedules(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{NoSchedules: true})
	if code, out := f.do("GET", "/v1/schedules", ""); code != 404 || !strings.Contains(out, "no_schedules") {
		t.Errorf("%d %s", code, out)
	}
}

// In a real headless browser: the page lists the schedules; one's view
// pauses and resumes it, fires it now and shows the fire, whose session
// opens with the fire's answer.
func TestPageShowsSchedules(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t, app.Config{}, serve.Options{})
	f.json("POST", "/v1/schedules", `{"id": "standup", "cron": "0 9 * * 1-5", "time_zone": "Europe/Paris", "prompt": "summarise the day"}`, 201)
	f.model.ScriptPrefix("session_", script.Text("a quiet day"))
	ctx := browser(t, exe)
	text := func(sel string) string { return `(document.querySelector('` + sel + `')?.textContent || '')` }
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(f.http.URL + "/"),
		chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#schedules li[data-schedule="standup"]`),
		chromedp.Poll[chromedp.Void](text(`#schedules li[data-schedule="standup"]`) + `.includes('0 9 * * 1-5 in Europe/Paris')`),
		chromedp.Click(`#schedules li[data-schedule="standup"]`),
		chromedp.WaitVisible(`#schedule`),
		chromedp.Poll[chromedp.Void](text(`#schedule-prompt`) + ` === 'summarise the day' && ` + text(`#schedule-fires`) + `.includes('No fires yet')`),
		chromedp.Click(`#schedule-pause`),
		chromedp.Poll[chromedp.Void](text(`#schedule-summary`) + `.includes('paused') && ` + text(`#schedule-pause`) + ` === 'Resume'`),
		chromedp.Click(`#schedule-pause`),
		chromedp.Poll[chromedp.Void](text(`#schedule-summary`) + `.includes('active') && ` + text(`#schedule-pause`) + ` === 'Pause'`),
		chromedp.Click(`#schedule-run`),
		chromedp.Poll[chromedp.Void](text(`#schedule-fires`) + `.includes('done')`),
		chromedp.Click(`#schedule-fires a`),
		chromedp.WaitVisible(`#detail`),
		chromedp.Poll[chromedp.Void](text(`#session-title`) + `.startsWith('session_') && ` + text(`#transcript`) + `.includes('a quiet day')`),
	}
	for i, a := range steps {
		if err := chromedp.Do(ctx, a); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main')?.textContent || ''`))
			t.Fatalf("in the browser, step %d: %v\nthe page: %s", i+1, err, got)
		}
	}
	v := f.json("GET", "/v1/schedules/standup", "", 200)
	if fires := v["fires"].([]any); len(fires) != 1 || fires[0].(map[string]any)["status"] != "done" || v["state"] != "active" {
		t.Errorf("after the page: %v", v)
	}
}
