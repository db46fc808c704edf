package eval_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orca-agent/orca/eval"
)

// ADK's example eval set (its hello world agent's) is read as a suite:
// a turn per invocation, its recorded calls and final response replayed,
// the test_config.json beside it giving the criteria.
func TestLoadADK(t *testing.T) {
	suites, err := eval.Load("testdata/adk")
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != 1 {
		t.Fatalf("%d suites, want the one file's", len(suites))
	}
	s := suites[0]
	if s.Name != "roll_die" || s.Threshold != 0 || len(s.Cases) != 1 {
		t.Fatalf("suite %q, threshold %g, %d cases", s.Name, s.Threshold, len(s.Cases))
	}
	c := s.Cases[0]
	if c.Name != "tests/integration/fixture/hello_world_agent/roll_die.test.json" || len(c.Turns) != 3 {
		t.Fatalf("case %q, %d turns", c.Name, len(c.Turns))
	}
	if c.Turns[0].Prompt != "Hi who are you?" || c.Turns[2].Prompt != "Can you roll a die with 6 sides" {
		t.Errorf("prompts %q, %q", c.Turns[0].Prompt, c.Turns[2].Prompt)
	}
	last := c.Turns[2]
	// No final response was recorded: the model answers nothing, twice,
	// as the runtime asks again after an empty response.
	if len(last.Responses) != 3 || len(last.Responses[0].ToolCalls) != 1 || last.Responses[0].ToolCalls[0].Name != "roll_die" ||
		string(last.Responses[0].ToolCalls[0].Input) != `{"sides":6}` || last.Responses[1].Text != "" || last.Responses[2].Text != "" {
		t.Errorf("the last turn's responses: %+v", last.Responses)
	}
	if tr := last.Expect.Trajectory; tr == nil || len(tr.Calls) != 1 || tr.Calls[0].Tool != "roll_die" || string(tr.Calls[0].Args["sides"]) != "6" {
		t.Errorf("the last turn's trajectory: %+v", tr)
	}
	if tr := c.Turns[0].Expect.Trajectory; tr == nil || len(tr.Calls) != 0 {
		t.Errorf("the first turn expects no calls: %+v", tr)
	}
	if len(c.Extra) != 1 || c.Extra[0].Name() != "response_match" {
		t.Errorf("extra scorers: %v", c.Extra)
	}
}

// Replayed, the example passes: every turn's trajectory is the one
// recorded (roll_die is no tool of orca's, and its call fails, but the
// model made it), and its answers match the final responses — two of
// three: the last invocation recorded none, which ROUGE scores 0, as
// ADK does, and 2/3 clears the threshold of 0.5.
func TestADKReplay(t *testing.T) {
	suites, err := eval.Load("testdata/adk")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(t.Context(), suites, eval.Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	cr := rep.Suites[0].Cases[0]
	run := cr.Runs[0]
	if !rep.Passed || !cr.Passed || run.Error != "" {
		t.Fatalf("the example failed: %+v", rep.Suites[0])
	}
	turns := map[int]bool{}
	matched := false
	for _, sc := range run.Scores {
		switch sc.Scorer {
		case "trajectory":
			if sc.Value != 1 || !sc.Pass {
				t.Errorf("turn %d trajectory: %+v", sc.Turn, sc)
			}
			turns[sc.Turn] = true
		case "response_match":
			if math.Abs(sc.Value-2.0/3) > 1e-9 || !sc.Pass {
				t.Errorf("response_match: %+v, want 2/3, passing at 0.5", sc)
			}
			matched = true
		}
	}
	if !matched {
		t.Errorf("no response_match score (the case's Extra scorers): %+v", run.Scores)
	}
	if len(turns) != 3 {
		t.Errorf("trajectory scored for turns %v, want 1, 2 and 3: %+v", turns, run.Scores)
	}
}

// A trajectory that is not the one replayed fails, the scorer saying
// which call is not as expected; the recorded responses are untouched.
func TestADKTrajectoryMismatch(t *testing.T) {
	for name, m := range map[string]struct {
		mutate func(*eval.Case)
		want   string
	}{
		"name": {func(c *eval.Case) { c.Turns[2].Expect.Trajectory.Calls[0].Tool = "roll_dice" }, "want roll_dice(sides=6)"},
		"arg":  {func(c *eval.Case) { c.Turns[2].Expect.Trajectory.Calls[0].Args["sides"] = json.RawMessage("20") }, "want roll_die(sides=20)"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := eval.LoadADK("testdata/adk/roll_die.test.json")
			if err != nil {
				t.Fatal(err)
			}
			m.mutate(&s.Cases[0])
			rep, err := eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Passed {
				t.Fatal("the report passed")
			}
			var failed []eval.Score
			for _, sc := range rep.Suites[0].Cases[0].Runs[0].Scores {
				if !sc.Pass {
					failed = append(failed, sc)
				}
			}
			if len(failed) != 1 || failed[0].Scorer != "trajectory" || failed[0].Turn != 3 ||
				!strings.Contains(failed[0].Detail, `call 0 is roll_die{"sides":6}`) || !strings.Contains(failed[0].Detail, m.want) {
				t.Errorf("failed: %+v, want turn 3's trajectory, naming the call made and the one expected", failed)
			}
		})
	}
}

