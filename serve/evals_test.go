package serve_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/scope"
	"github.com/orca-agent/orca/serve"
	"github.com/orca-agent/orca/store"
)

// keptRun is a run of orca eval as orca eval --record keeps it (the
// rows eval.Record writes; cmd/orca's TestEvalRecordShownByServe writes
// them through the CLI).
const keptRun = `{"suites": [{"name": "fixing", "file": "fixing.eval.json", "pass_rate": 0.5, "threshold": 1, "passed": false,
	"failed_gates": ["the hook keeps go.mod: hooks"],
	"cases": [{"name": "fixes the bug", "passed": true, "pass_at_k": true, "passed_runs": 1, "runs": [{"passed": true, "scores": [{"scorer": "files", "turn": 1, "value": 1, "pass": true}]}]},
	          {"name": "the hook keeps go.mod", "passed": false, "pass_at_k": false, "passed_runs": 0, "runs": [{"passed": false, "scores": [{"scorer": "hooks", "turn": 1, "value": 0, "pass": false, "detail": "hook PreToolUse[0].hooks[0] blocked a call: false, want true"}]}]}]}],
	"started": "2026-12-07T10:00:00Z", "duration_ns": 2000000000, "passed": false, "cost_usd": 0}`

func keepRun(t *testing.T, f *fixture, id string) {
	t.Helper()
	rows := f.app.Store().(store.Observations)
	sc := scope.Scope{SessionID: "orca-eval", TurnID: id}
	if err := rows.AppendObservations(t.Context(), []store.Observation{
		{Time: time.Now(), Name: "eval_case", Scope: sc, Data: json.RawMessage(`{"suite": "fixing", "name": "fixes the bug", "passed": true}`)},
		{Time: time.Now(), Name: "eval_run", Scope: sc, Data: json.RawMessage(keptRun)},
	}); err != nil {
		t.Fatal(err)
	}
}

// The runs of orca eval kept in the store: listed newest first with their
// verdicts, each one's report by id, an unknown id a 404.
func TestEvalsThroughTheAPI(t *testing.T) {
	f := newFixture(t, app.Config{}, serve.Options{})
	if got := f.json("GET", "/v1/evals", "", 200); len(got["runs"].([]any)) != 0 {
		t.Fatalf("no run kept: %v", got)
	}
	keepRun(t, f, "eval_1")
	keepRun(t, f, "eval_2")
	got := f.json("GET", "/v1/evals", "", 200)
	runs := got["runs"].([]any)
	first := runs[0].(map[string]any)
	if len(runs) != 2 || first["id"] != "eval_2" || first["passed"] != false || first["cases"] != 2.0 || first["failed"] != 1.0 || first["suites"].([]any)[0] != "fixing" {
		t.Errorf("the runs: %v", got)
	}
	rep := f.json("GET", "/v1/evals/eval_1", "", 200)
	if rep["suites"].([]any)[0].(map[string]any)["failed_gates"] == nil {
		t.Errorf("the report: %v", rep)
	}
	if code, body := f.do("GET", "/v1/evals/eval_9", ""); code != 404 || !strings.Contains(body, "no run eval_9 of orca eval is kept") {
		t.Errorf("an unknown run: %d %s", code, body)
	}
	if code, _ := f.do("GET", "/v1/evals", "", "Authorization", ""); code != 401 {
		t.Errorf("without the token: %d", code)
	}
}

// In a real headless browser: the page lists the kept runs, and one's
// report shows its failing case open, with what failed.
func TestPageShowsEvals(t *testing.T) {
	exe := chromium(t)
	f := newFixture(t, app.Config{}, serve.Options{})
	keepRun(t, f, "eval_1")
	ctx := browser(t, exe)
	failing := `document.querySelector('#eval-cases details[data-case="the hook keeps go.mod"]')`
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(f.http.URL + "/"),
		chromedp.WaitVisible(`#login`),
		chromedp.SendKeys(`#token`, token),
		chromedp.Click(`#login button`),
		chromedp.WaitVisible(`#evals li[data-eval="eval_1"]`),
		chromedp.Click(`#evals li[data-eval="eval_1"]`),
		chromedp.WaitVisible(`#eval`),
		chromedp.Poll[chromedp.Void](failing + `?.open === true && ` + failing + `.textContent.includes('blocked a call: false, want true')`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#eval-cases details[data-case="fixes the bug"]')?.open === false`),
		chromedp.Poll[chromedp.Void](`document.querySelector('#eval-cases').textContent.includes('gate failed: the hook keeps go.mod: hooks')`),
	}
	for i, a := range steps {
		if err := chromedp.Do(ctx, a); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main')?.textContent || ''`))
			t.Fatalf("in the browser, step %d: %v\nthe page: %s", i+1, err, got)
		}
	}
}
