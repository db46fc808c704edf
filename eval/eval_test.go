package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/eval"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "write docs/eval.schema.json")

// The documented schema is the format's, and the repository's suites
// hold to it.
func TestSchemaFile(t *testing.T) {
	b, err := eval.Schema()
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	const file = "../docs/eval.schema.json"
	if *update {
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if on, err := os.ReadFile(file); err != nil || !bytes.Equal(on, b) {
		t.Fatalf("%s is not eval.Schema() (%v): go test ./eval -run TestSchemaFile -update", file, err)
	}
	schema, err := tool.CompileSchema("eval", b)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../examples/eval/*.eval.json")
	if len(files) < 4 {
		t.Fatalf("example suites: %v", files)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if err := schema.Validate(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if err := schema.Validate(json.RawMessage(`{"name": "x", "turns": [{"prompt": "hi"}], "expect": {"stop_reason": "answered"}}`)); err != nil {
		t.Errorf("one case: %v", err)
	}
	if err := schema.Validate(json.RawMessage(`{"cases": [{"name": "x", "turns": [{"prompt": "hi"}], "expct": {}}]}`)); err == nil {
		t.Error("a misspelt field passed the schema")
	}
}

// What is wrong with a file is said, naming the case and the field.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ in, says string }{
		{`[]`, "not a JSON object"},
		{`{"cases": []}`, "no cases"},
		{`{"cases": [{"name": "a", "turns": [{"prompt": "p"}], "expct": {}}]}`, `unknown field "expct"`},
		{`{"cases": [{"name": "a", "turns": []}]}`, `case "a": no turns`},
		{`{"cases": [{"name": "a", "turns": [{"prompt": " "}]}]}`, `case "a": turns[0]: no prompt`},
		{`{"cases": [{"name": "a", "turns": [{"prompt": "p"}]}, {"name": "a", "turns": [{"prompt": "p"}]}]}`, "a second case of that name"},
		{`{"cases": [{"name": "a", "mode": "yolo", "turns": [{"prompt": "p"}]}]}`, `mode: unknown permission mode "yolo"`},
		{`{"cases": [{"name": "a", "files": {"../x": "y"}, "turns": [{"prompt": "p"}]}]}`, `files: "../x" is not a path inside the workspace`},
		{`{"cases": [{"name": "a", "turns": [{"prompt": "p", "expect": {"trajectory": {"match": "fuzzy", "calls": []}}}]}]}`, "trajectory.match: want exact, in_order or any_order"},
		{`{"cases": [{"name": "a", "turns": [{"prompt": "p", "expect": {"answer": {"matches": "("}}}]}]}`, "answer: matches"},
		{`{"gates": ["vibes"], "cases": [{"name": "a", "turns": [{"prompt": "p"}]}]}`, `gates: "vibes" is no scorer`},
		{`{"cases": [{"name": "a", "routes": {"planner": []}, "turns": [{"prompt": "p"}]}]}`, `routes: "planner" is no route`},
		{`{"cases": [{"name": "a", "budget": {"tool_calls": -1}, "turns": [{"prompt": "p"}]}]}`, "budget:"},
	} {
		_, err := eval.Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it saying %s", c.in, err, c.says)
		}
	}
}

// A library user's scorer runs beside a case's own, over what the run
// recorded; trajectory matching is exact, in order or any order.
func TestScorersOverARun(t *testing.T) {
	s, err := eval.Parse([]byte(`{"cases": [{"name": "reads twice", "files": {"a.txt": "alpha\n", "b.txt": "beta\n"}, "turns": [{"prompt": "read both",
		"responses": [{"tool_calls": [{"name": "Read", "input": {"file_path": "${WORKSPACE}/a.txt"}}]}, {"tool_calls": [{"name": "Read", "input": {"file_path": "${WORKSPACE}/b.txt"}}]}, {"text": "alpha, beta"}],
		"expect": {"trajectory": {"match": "any_order", "calls": [{"tool": "Read", "args_match": {"file_path": "b\\.txt$"}}, {"tool": "Read", "args_match": {"file_path": "a\\.txt$"}}, {"tool": "Grep"}]}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = t.TempDir()
	var seen []string
	reads := eval.ScorerFunc("reads", func(_ context.Context, v *eval.View) (float64, string) {
		for _, c := range v.Calls() {
			seen = append(seen, c.Tool+":"+strings.TrimSpace(c.Result))
		}
		if len(v.Calls()) != 2 {
			return 0, "want two reads"
		}
		return 1, ""
	})
	rep, err := eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Scorers: []eval.Scorer{reads}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Suites[0].Cases[0].Runs[0]
	byName := map[string]eval.Score{}
	for _, sc := range run.Scores {
		byName[sc.Scorer] = sc
	}
	if sc := byName["trajectory"]; sc.Pass || sc.Value < 0.66 || sc.Value > 0.67 || !strings.Contains(sc.Detail, "missing Grep") {
		t.Errorf("trajectory: %+v, want 2 of 3 found, Grep missing", sc)
	}
	if sc := byName["reads"]; !sc.Pass || len(seen) != 2 || !strings.Contains(seen[0], "alpha") || !strings.Contains(seen[1], "beta") {
		t.Errorf("the library scorer: %+v, saw %v", sc, seen)
	}
	if rep.Passed || rep.Suites[0].PassRate != 0 {
		t.Errorf("the report passed: %+v", rep.Suites[0])
	}
	// The suite's threshold for a scorer: two of three calls found pass
	// at 0.6.
	s.Thresholds = map[string]float64{"trajectory": 0.6}
	rep, err = eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Parallel: 1})
	if err != nil || !rep.Passed {
		t.Errorf("with the threshold: %v %+v", err, rep.Suites[0].Cases[0].Runs[0].Scores)
	}
	if _, err := eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Repeat: 3}); err == nil || !strings.Contains(err.Error(), "--repeat is for live runs") {
		t.Errorf("a replay repeated: %v", err)
	}
}

// A turn's attachments are shown to the model with its prompt.
func TestAttachmentsReachTheModel(t *testing.T) {
	dir := t.TempDir()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pic.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := eval.Parse([]byte(`{"name": "x", "turns": [{"prompt": "What is in the picture?", "attachments": ["pic.png"], "responses": [{"text": "A black square."}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = dir
	shown := eval.ScorerFunc("shown", func(_ context.Context, v *eval.View) (float64, string) {
		for _, blk := range v.Run().Transcript[0].Content {
			if blk.Type == llm.BlockImage {
				return 1, ""
			}
		}
		return 0, "no image in the first message"
	})
	rep, err := eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{Scorers: []eval.Scorer{shown}})
	if err != nil || !rep.Passed {
		t.Fatalf("%v %+v", err, rep.Suites[0].Cases[0].Runs[0])
	}
	s.Cases[0].Turns[0].Attachments = []string{"missing.png"}
	rep, _ = eval.Run(t.Context(), []*eval.Suite{s}, eval.Options{})
	if r := rep.Suites[0].Cases[0].Runs[0]; r.Passed || !strings.Contains(r.Error, "attachment missing.png") {
		t.Errorf("a missing attachment: %+v", r)
	}
}
