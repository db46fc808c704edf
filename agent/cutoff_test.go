package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/event"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/script"
	"github.com/orca-agent/orca/toolset"
	"github.com/orca-agent/orca/workspace"
)

// recordingClient answers with responses in order and keeps a copy of each
// request.
func recordingClient(responses ...*llm.Response) (llm.Client, func() []*llm.Request) {
	var mu sync.Mutex
	var requests []*llm.Request
	c := llm.ClientFunc(func(ctx context.Context, req *llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		r := *req
		r.Messages = slices.Clone(req.Messages)
		requests = append(requests, &r)
		return responses[len(requests)-1], nil
	})
	return c, func() []*llm.Request {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(requests)
	}
}

// testRuntime builds a runtime of def on client in a workspace of its
// own, with the test tools (testTools); calls returns the tools' runs so
// far. Both are closed when t ends.
func testRuntime(t *testing.T, def agent.Definition, client llm.Client) (rt *agent.Runtime, calls func() []string) {
	t.Helper()
	fs, err := workspace.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	var mu sync.Mutex
	var ran []string
	def.ToolProviders = append(def.ToolProviders, testTools(&ran, &mu, blocked))
	rt, err = agent.New(def, agent.Collaborators{Client: client, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ran)
	}
}

// A response cut off at the output token limit while it called tools runs
// none of its calls: the last call's input is cut short (or, worse, cut
// where it still parses: a file written half), and the model asked for
// them together. Each is refused, saying why, and the model goes on. A
// server that reports such a response as complete is caught by its usage:
// exactly the limit used.
func TestCutOffResponseRunsNoneOfItsCalls(t *testing.T) {
	echo := func(id, in string) llm.Block { return llm.ToolUseBlock(id, "Echo", json.RawMessage(in)) }
	client, requests := recordingClient(
		&llm.Response{Message: llm.Message{Content: []llm.Block{echo("a", `{"text":"whole"}`), echo("b", `{"text":"cut he`)}},
			StopReason: llm.StopMaxTokens, Usage: llm.Usage{OutputTokens: 200}},
		// The server says tool_use, but the output used the whole limit.
		&llm.Response{Message: llm.Message{Content: []llm.Block{echo("c", `{"text":"first half"}`)}},
			StopReason: llm.StopToolUse, Usage: llm.Usage{OutputTokens: 200}},
		&llm.Response{Message: llm.Message{Content: []llm.Block{echo("d", `{"text":"small"}`)}},
			StopReason: llm.StopToolUse, Usage: llm.Usage{OutputTokens: 199}},
		// More than the limit is no sign: a client may raise the cap it
		// sends (the thinking budget).
		&llm.Response{Message: llm.Message{Content: []llm.Block{echo("e", `{"text":"thought"}`)}},
			StopReason: llm.StopToolUse, Usage: llm.Usage{OutputTokens: 5000}},
		&llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock("done")}}, StopReason: llm.StopEndTurn},
	)
	rt, calls := testRuntime(t, agent.Definition{Name: "cut", MaxTokens: 200, MaxIterations: 6}, client)
	var refused []string
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go", OnEvent: func(ev event.Event) {
		if d, ok := ev.Data.(*event.ToolBlockedData); ok {
			refused = append(refused, d.ToolUseID+" by "+d.By)
		}
	}})
	if err != nil || res.StopReason != agent.StopAnswered || res.Answer != "done" {
		t.Fatalf("turn: %s %q, %v (%v)", res.StopReason, res.Answer, err, res.Err)
	}
	if want := []string{"Echo:small", "Echo:thought"}; !slices.Equal(calls(), want) {
		t.Errorf("calls run %q, want %q", calls(), want)
	}
	if want := []string{"a by max_tokens", "b by max_tokens", "c by max_tokens"}; !slices.Equal(refused, want) {
		t.Errorf("tool_blocked %q, want %q", refused, want)
	}
	reqs := requests()
	results := map[string]llm.Block{}
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				results[b.ToolUseID] = b
			}
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		r := results[id]
		if !r.IsError || !strings.Contains(r.Content, "cut off at the output token limit (200 tokens)") || !strings.Contains(r.Content, "none of its tool calls ran") {
			t.Errorf("result of %s: %+v", id, r)
		}
	}
	if r := results["d"]; r.IsError || r.Content != "echo: small" {
		t.Errorf("result of d: %+v", r)
	}
}

// An answer cut off at the output token limit ends the turn as
// max_tokens: what the model wrote is the answer, said to be cut; it is
// not taken for a structured output (sending it back to be corrected
// would cut it again).
func TestCutOffAnswerEndsTheTurn(t *testing.T) {
	for _, structured := range []bool{false, true} {
		client, requests := recordingClient(
			&llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock(`{"summary": "The answer is cut her`)}}, StopReason: llm.StopMaxTokens},
		)
		rt, _ := testRuntime(t, agent.Definition{Name: "cut"}, client)
		req := agent.Request{SessionID: "s", Input: "go"}
		if structured {
			out, err := agent.OutputFor[struct {
				Summary string `json:"summary"`
			}]()
			if err != nil {
				t.Fatal(err)
			}
			req.Output = out
		}
		res, err := agent.NewExecutor().Execute(t.Context(), rt, req)
		if err != nil || res.StopReason != agent.StopMaxTokens {
			t.Fatalf("structured %v: %s, %v (%v)", structured, res.StopReason, err, res.Err)
		}
		if res.Answer != `{"summary": "The answer is cut her` || res.Output != nil || len(requests()) != 1 {
			t.Errorf("structured %v: answer %q, output %s, %d requests", structured, res.Answer, res.Output, len(requests()))
		}
		if want := "the answer was cut off at the output token limit (8192 tokens)"; res.Reason != want {
			t.Errorf("structured %v: reason %q, want %q", structured, res.Reason, want)
		}
	}
}

// A subagent whose answer is cut off at the output token limit still gives
// the parent what it wrote, said to be cut, rather than an error that
// loses it.
func TestForkAnswerCutOff(t *testing.T) {
	c := script.New()
	c.Script(script.ForkRoute("s", "scout"), script.Response{Text: "Found three callers: a.go, b.g", StopReason: llm.StopMaxTokens})
	c.Script("s", script.Call("Task", map[string]any{"description": "d", "prompt": "go", "subagent_type": "scout"}), script.Text("all done"))
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "parent", Subagents: definitions(t, map[string]string{"scout": ""})},
		agent.Collaborators{Client: c, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "delegate"})
	if err != nil || res.Answer != "all done" {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	calls := c.CallsTo("s")
	var result llm.Block
	for _, m := range calls[len(calls)-1].Messages {
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				result = b
			}
		}
	}
	if result.IsError || !strings.Contains(result.Content, "Found three callers: a.go, b.g\n\n[the answer was cut off at the output token limit (8192 tokens)]") {
		t.Errorf("the Task result: %+v", result)
	}
}

// The limit is named in words that read: one token, not "1 tokens".
func TestCutOffAtOneToken(t *testing.T) {
	client, _ := recordingClient(&llm.Response{Message: llm.Message{Content: []llm.Block{llm.TextBlock("cu")}}, StopReason: llm.StopMaxTokens})
	rt, _ := testRuntime(t, agent.Definition{Name: "cut", MaxTokens: 1}, client)
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s", Input: "go"})
	if err != nil || res.StopReason != agent.StopMaxTokens || res.Reason != "the answer was cut off at the output token limit (1 token)" {
		t.Errorf("turn: %s %q, %v", res.StopReason, res.Reason, err)
	}
}