// test_config.json's criteria: a trajectory threshold under 1 is the
// share of turns whose calls must match (ADK's average), and a match
// type of ADK's is orca's; a criterion orca does not score is an error
// naming the file and it.
func TestADKCriteria(t *testing.T) {
	dir := t.TempDir()
	set := `{"evalSetId": "s", "evalCases": [{"evalId": "two rolls", "conversation": [
		{"userContent": {"parts": [{"text": "roll a d6"}]}, "finalResponse": {"parts": [{"text": "You rolled 4."}]},
		 "intermediateData": {"toolUses": [{"name": "roll_die", "args": {"sides": 6}}]}},
		{"userContent": {"parts": [{"text": "and a d20"}]}, "finalResponse": {"parts": [{"text": "You rolled 17."}]},
		 "intermediateData": {"invocationEvents": [{"author": "a", "content": {"parts": [{"functionCall": {"name": "roll_die", "args": {"sides": 20}}}, {"functionCall": {"name": "check_prime", "args": {"nums": [17]}}}]}}]}}]}]}`
	writeADKFile(t, filepath.Join(dir, "rolls.evalset.json"), set)
	writeADKFile(t, filepath.Join(dir, "test_config.json"), `{"criteria": {"tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "in_order"}, "response_match_score": 0.9}}`)
	s, err := eval.LoadADK(filepath.Join(dir, "rolls.evalset.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if len(c.Turns) != 2 || len(c.Turns[1].Responses) != 2 || len(c.Turns[1].Responses[0].ToolCalls) != 2 {
		t.Fatalf("turns: %+v", c.Turns)
	}
	if c.Turns[0].Expect.Trajectory != nil {
		t.Error("a threshold under 1 set each turn's trajectory")
	}
	var names []string
	for _, sc := range c.Extra {
		names = append(names, sc.Name())
	}
	if strings.Join(names, ",") != "trajectory,response_match" {
		t.Errorf("extra scorers %v", names)
	}
	// The second turn expects a call that is not made: half the turns
	// match, which the threshold of 0.5 allows.
	c.Turns[1].Responses = c.Turns[1].Responses[1:]
	rep, err := eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	scored := 0
	for _, sc := range rep.Suites[0].Cases[0].Runs[0].Scores {
		switch {
		case sc.Scorer == "trajectory" && sc.Turn == 0 && sc.Value == 0.5 && sc.Pass,
			sc.Scorer == "response_match" && sc.Value == 1 && sc.Pass:
			scored++
		default:
			t.Errorf("score %+v, want the case's trajectory at 0.5 and its response_match at 1, passing", sc)
		}
	}
	if scored != 2 || !rep.Passed {
		t.Errorf("%d scores as expected; the report passed: %v", scored, rep.Passed)
	}
	// At 0.6, half the turns are not enough.
	writeADKFile(t, filepath.Join(dir, "test_config.json"), `{"criteria": {"tool_trajectory_avg_score": {"threshold": 0.6, "matchType": "IN_ORDER"}}}`)
	if s, err = eval.LoadADK(filepath.Join(dir, "rolls.evalset.json")); err != nil {
		t.Fatal(err)
	}
	s.Cases[0].Turns[1].Responses = s.Cases[0].Turns[1].Responses[1:]
	if rep, err = eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Parallel: 1}); err != nil {
		t.Fatal(err)
	}
	if sc := rep.Suites[0].Cases[0].Runs[0].Scores; rep.Passed || len(sc) != 1 || sc[0].Pass ||
		!strings.HasPrefix(sc[0].Detail, "0.50 over 2 turns, 0.60 needed: turn 2: no roll_die(sides=20) after the first 0 expected calls") {
		t.Errorf("at 0.6: %+v", sc)
	}

	for _, bad := range []struct{ config, says string }{
		{`{"criteria": {"final_response_match_v2": 0.5}}`, "criteria.final_response_match_v2: orca does not score this criterion"},
		{`{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}}`, "criteria.tool_trajectory_avg_score: match_type: want EXACT, IN_ORDER or ANY_ORDER"},
		{`{"criteria": {"response_match_score": 2}}`, "criteria.response_match_score: threshold: want a score from 0 to 1"},
		{`{"metrics": {}}`, "criteria: want an object"},
	} {
		writeADKFile(t, filepath.Join(dir, "test_config.json"), bad.config)
		_, err := eval.LoadADK(filepath.Join(dir, "rolls.evalset.json"))
		if err == nil || !strings.Contains(err.Error(), bad.says) || !strings.Contains(err.Error(), "test_config.json") {
			t.Errorf("%s: %v, want it naming test_config.json and saying %s", bad.config, err, bad.says)
		}
	}
}

