package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/serve"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// evalReport is the part of orca eval --json this file reads.
type evalReport struct {
	Passed bool
	Diff   *struct{ Regressed, Fixed []string }
	Suites []struct {
		Name   string
		Passed bool
		Cases  []struct {
			Name   string
			Tags   []string
			Passed bool
			Runs   []struct {
				Error  string
				Scores []struct {
					Scorer, Detail string
					Pass           bool
				}
			}
		}
	}
}

// failing are the cases of rep that failed, and those tagged tag.
func (rep evalReport) failing(tag string) (failed, tagged []string) {
	for _, s := range rep.Suites {
		for _, c := range s.Cases {
			if !c.Passed {
				failed = append(failed, c.Name)
			}
			if slices.Contains(c.Tags, tag) {
				tagged = append(tagged, c.Name)
			}
		}
	}
	slices.Sort(failed)
	slices.Sort(tagged)
	return failed, tagged
}

func runEvalJSON(t *testing.T, args ...string) (evalReport, string, int) {
	t.Helper()
	out, errOut, code := orca(t, t.Context(), "", append([]string{"eval", "--json"}, args...)...)
	var rep evalReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("orca eval --json: %v\n%s\n%s", err, out, errOut)
	}
	return rep, errOut, code
}

// TestEvalExampleSuite: the repository's example suite (the demo agent's
// workspace, its hook and rules) passes on replay with no key and no
// network, and writes JUnit XML; breaking the workspace's hook, or one of
// its rules, fails exactly the cases that assert it, and the exit code
// says so.
func TestEvalExampleSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 53 cases")
	}
	junit, saved := filepath.Join(t.TempDir(), "report.xml"), t.TempDir()
	rep, errOut, code := runEvalJSON(t, "../../examples/eval", "--junit", junit, "--save", saved)
	cases := 0
	for _, s := range rep.Suites {
		cases += len(s.Cases)
	}
	if code != exitOK || !rep.Passed || cases < 50 {
		failed, _ := rep.failing("")
		t.Fatalf("exit %d, passed %v, %d cases; failed %v\n%s", code, rep.Passed, cases, failed, errOut)
	}
	b, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(b), `<testsuite package="orca.eval" id="0"`) || strings.Contains(string(b), "<failure") {
		t.Errorf("the JUnit report: %v\n%.500s", err, b)
	}
	if xsd, lint := filepath.Join("testdata", "junit", "JUnit.xsd"), "xmllint"; hasCommand(lint) {
		for _, f := range []string{junit} {
			if out, err := exec.Command(lint, "--noout", "--schema", xsd, f).CombinedOutput(); err != nil {
				t.Errorf("xmllint --schema %s %s: %v\n%s", xsd, f, err, out)
			}
		}
	} else if os.Getenv("CI") != "" {
		t.Error("xmllint is not installed: .ci/run installs it to check the JUnit XML")
	}

	for _, c := range []struct {
		name, tag string
		breakIt   func(settings string) string
	}{
		{"the hook removed", "hook:gomod", func(s string) string {
			i := strings.Index(s, `"hooks"`)
			return s[:i] + `"hooks": {}}` + "\n"
		}},
		{"the curl rule removed", "rule:curl", func(s string) string {
			return strings.Replace(s, `"Bash(curl:*)", `, "", 1)
		}},
		{"the secrets rule removed", "rule:secrets", func(s string) string {
			return strings.Replace(s, `, "Read(secrets/**)"`, "", 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../../examples/eval")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "demo", ".orca", "settings.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			broken := c.breakIt(string(b))
			if broken == string(b) || !json.Valid([]byte(broken)) {
				t.Fatalf("the settings were not broken as meant:\n%s", broken)
			}
			if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(t.TempDir(), "broken.xml")
			rep, errOut, code := runEvalJSON(t, dir, "--baseline", saved, "--no-regressions", "--junit", report)
			failed, tagged := rep.failing(c.tag)
			if code != exitTurn || rep.Passed || len(tagged) == 0 || !slices.Equal(failed, tagged) {
				t.Errorf("exit %d: failed %v, want exactly those tagged %s: %v\n%s", code, failed, c.tag, tagged, errOut)
			}
			var regressed []string
			if rep.Diff != nil {
				for _, r := range rep.Diff.Regressed {
					_, name, _ := strings.Cut(r, ": ")
					regressed = append(regressed, name)
				}
			}
			slices.Sort(regressed)
			if !slices.Equal(regressed, tagged) || !strings.Contains(errOut, "regressed against") {
				t.Errorf("against the saved run: regressed %v, want %v; stderr %q", regressed, tagged, errOut)
			}
			if hasCommand("xmllint") {
				if out, err := exec.Command("xmllint", "--noout", "--schema", filepath.Join("testdata", "junit", "JUnit.xsd"), report).CombinedOutput(); err != nil {
					t.Errorf("the failing run's JUnit XML: %v\n%s", err, out)
				}
			}
		})
	}
}

