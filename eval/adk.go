package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/orca-agent/orca/llm/script"
)

// ADK's criteria (test_config.json's "criteria") that orca scores.
const (
	adkTrajectory    = "tool_trajectory_avg_score"
	adkResponseMatch = "response_match_score"
)

// adkDefaultCriteria are ADK's criteria when no test_config.json is
// beside the file.
var adkDefaultCriteria = map[string]float64{adkTrajectory: 1, adkResponseMatch: 0.8}

// isADK reports whether a file's name is one of Google ADK's evaluation
// files: *.evalset.json, or *.test.json.
func isADK(name string) bool {
	return strings.HasSuffix(name, ".evalset.json") || strings.HasSuffix(name, ".test.json")
}

// LoadADK reads a file of Google ADK's evaluations as a suite: an eval
// set (EvalSet's JSON, its fields in snake_case or camelCase, as ADK
// reads them), or a *.test.json of ADK's older format (a list of
// queries, one case; or a list of named cases of them). The criteria
// are those of the test_config.json in the file's folder, ADK's
// defaults (tool_trajectory_avg_score 1, response_match_score 0.8)
// without one.
//
// Each eval case becomes a case, each of its invocations a turn: the
// user's text is the prompt; the recorded responses are a call of each
// expected tool use (the calls of one of ADK's invocation events in one
// response) and then the final response's text. tool_trajectory_avg_score
// expects each turn's tool calls (by name and arguments; match_type
// EXACT, IN_ORDER or ANY_ORDER): at 1, each turn's own "trajectory"
// expectation; below 1, a "trajectory" scorer of the case that passes
// when at least that share of its turns have theirs, as ADK averages
// it. response_match_score is a "response_match" scorer of the case
// (Case.Extra): the mean over the turns of the answer's ROUGE-1
// against the final response (Rouge1), passing at the threshold. The
// suite passes when every case does, as ADK's evaluation does. A
// criterion orca does not score (an LLM judge's, a rubric's) is an
// error naming it.
func LoadADK(path string) (*Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cases, err := parseADK(b, adkName(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	crit, err := adkCriteria(filepath.Join(filepath.Dir(path), "test_config.json"))
	if err != nil {
		return nil, err
	}
	s := &Suite{Name: adkName(path), File: path, Dir: filepath.Dir(path)}
	for _, c := range cases {
		s.Cases = append(s.Cases, c.toCase(crit))
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// adkName is the name of an ADK file without its suffix.
func adkName(path string) string {
	base := filepath.Base(path)
	for _, suffix := range []string{".evalset.json", ".test.json"} {
		if name, ok := strings.CutSuffix(base, suffix); ok {
			return name
		}
	}
	return strings.TrimSuffix(base, ".json")
}

// adkCase is an eval case of ADK's: its id and its invocations.
type adkCase struct {
	id    string
	turns []adkTurn
}

// adkTurn is an invocation: the user's text, the tool calls expected
// (in groups of the calls made at once) and the final response's text.
type adkTurn struct {
	prompt    string
	calls     [][]adkCall
	reference string
}

// adkCall is an expected tool use.
type adkCall struct {
	name string
	args map[string]json.RawMessage
}

// adkCriterion is a criterion of test_config.json: its threshold and,
// for tool_trajectory_avg_score, how calls match.
type adkCriterion struct {
	threshold  float64
	match      string // orca's: exact, in_order, any_order
	ignoreArgs bool
}

// toCase makes the case of c under the criteria crit.
func (c adkCase) toCase(crit map[string]adkCriterion) Case {
	out := Case{Name: c.id}
	traj, checkTraj := crit[adkTrajectory]
	var perTurn []*Trajectory
	var refs []string
	for _, t := range c.turns {
		turn := Turn{Prompt: t.prompt}
		var specs []CallSpec
		for _, group := range t.calls {
			var r script.Response
			for _, call := range group {
				input := json.RawMessage("{}")
				if call.args != nil {
					input, _ = json.Marshal(call.args) // of values that were read as JSON: it cannot fail
				}
				r.ToolCalls = append(r.ToolCalls, script.ToolCall{Name: call.name, Input: input})
				spec := CallSpec{Tool: call.name}
				if !traj.ignoreArgs && len(call.args) > 0 {
					spec.Args = call.args
				}
				specs = append(specs, spec)
			}
			turn.Responses = append(turn.Responses, r)
		}
		turn.Responses = append(turn.Responses, script.Response{Text: t.reference})
		if t.reference == "" {
			// The runtime sends an empty response back once: the second
			// in a row is the answer (agent.StopAnswered).
			turn.Responses = append(turn.Responses, script.Response{})
		}
		if checkTraj {
			tr := &Trajectory{Match: traj.match, Calls: specs}
			if tr.Calls == nil {
				tr.Calls = []CallSpec{}
			}
			if traj.threshold >= 1 {
				turn.Expect.Trajectory = tr
			}
			perTurn = append(perTurn, tr)
		}
		refs = append(refs, t.reference)
		out.Turns = append(out.Turns, turn)
	}
	if checkTraj && traj.threshold < 1 {
		out.Extra = append(out.Extra, &adkScorer{name: "trajectory", threshold: traj.threshold, turns: len(perTurn), score: func(v *View, i int) (float64, string) {
			if value, why := perTurn[i].score(v.Calls()); value < 1 || why != "" {
				return 0, why
			}
			return 1, ""
		}})
	}
	if rm, ok := crit[adkResponseMatch]; ok {
		out.Extra = append(out.Extra, &adkScorer{name: "response_match", threshold: rm.threshold, turns: len(refs), score: func(v *View, i int) (float64, string) {
			answer := v.Result().Answer
			f := Rouge1(answer, refs[i])
			switch {
			case f >= rm.threshold:
				return f, ""
			case strings.TrimSpace(refs[i]) == "":
				return f, "no final response was recorded to match (ROUGE-1 0)"
			}
			return f, fmt.Sprintf("ROUGE-1 %.2f: %q against %q", f, clip(answer), clip(refs[i]))
		}})
	}
	return out
}

// adkScorer scores a case as ADK's evaluators do: the mean of its turns'
// scores, passing at threshold.
type adkScorer struct {
	name      string
	threshold float64
	turns     int
	// score scores turn i (from 0), saying what is wrong with it.
	score func(v *View, i int) (float64, string)
}

func (s *adkScorer) Name() string { return s.name }

func (s *adkScorer) Score(_ context.Context, v *View) Score {
	var sum float64
	var why []string
	for i := range s.turns {
		value, detail := s.score(v.run.view(i), i)
		sum += value
		if detail != "" {
			why = append(why, fmt.Sprintf("turn %d: %s", i+1, detail))
		}
	}
	mean := 1.0
	if s.turns > 0 {
		mean = sum / float64(s.turns)
	}
	out := Score{Scorer: s.name, Value: mean, Pass: mean >= s.threshold-1e-9}
	if !out.Pass {
		out.Detail = fmt.Sprintf("%.2f over %d turns, %.2f needed", mean, s.turns, s.threshold)
		if len(why) > 0 {
			out.Detail += ": " + strings.Join(why, "; ")
		}
	}
	return out
}

// adkCriteria reads the criteria of test_config.json at path (ADK's
// defaults if there is none).
func adkCriteria(path string) (map[string]adkCriterion, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		out := map[string]adkCriterion{}
		for name, t := range adkDefaultCriteria {
			out[name] = adkCriterion{threshold: t, match: "exact"}
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(cfg["criteria"], &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s: criteria: want an object of criteria and their thresholds", path)
	}
	out := map[string]adkCriterion{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		c, err := parseCriterion(name, raw[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: criteria.%s: %w", path, name, err))
			continue
		}
		out[name] = c
	}
	return out, errors.Join(errs...)
}

// parseCriterion reads the criterion name: a threshold, or an object
// with one (and, for tool_trajectory_avg_score, match_type and
// ignore_args).
func parseCriterion(name string, b json.RawMessage) (adkCriterion, error) {
	if name != adkTrajectory && name != adkResponseMatch {
		return adkCriterion{}, fmt.Errorf("orca does not score this criterion (it scores %s and %s)", adkTrajectory, adkResponseMatch)
	}
	c := adkCriterion{match: "exact"}
	if json.Unmarshal(b, &c.threshold) != nil {
		var o adkObject
		if err := json.Unmarshal(b, &o); err != nil {
			return c, errors.New("want a threshold, or an object with one")
		}
		if err := o.decode("threshold", &c.threshold); err != nil || o.get("threshold") == nil {
			return c, errors.New("threshold: want a number")
		}
		if name == adkTrajectory {
			if m := o.get("match_type"); m != nil {
				var err error
				if c.match, err = matchType(m); err != nil {
					return c, fmt.Errorf("match_type: %w", err)
				}
			}
			if err := o.decode("ignore_args", &c.ignoreArgs); err != nil {
				return c, errors.New("ignore_args: want true or false")
			}
		}
	}
	if c.threshold < 0 || c.threshold > 1 {
		return c, fmt.Errorf("threshold: want a score from 0 to 1, got %g", c.threshold)
	}
	return c, nil
}

// matchType is orca's trajectory match of ADK's match_type: its name
// (EXACT, IN_ORDER, ANY_ORDER, in any case, with - or space for _) or
// its value (0, 1, 2).
func matchType(b json.RawMessage) (string, error) {
	var n int
	if json.Unmarshal(b, &n) == nil {
		if n >= 0 && n <= 2 {
			return []string{"exact", "in_order", "any_order"}[n], nil
		}
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		s = strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
		if s == "exact" || s == "in_order" || s == "any_order" {
			return s, nil
		}
	}
	return "", fmt.Errorf("want EXACT, IN_ORDER or ANY_ORDER, got %s", b)
}

// parseADK reads an ADK file's cases; name names the case of a file of
// the older format that holds one.
func parseADK(b []byte, name string) ([]adkCase, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		return parseADKQueries(b, name)
	}
	var set adkObject
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not an ADK eval set (an object with eval_cases) or list of queries: %w", err)
	}
	var raw []adkObject
	if err := set.decode("eval_cases", &raw); err != nil || set.get("eval_cases") == nil {
		return nil, errors.New("eval_cases: want a list of eval cases")
	}
	var out []adkCase
	var errs []error
	for i, rc := range raw {
		c, err := parseEvalCase(rc)
		if err != nil {
			errs = append(errs, fmt.Errorf("eval_cases[%d]: %w", i, err))
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// parseEvalCase reads an EvalCase.
func parseEvalCase(o adkObject) (adkCase, error) {
	var c adkCase
	if err := o.decode("eval_id", &c.id); err != nil || strings.TrimSpace(c.id) == "" {
		return c, errors.New("eval_id: want the case's id")
	}
	if o.get("conversation") == nil && o.get("conversation_scenario") != nil {
		return c, fmt.Errorf("case %q: conversation_scenario: a simulated user is not replayed; orca replays a recorded conversation", c.id)
	}
	var invs []adkObject
	if err := o.decode("conversation", &invs); err != nil {
		return c, fmt.Errorf("case %q: conversation: want a list of invocations", c.id)
	}
	var errs []error
	for i, inv := range invs {
		t, err := parseInvocation(inv)
		if err != nil {
			errs = append(errs, fmt.Errorf("case %q: conversation[%d].%w", c.id, i, err))
			continue
		}
		c.turns = append(c.turns, t)
	}
	return c, errors.Join(errs...)
}

// parseInvocation reads an Invocation: the user's text, the final
// response's, and the tool uses of its intermediate data (tool_uses, or
// the function calls of invocation_events).
func parseInvocation(o adkObject) (adkTurn, error) {
	var t adkTurn
	var user, final adkContent
	if err := o.decode("user_content", &user); err != nil {
		return t, fmt.Errorf("user_content: %w", err)
	}
	if t.prompt = user.text(); strings.TrimSpace(t.prompt) == "" {
		return t, errors.New("user_content: no text (orca's prompts are text)")
	}
	if err := o.decode("final_response", &final); err != nil {
		return t, fmt.Errorf("final_response: %w", err)
	}
	t.reference = final.text()
	var data adkObject
	if err := o.decode("intermediate_data", &data); err != nil {
		return t, fmt.Errorf("intermediate_data: %w", err)
	}
	if uses := data.get("tool_uses"); uses != nil {
		var calls []adkObject
		if err := json.Unmarshal(uses, &calls); err != nil {
			return t, errors.New("intermediate_data.tool_uses: want a list of function calls")
		}
		for i, fc := range calls {
			call, err := parseFunctionCall(fc)
			if err != nil {
				return t, fmt.Errorf("intermediate_data.tool_uses[%d].%w", i, err)
			}
			t.calls = append(t.calls, []adkCall{call})
		}
		return t, nil
	}
	var events []struct {
		Content adkContent `json:"content"`
	}
	if err := data.decode("invocation_events", &events); err != nil {
		return t, errors.New("intermediate_data.invocation_events: want a list of events")
	}
	for i, e := range events {
		var group []adkCall
		for j, p := range e.Content.Parts {
			fc := p.get("function_call")
			if fc == nil {
				continue
			}
			var fo adkObject
			if err := json.Unmarshal(fc, &fo); err != nil {
				return t, fmt.Errorf("intermediate_data.invocation_events[%d].content.parts[%d].function_call: want an object", i, j)
			}
			call, err := parseFunctionCall(fo)
			if err != nil {
				return t, fmt.Errorf("intermediate_data.invocation_events[%d].content.parts[%d].function_call.%w", i, j, err)
			}
			group = append(group, call)
		}
		if group != nil {
			t.calls = append(t.calls, group)
		}
	}
	return t, nil
}

// parseFunctionCall reads a FunctionCall: its name and its args.
func parseFunctionCall(o adkObject) (adkCall, error) {
	var c adkCall
	if err := o.decode("name", &c.name); err != nil || c.name == "" {
		return c, errors.New("name: want the tool's name")
	}
	if err := o.decode("args", &c.args); err != nil {
		return c, errors.New("args: want an object")
	}
	return c, nil
}

// parseADKQueries reads ADK's older format: a list of queries (one
// case, named name), or a list of cases ({"name", "data": [queries]}).
func parseADKQueries(b []byte, name string) ([]adkCase, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, fmt.Errorf("want a list of queries (ADK's older format): %w", err)
	}
	if len(items) == 0 {
		return nil, errors.New("an empty list of queries")
	}
	if _, ok := items[0]["data"]; !ok {
		c, err := parseQueries(items, "")
		c.id = name
		return []adkCase{c}, err
	}
	var out []adkCase
	var errs []error
	for i, item := range items {
		var n string
		var queries []map[string]json.RawMessage
		if err := json.Unmarshal(item["name"], &n); err != nil || strings.TrimSpace(n) == "" {
			errs = append(errs, fmt.Errorf("[%d].name: want the case's name", i))
			continue
		}
		if err := json.Unmarshal(item["data"], &queries); err != nil {
			errs = append(errs, fmt.Errorf("[%d].data: want a list of queries", i))
			continue
		}
		c, err := parseQueries(queries, fmt.Sprintf("[%d].data", i))
		c.id = n
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// parseQueries reads the queries of one case of the older format —
// query, expected_tool_use ({tool_name, tool_input}), reference — at
// where in the file ("" for the top).
func parseQueries(items []map[string]json.RawMessage, where string) (adkCase, error) {
	var c adkCase
	for i, q := range items {
		at := fmt.Sprintf("%s[%d]", where, i)
		var t adkTurn
		if err := json.Unmarshal(q["query"], &t.prompt); err != nil || strings.TrimSpace(t.prompt) == "" {
			return c, fmt.Errorf("%s.query: want the user's text", at)
		}
		if r, ok := q["reference"]; ok {
			if err := json.Unmarshal(r, &t.reference); err != nil {
				return c, fmt.Errorf("%s.reference: want a text", at)
			}
		}
		var uses []struct {
			Name  string                     `json:"tool_name"`
			Input map[string]json.RawMessage `json:"tool_input"`
		}
		if u, ok := q["expected_tool_use"]; ok {
			if err := json.Unmarshal(u, &uses); err != nil {
				return c, fmt.Errorf("%s.expected_tool_use: want a list of {tool_name, tool_input}", at)
			}
		}
		for j, u := range uses {
			if u.Name == "" {
				return c, fmt.Errorf("%s.expected_tool_use[%d].tool_name: want the tool's name", at, j)
			}
			t.calls = append(t.calls, []adkCall{{name: u.Name, args: u.Input}})
		}
		c.turns = append(c.turns, t)
	}
	return c, nil
}

// adkContent is a genai Content: its parts.
type adkContent struct {
	Parts []adkObject `json:"parts"`
}

// text is the content's text: its parts' texts, a line each, as ADK's
// evaluators join them.
func (c adkContent) text() string {
	var texts []string
	for _, p := range c.Parts {
		var s string
		if json.Unmarshal(p.get("text"), &s) == nil && s != "" {
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n")
}

// adkObject is a JSON object of ADK's, whose fields may be named in
// snake_case or camelCase (ADK's models take either).
type adkObject map[string]json.RawMessage

// get is the field named snake (or its camelCase name); nil if absent or
// null.
func (o adkObject) get(snake string) json.RawMessage {
	v, ok := o[snake]
	if !ok {
		v = o[camelCase(snake)]
	}
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	return v
}

// decode decodes the field named snake into v; an absent or null field
// leaves v as it is.
func (o adkObject) decode(snake string, v any) error {
	b := o.get(snake)
	if b == nil {
		return nil
	}
	return json.Unmarshal(b, v)
}

// camelCase is snake_case's camelCase: eval_cases → evalCases.
func camelCase(snake string) string {
	parts := strings.Split(snake, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