// ADK's older format, a list of queries, is one case named by its file;
// without a test_config.json ADK's default criteria apply.
func TestADKOlderFormat(t *testing.T) {
	dir := t.TempDir()
	writeADKFile(t, filepath.Join(dir, "simple.test.json"), `[{"query": "Turn off device_2 in the Bedroom.",
		"expected_tool_use": [{"tool_name": "set_device_info", "tool_input": {"location": "Bedroom", "device_id": "device_2", "status": "OFF"}, "mock_tool_output": "ok"}],
		"reference": "I have set the device_2 status to off."}]`)
	s, err := eval.LoadFile(filepath.Join(dir, "simple.test.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if c.Name != "simple" || len(c.Turns) != 1 || c.Turns[0].Expect.Trajectory == nil || len(c.Turns[0].Expect.Trajectory.Calls[0].Args) != 3 {
		t.Fatalf("case: %+v", c)
	}
	if len(c.Extra) != 1 || c.Extra[0].Name() != "response_match" {
		t.Errorf("extra scorers: %v (the default criteria have response_match_score)", c.Extra)
	}
}

// What is wrong with an ADK file is said, naming the file and the field.
func TestADKErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ in, says string }{
		{`{"eval_set_id": "x"}`, "eval_cases: want a list"},
		{`{"eval_cases": [{"conversation": []}]}`, "eval_cases[0]: eval_id"},
		{`{"eval_cases": [{"eval_id": "a", "conversation": [{"user_content": {"parts": [{"inline_data": {}}]}}]}]}`, `case "a": conversation[0].user_content: no text`},
		{`{"eval_cases": [{"eval_id": "a", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}, "intermediate_data": {"tool_uses": [{"args": {}}]}}]}]}`, `conversation[0].intermediate_data.tool_uses[0].name`},
		{`{"eval_cases": [{"eval_id": "a", "conversation_scenario": {"starting_prompt": "hi"}}]}`, "conversation_scenario"},
		{`{"eval_cases": [{"eval_id": "a", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}, {"eval_id": "a", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}]}`, "a second case of that name"},
		{`[{"reference": "x"}]`, "[0].query"},
	} {
		p := filepath.Join(dir, "bad.evalset.json")
		writeADKFile(t, p, c.in)
		_, err := eval.LoadADK(p)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "bad.evalset.json") {
			t.Errorf("%s: %v, want it naming the file and saying %s", c.in, err, c.says)
		}
	}
}

// ROUGE-1 as ADK's response_match_score computes it: unigrams, lowercased,
// split at what is not a letter or digit, Porter-stemmed; F-measure.
func TestRouge1(t *testing.T) {
	for _, c := range []struct {
		candidate, reference string
		want                 float64
	}{
		{"I rolled a 16 sided die and got 13.", "I rolled a 16 sided die and got 13.", 1},
		// 5 of 6 words shared each way: P = R = 5/6.
		{"the cat sat on the mat", "The cat is on the mat", 5.0 / 6},
		// roll(ed), roll(ing) share a stem; dice and die do not: P = 2/4,
		// R = 2/3, F = 2·(1/2)(2/3)/(1/2+2/3) = 4/7.
		{"The dice were rolled", "Rolling the die", 4.0 / 7},
		// "the" once in the reference: P = 1/3, R = 1, F = 1/2.
		{"the the the", "the", 0.5},
		// Non-ASCII letters split words: d j vu caf against deja vu cafe,
		// one shared: P = 1/4, R = 1/3, F = 2/7.
		{"Déjà vu: café", "deja vu cafe", 2.0 / 7},
		{"Hello, world!", "", 0},
		{"", "", 0},
	} {
		if got := eval.Rouge1(c.candidate, c.reference); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Rouge1(%q, %q) = %v, want %v", c.candidate, c.reference, got, c.want)
		}
	}
}

func writeADKFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
