package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// A client with no structured-output mechanism of its own is offered the
// final-answer tool: an input that does not hold and a text answer each
// go back with what is wrong, a valid input is the answer, and the
// conversation stays one a provider takes (the next turn goes on from it,
// without the tool).
func TestOutputThroughTheFinalAnswerTool(t *testing.T) {
	use := func(id, input string) *llm.Response {
		return &llm.Response{StopReason: llm.StopToolUse, Message: llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Block{llm.ToolUseBlock(id, agent.OutputToolName, json.RawMessage(input))}}}
	}
	text := func(s string) *llm.Response {
		return &llm.Response{StopReason: llm.StopEndTurn, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(s)}}}
	}
	replies := []*llm.Response{use("o1", `{"city": 1}`), text("Oslo, 4 degrees."), use("o2", `{"city": "Oslo", "celsius": 4}`), text("Anything else?")}
	var reqs []*llm.Request
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
		reqs = append(reqs, req)
		return replies[len(reqs)-1], nil
	})
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "o"}, agent.Collaborators{Client: client, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"integer"}},"required":["city","celsius"]}`)
	ex := agent.NewExecutor()
	res, err := ex.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "weather?", Output: &agent.Output{Name: "forecast", Schema: schema}})
	if err != nil || res.StopReason != agent.StopAnswered || string(res.Output) != `{"city":"Oslo","celsius":4}` {
		t.Fatalf("%+v, %v", res, err)
	}
	for i, r := range reqs[:3] {
		if r.Output != nil || !slices.ContainsFunc(r.Tools, func(d llm.ToolDefinition) bool {
			return d.Name == agent.OutputToolName && string(d.InputSchema) == string(schema)
		}) {
			t.Errorf("request %d: output %v, tools %d", i, r.Output, len(r.Tools))
		}
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Content[0]; !last.IsError || last.ToolUseID != "o1" || !strings.Contains(last.Content, "at /city") {
		t.Errorf("the tool's refusal: %+v", last)
	}
	if last := reqs[2].Messages[len(reqs[2].Messages)-1].Text(); !strings.Contains(last, "came as text, not through "+agent.OutputToolName) {
		t.Errorf("the text answer's correction: %q", last)
	}
	if end := res.Transcript[len(res.Transcript)-1].Content[0]; end.ToolUseID != "o2" || end.IsError {
		t.Errorf("the accepted call's result: %+v", end)
	}

	res, err = ex.Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "thanks", History: res.Transcript})
	if err != nil || res.StopReason != agent.StopAnswered || res.Output != nil || res.Answer != "Anything else?" {
		t.Fatalf("the next turn: %+v, %v", res, err)
	}
	if slices.ContainsFunc(reqs[3].Tools, func(d llm.ToolDefinition) bool { return d.Name == agent.OutputToolName }) {
		t.Error("the next turn, which asks for no output, was offered the final-answer tool")
	}
}

// A schema that is not an object schema, or does not compile, fails the
// build (on the definition) or the turn (on the request), naming it.
func TestOutputSchemaErrors(t *testing.T) {
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
		t.Error("the model was called")
		return nil, context.Canceled
	})
	for _, schema := range []string{`{"type":"string"}`, `{"type":"object","properties":{"a":{"type":"nope"}}}`, `not json`} {
		_, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "o", Output: &agent.Output{Name: "plan", Schema: json.RawMessage(schema)}}, agent.Collaborators{Client: client, FS: fs})
		if err == nil || !strings.Contains(err.Error(), "output plan") {
			t.Errorf("%s: %v", schema, err)
		}
	}
	if _, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "o", Output: &agent.Output{Name: "no spaces", Schema: json.RawMessage(`{"type":"object"}`)}}, agent.Collaborators{Client: client, FS: fs}); err == nil {
		t.Error("a name with a space was taken")
	}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "o"}, agent.Collaborators{Client: client, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, _ := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", Output: &agent.Output{Schema: json.RawMessage(`{"type":"array"}`)}})
	if res.StopReason != agent.StopFailed || !strings.Contains(res.Err.Error(), "output answer") {
		t.Errorf("%+v", res)
	}
}

// native is a client with a structured-output mechanism of its own.
type native struct{ llm.ClientFunc }

func (native) NativeOutput() bool { return true }

// A client with a mechanism gets the schema on the request, strict only
// when every object of it requires all its properties and allows no
// others; the answer's text is checked.
func TestOutputNativeStrict(t *testing.T) {
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var got []*llm.Output
	client := native{func(ctx context.Context, req *llm.Request, _ func(llm.Delta)) (*llm.Response, error) {
		got = append(got, req.Output)
		return &llm.Response{StopReason: llm.StopEndTurn, Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("```json\n{\"a\": \"x\", \"b\": {\"c\": 1}}\n```")}}}, nil
	}}
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "o"}, agent.Collaborators{Client: client, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tc := range []struct {
		schema string
		strict bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"],"additionalProperties":false}},"required":["a","b"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"]}},"required":["a","b"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object"}},"required":["a"],"additionalProperties":false}`, false},
	} {
		got = nil
		res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", Output: &agent.Output{Schema: json.RawMessage(tc.schema)}})
		if err != nil || string(res.Output) != `{"a":"x","b":{"c":1}}` {
			t.Fatalf("%+v, %v", res, err)
		}
		if len(got) != 1 || got[0] == nil || got[0].Strict != tc.strict || got[0].Name != "answer" {
			t.Errorf("%s: sent %+v, want strict %v", tc.schema, got, tc.strict)
		}
	}
}

// ReadOutput names the output after its file, drops a byte order mark,
// and refuses, naming the file, what a turn would refuse and a file too
// big to be a schema.
func TestReadOutput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	o, err := agent.ReadOutput(write("my weather.v2.json", "\uFEFF"+`{"type": "object"}`))
	if err != nil || o.Name != "my_weather_v2" || string(o.Schema) != `{"type": "object"}` {
		t.Fatalf("ReadOutput = %+v, %v", o, err)
	}
	for name, content := range map[string]string{
		"array.json":  `{"type": "array"}`,
		"broken.json": `{"type": `,
		"big.json":    `{"type": "object", "description": "` + strings.Repeat("x", 1<<20) + `"}`,
	} {
		path := write(name, content)
		if _, err := agent.ReadOutput(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadOutput(%s) = %v, want an error naming the file", name, err)
		}
	}
	if err := (&agent.Output{Name: "no spaces", Schema: json.RawMessage(`{"type": "object"}`)}).Check(); err == nil {
		t.Error("Check accepted a name with a space")
	}
}
