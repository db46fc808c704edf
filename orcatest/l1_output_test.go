package orcatest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/orcatest"
	"github.com/orca-agent/orca/session"
)

// L1: typed results through the real runtime.

type forecast struct {
	City    string   `json:"city" jsonschema:"the city"`
	Celsius int      `json:"celsius"`
	Notes   []string `json:"notes"`
}

// A turn that asks for a Go type reads a file, answers with a value of
// it, and the value decodes; the request carried the schema, and the
// answer is the value's JSON.
func TestL1_TypedResult(t *testing.T) {
	out, err := agent.OutputFor[forecast]()
	if err != nil {
		t.Fatal(err)
	}
	n := orcatest.NewNode(t)
	n.WriteFile("weather.txt", "Oslo: 4 degrees, rain\n")
	n.Script("s",
		script.Call("Read", map[string]string{"file_path": "weather.txt"}),
		script.Output(`{"city": "Oslo", "celsius": 4, "notes": ["rain"]}`))
	res, err := n.Open("s").Run(t.Context(), "What is the weather in Oslo?", session.WithOutput(out))
	if err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v, %v", res, err)
	}
	var f forecast
	if err := res.Decode(&f); err != nil || f.City != "Oslo" || f.Celsius != 4 || len(f.Notes) != 1 {
		t.Errorf("decoded %+v, %v", f, err)
	}
	if res.Answer != `{"city":"Oslo","celsius":4,"notes":["rain"]}` || string(res.Output) != res.Answer {
		t.Errorf("answer %q, output %s", res.Answer, res.Output)
	}
	for i, c := range n.LLM.CallsTo("s") {
		if c.Output == nil || c.Output.Name != "answer" || !strings.Contains(string(c.Output.Schema), `"celsius"`) || !c.Output.Strict {
			t.Errorf("call %d: output %+v", i, c.Output)
		}
	}
}

// An answer that does not hold goes back to the model with what is wrong,
// and the corrected one is the result; one that still does not hold after
// the cap ends the turn failed with the last errors, and no value.
func TestL1_TypedResultCorrected(t *testing.T) {
	out, _ := agent.OutputFor[forecast]()
	n := orcatest.NewNode(t)
	n.Script("s",
		script.Output(`{"city": "Oslo", "celsius": "cold", "notes": []}`),
		script.Text("It is 4 degrees in Oslo."),
		script.Output(`{"city": "Oslo", "celsius": 4, "notes": []}`))
	res, err := n.Open("s").Run(t.Context(), "weather?", session.WithOutput(out))
	if err != nil || res.StopReason != agent.StopAnswered || string(res.Output) != `{"city":"Oslo","celsius":4,"notes":[]}` {
		t.Fatalf("%+v, %v", res, err)
	}
	calls := n.LLM.CallsTo("s")
	if fb := calls[1].Messages[len(calls[1].Messages)-1].Text(); !strings.Contains(fb, "at /celsius") || !strings.Contains(fb, "JSON value") {
		t.Errorf("first correction: %q", fb)
	}
	if fb := calls[2].Messages[len(calls[2].Messages)-1].Text(); !strings.Contains(fb, "not valid JSON") {
		t.Errorf("second correction: %q", fb)
	}

	n.Script("f",
		script.Output(`{"city": 1}`), script.Output(`{"city": 2}`), script.Output(`{"city": "Oslo", "celsius": 4}`))
	res, _ = n.Open("f").Run(t.Context(), "weather?", session.WithOutput(out))
	if res == nil || res.StopReason != agent.StopFailed || !errors.Is(res.Err, agent.ErrInvalidOutput) || !strings.Contains(res.Err.Error(), "notes") ||
		res.Output != nil || res.Answer != "" {
		t.Fatalf("%+v", res)
	}
	if res.Decode(&forecast{}) == nil {
		t.Error("a failed turn decoded")
	}
}

// A Task fork asked for a typed result (output_schema) answers with a
// value of it — corrected once here — and the value is the Task's result.
func TestL1_TaskTypedResult(t *testing.T) {
	n := orcatest.NewNode(t)
	n.Script("s",
		script.Call("Task", map[string]any{"description": "count", "prompt": "Count the Go files.", "subagent_type": "general-purpose",
			"output_schema": map[string]any{"type": "object", "properties": map[string]any{"files": map[string]any{"type": "integer"}}, "required": []string{"files"}}}),
		script.Text("done"))
	n.Script(script.ForkRoute("s", "general-purpose"), script.Output(`{"files": "three"}`), script.Output(`{"files": 3}`))
	if res, err := n.Open("s").Run(t.Context(), "count"); err != nil || res.StopReason != agent.StopAnswered {
		t.Fatalf("%+v, %v", res, err)
	}
	forks := n.LLM.CallsTo(script.ForkRoute("s", "general-purpose"))
	if len(forks) != 2 || forks[0].Output == nil || forks[0].Output.Name != "task" {
		t.Fatalf("fork calls %d, output %+v", len(forks), forks[0].Output)
	}
	if obs := n.LLM.CallsTo("s")[1].Observations(); len(obs) != 1 || obs[0].Content != `{"files":3}` || obs[0].IsError {
		t.Errorf("the Task's result: %+v", obs)
	}
}