func hasCommand(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TestEvalAddFromSession: a session orca run made (a Read, then an Edit
// of the same file) becomes a case that passes on replay unchanged — the
// file as it was before the turn, from its checkpoint — and fails when
// the recorded tool result no longer comes out the same.
func TestEvalAddFromSession(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scriptFile := filepath.Join(t.TempDir(), "s.json")
	script := `{"responses": [
		{"tool_calls": [{"name": "Read", "input": {"file_path": "` + ws + `/a.txt"}}]},
		{"tool_calls": [{"name": "Edit", "input": {"file_path": "` + ws + `/a.txt", "old_string": "beta", "new_string": "gamma"}}]},
		{"text": "a.txt now ends with gamma."}]}`
	if err := os.WriteFile(scriptFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	run := func(args ...string) (string, string, int) {
		return orcaWith(t, t.Context(), options{configDir: cfg}, "", args...)
	}
	out, errOut, code := run("run", "--script", scriptFile, "-w", ws, "--permission-mode", "accept-edits", "--json", "Change beta to gamma in a.txt")
	if code != exitOK {
		t.Fatalf("orca run: %d\n%s\n%s", code, out, errOut)
	}
	session := parseEvents(t, out)[0].str("session_id")
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "alpha\ngamma\n" {
		t.Fatalf("the session did not edit a.txt: %q", b)
	}

	caseFile := filepath.Join(t.TempDir(), "edit.eval.json")
	out, errOut, code = run("eval", "add", "--from-session", session, "-w", ws, "--out", caseFile)
	if code != exitOK || !strings.Contains(out, "1 turn(s), 1 file(s)") {
		t.Fatalf("orca eval add: %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(caseFile)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Files map[string]string
		Turns []struct{ Prompt string }
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Files["a.txt"] != "alpha\nbeta\n" || c.Turns[0].Prompt != "Change beta to gamma in a.txt" || strings.Contains(string(b), ws) {
		t.Fatalf("the case (a.txt as before the turn, the workspace as ${WORKSPACE}): %v\n%s", err, b)
	}
	// The permission mode is orca run's flag, not the session's: the
	// case says it.
	b = []byte(strings.Replace(string(b), `"name":`, `"mode": "accept-edits", "name":`, 1))
	if err := os.WriteFile(caseFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, errOut, code := runEvalJSON(t, caseFile)
	if code != exitOK || !rep.Passed {
		t.Fatalf("the case on replay: exit %d\n%+v\n%s", code, rep, errOut)
	}

	// The file reads otherwise now: the Read's recorded result no longer
	// comes out the same (and the Edit finds no beta).
	b = []byte(strings.Replace(string(b), `alpha\nbeta\n`, `alpha\nbeta\ndelta\n`, 1))
	if err := os.WriteFile(caseFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _, code = runEvalJSON(t, caseFile)
	var details []string
	for _, s := range rep.Suites[0].Cases[0].Runs[0].Scores {
		if !s.Pass {
			details = append(details, s.Scorer+": "+s.Detail)
		}
	}
	if code != exitTurn || rep.Passed || !strings.Contains(strings.Join(details, "\n"), "results: Read call 0: its result") {
		t.Errorf("exit %d, failures:\n%s", code, strings.Join(details, "\n"))
	}
}

// TestEvalLive: orca eval --live --repeat 5 against a local fake of
// Anthropic's API that answers one case wrong in two of its five runs on
// purpose: pass@5 yes, pass^5 no (3 of 5); the other case passes every
// run. A judge scorer grades through a second fake model, and its cost is
// counted.
func TestEvalLive(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-test")
	t.Setenv(anthropic.BaseURLEnv, "")
	var mu sync.Mutex
	answers := 0
	model := newFakeModelAPI(t, true)
	model.next = func(r fakeRequest) reply {
		if !strings.Contains(r.raw, `"tool_result"`) {
			return reply{tool: "Read", input: `{"file_path": "a.txt"}`}
		}
		if strings.Contains(r.raw, "Which colour") {
			mu.Lock()
			defer mu.Unlock()
			answers++
			if answers%2 == 0 {
				return reply{text: "It says red."}
			}
			return reply{text: "It says blue."}
		}
		return reply{text: "It says blue."}
	}
	judge := newFakeModelAPI(t, true, reply{text: `{"score": 0.9, "reason": "names the colour the file says"}`})
	suite := filepath.Join(t.TempDir(), "live.eval.json")
	os.WriteFile(suite, []byte(`{"name": "live", "cases": [
		{"name": "flaky", "files": {"a.txt": "blue\n"}, "turns": [{"prompt": "Which colour does a.txt name?",
			"expect": {"answer": {"contains": ["blue"]}, "trajectory": {"calls": [{"tool": "Read"}]}}}]},
		{"name": "steady", "files": {"a.txt": "blue\n"}, "turns": [{"prompt": "What does a.txt say?",
			"expect": {"answer": {"contains": ["blue"]}, "judge": {"rubric": "The answer names the colour a.txt holds.", "threshold": 0.8}}}]}]}`), 0o644)
	o := options{configDir: t.TempDir(), getenv: noEnv}
	out, errOut, code := orcaWith(t, t.Context(), o, "", "eval", suite, "--json", "--live", "--repeat", "5", "--provider", "anthropic", "--base-url", model.URL,
		"--model", "claude-sonnet-4-5", "--judge-model", "claude-haiku-4-5", "--judge-base-url", judge.URL)
	var rep struct {
		Passed  bool
		CostUSD float64 `json:"cost_usd"`
		Suites  []struct {
			Cases []struct {
				Name       string
				Passed     bool
				PassAtK    bool `json:"pass_at_k"`
				PassedRuns int  `json:"passed_runs"`
				Runs       []struct {
					Scores []struct {
						Scorer  string
						Pass    bool
						Value   float64
						CostUSD float64 `json:"cost_usd"`
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	if code != exitTurn || rep.Passed || len(rep.Suites) != 1 || len(rep.Suites[0].Cases) != 2 {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	flaky, steady := rep.Suites[0].Cases[0], rep.Suites[0].Cases[1]
	if flaky.Name != "flaky" || flaky.Passed || !flaky.PassAtK || flaky.PassedRuns != 3 || len(flaky.Runs) != 5 {
		t.Errorf("flaky: pass^5 %v, pass@5 %v, %d of %d runs passed; want false, true, 3 of 5", flaky.Passed, flaky.PassAtK, flaky.PassedRuns, len(flaky.Runs))
	}
	if !steady.Passed || !steady.PassAtK || steady.PassedRuns != 5 {
		t.Errorf("steady: pass^5 %v, pass@5 %v, %d runs passed", steady.Passed, steady.PassAtK, steady.PassedRuns)
	}
	judged := 0
	for _, r := range steady.Runs {
		for _, s := range r.Scores {
			if s.Scorer == "judge" && s.Pass && s.Value == 0.9 && s.CostUSD > 0 {
				judged++
			}
		}
	}
	if judged != 5 || len(judge.seen()) != 5 || rep.CostUSD <= 0 {
		t.Errorf("%d runs judged with a cost, the judge asked %d times, the run cost $%g", judged, len(judge.seen()), rep.CostUSD)
	}
	if len(judge.seen()) > 0 && !strings.Contains(judge.seen()[0].raw, "The answer names the colour a.txt holds.") {
		t.Errorf("the judge was not given the rubric: %s", judge.seen()[0].raw)
	}
	if !strings.Contains(out, `"live": true`) {
		t.Errorf("the report does not say it was live")
	}

	// The judges' budget: the first judgement spends it, the rest fail.
	out, errOut, _ = orcaWith(t, t.Context(), o, "", "eval", suite, "--json", "--live", "--repeat", "3", "--provider", "anthropic", "--base-url", model.URL,
		"--model", "claude-sonnet-4-5", "--judge-model", "claude-haiku-4-5", "--judge-base-url", judge.URL, "--budget-judge", "0.000001", "--parallel", "1", "--filter", "steady")
	if n := strings.Count(out, "not judged: the judges' budget ($0.000001) is spent"); n != 2 || len(judge.seen()) != 6 {
		t.Errorf("%d judgements refused (want 2), the judge asked %d times in all (want 6)\n%s\n%s", n, len(judge.seen()), out, errOut)
	}
}

// TestEvalRecordShownByServe: orca eval --record keeps the run in the
// workspace's store, a later --baseline recorded compares with it, and
// orca serve over that workspace lists it and gives its report.
func TestEvalRecordShownByServe(t *testing.T) {
	ws := t.TempDir()
	suite := "../../examples/eval/reading.eval.json"
	out, errOut, code := orca(t, t.Context(), "", "eval", suite, "--record", "-w", ws)
	if code != exitOK {
		t.Fatalf("orca eval --record: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = orca(t, t.Context(), "", "eval", suite, "--baseline", "recorded", "--no-regressions", "-w", ws)
	if code != exitOK || !strings.Contains(out, "kept in the store: no change") {
		t.Fatalf("against the recorded run: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := orca(t, t.Context(), "", "eval", suite, "--baseline", "recorded", "-w", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "keeps no runs of orca eval") {
		t.Errorf("a workspace with none: %d %s", code, errOut)
	}

	a, err := app.Open(t.Context(), app.Config{Workspace: ws, ConfigDir: "-", Client: script.New(), NoMCP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv, err := serve.New(a, serve.Options{Token: "a-token-of-sixteen-chars"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	get := func(path string) (int, string) {
		req := httptest.NewRequest("GET", "http://127.0.0.1"+path, nil)
		req.Header.Set("Authorization", "Bearer a-token-of-sixteen-chars")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	code, body := get("/v1/evals")
	var list struct {
		Runs []struct {
			ID            string
			Passed        bool
			Cases, Failed int
		}
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 || len(list.Runs) != 1 || !list.Runs[0].Passed || list.Runs[0].Cases != 12 || list.Runs[0].Failed != 0 {
		t.Fatalf("GET /v1/evals: %d %s", code, body)
	}
	if code, body := get("/v1/evals/" + list.Runs[0].ID); code != 200 || !strings.Contains(body, `"name":"reads calc.go"`) {
		t.Errorf("the run's report: %d %.300s", code, body)
	}
}

// TestEvalSpans: with OTEL_EXPORTER_OTLP_ENDPOINT, each case is a span
// (its suite, name and verdict), its turn's invoke_agent span under it.
func TestEvalSpans(t *testing.T) {
	rcv := newReceiver(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0ken"}
	o := options{configDir: t.TempDir(), getenv: func(k string) string { return env[k] }}
	out, errOut, code := orcaWith(t, t.Context(), o, "", "eval", "../../examples/eval/reading.eval.json", "--filter", "reads")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	spans, _ := rcv.spans()
	if len(rcv.bad) > 0 {
		t.Fatalf("the receiver refused: %v", rcv.bad)
	}
	byID := map[string]*tracepb.Span{}
	cases := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
		if strings.HasPrefix(s.Name, "eval_case ") {
			cases[s.Name] = s
		}
	}
	c := cases["eval_case reads calc.go"]
	if len(cases) != 4 || c == nil || spanAttr(c, "orca.eval.suite") != "reading" || !boolAttr(c, "orca.eval.passed") {
		t.Fatalf("case spans: %v", cases)
	}
	nested := 0
	for _, s := range spans {
		if s.Name == "invoke_agent orca" && cases[byID[string(s.ParentSpanId)].GetName()] != nil {
			nested++
		}
	}
	if nested != 4 {
		t.Errorf("%d turns' spans under their case's, want 4", nested)
	}
}

func boolAttr(s *tracepb.Span, key string) bool {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetBoolValue()
		}
	}
	return false
}
