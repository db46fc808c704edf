package responses_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/openai/responses"
	"github.com/orca-agent/orca/toolset"
)

// The encrypted reasoning of the fake's answers: opaque bytes, as the API
// gives them (a Fernet token, URL-safe base64).
const (
	encryptedA = "gAAAAABqPBJWAIvEAmUTQCqLSmR9FPLSaCOTK3cpkKjorwAKVNzysthKw3djyrJ2Q0YC2MCprWw3B5aMyujyhSjp9ulmQZNuRfLtd2e_6eIVdk2Z4IXi9KUF9yMD6CyxZH9vCYUexn-EQK8eABozQY8jMF2WSDq=="
	encryptedB = "gAAAAABqPBJcKfP7v0YMwSxc8wKU2ENQiAD85ZKhtt3Nnoew5TYz_F6XMiSk-RRoH3I2d8fIHXALYQzvCayS6FsAf8-VnXrEJL8d2fF6OLBbXI3DERkcebxt8D53I7vds-1er127wynKn9Qmtbv=="
)

// toolTurn is a reasoning model's answer that calls a tool: a reasoning
// item whose summary has two parts, then two function calls.
var toolTurn = llm.Response{
	Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		{Type: llm.BlockRedactedThinking, ID: "rs_0a1", Signature: encryptedA, Thinking: "**Reading the files**\n\nThe user wants the bug in a.go fixed; I should read a.go and its test first."},
		{Type: llm.BlockRedactedThinking, ID: "rs_0a1", Thinking: "**Planning**\n\nBoth reads can go at once."},
		llm.ToolUseBlock("call_R1", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
		llm.ToolUseBlock("call_R2", "Read", json.RawMessage(`{"file_path":"a_test.go"}`)),
	}},
	StopReason: llm.StopToolUse,
	Usage:      llm.Usage{InputTokens: 120, OutputTokens: 250, CacheReadTokens: 1024},
}

// A tool-calling conversation of two requests against a reasoning model:
// the first response's reasoning item becomes two redacted_thinking blocks
// (one per summary part) with the item's id, the first with its encrypted
// content; the second request sends back, in place — before the function
// calls it preceded — the reasoning item exactly as the API gave it, then
// the function calls and their outputs, matched by call_id.
func TestReasoningRoundTrip(t *testing.T) {
	api := newFakeAPI(t, answer{resp: toolTurn}, answer{resp: textResponse("Fixed: the loop was off by one.")})
	req := &llm.Request{
		Model:    "gpt-6.1-terra",
		System:   "You are a careful coding agent.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Fix the bug in a.go.")}}},
		Tools:    []llm.ToolDefinition{{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}},
	}
	resp, deltas := generate(t, api.v1(), req)
	if !reflect.DeepEqual(resp.Message, toolTurn.Message) {
		t.Fatalf("message %+v\nwant %+v", resp.Message, toolTurn.Message)
	}
	if resp.StopReason != llm.StopToolUse || resp.Usage != toolTurn.Usage || resp.Model != fakeModel || resp.ID != "resp_0fake" {
		t.Errorf("stop %q, usage %+v, model %q, id %q", resp.StopReason, resp.Usage, resp.Model, resp.ID)
	}
	for _, d := range deltas {
		if d.Index < 2 {
			t.Errorf("a delta for a reasoning block: %+v", d)
		}
	}
	if w := api.body(t, 0); len(w.Include) != 1 || w.Include[0] != "reasoning.encrypted_content" {
		t.Errorf("first request's include %v", w.Include)
	}

	next := *req
	next.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.ToolResultBlock("call_R1", "package a", false),
		llm.ToolResultBlock("call_R2", "package a_test", false),
	}})
	if _, err := newClient(t, api.v1()).Generate(t.Context(), &next, nil); err != nil {
		t.Fatal(err)
	}

	// The second request's input, item for item.
	var body struct{ Input []json.RawMessage }
	if err := json.Unmarshal(api.raw(t, 1), &body); err != nil {
		t.Fatal(err)
	}
	// The reasoning item exactly as the fake's output_item.done gave it.
	sentItem := `{"id":"rs_0a1","type":"reasoning","encrypted_content":"` + encryptedA + `","summary":[` +
		`{"type":"summary_text","text":"**Reading the files**\n\nThe user wants the bug in a.go fixed; I should read a.go and its test first."},` +
		`{"type":"summary_text","text":"**Planning**\n\nBoth reads can go at once."}]}`
	want := []string{
		`{"role":"user","content":[{"type":"input_text","text":"Fix the bug in a.go."}]}`,
		sentItem,
		`{"type":"function_call","call_id":"call_R1","name":"Read","arguments":"{\"file_path\":\"a.go\"}"}`,
		`{"type":"function_call","call_id":"call_R2","name":"Read","arguments":"{\"file_path\":\"a_test.go\"}"}`,
		`{"type":"function_call_output","call_id":"call_R1","output":"package a"}`,
		`{"type":"function_call_output","call_id":"call_R2","output":"package a_test"}`,
	}
	if len(body.Input) != len(want) {
		t.Fatalf("second request's input has %d items, want %d: %s", len(body.Input), len(want), api.raw(t, 1))
	}
	for i, w := range want {
		if !jsonEqual(body.Input[i], []byte(w)) {
			t.Errorf("input item %d = %s\nwant %s", i, body.Input[i], w)
		}
	}
	var reasoning struct {
		EncryptedContent string `json:"encrypted_content"`
	}
	if json.Unmarshal(body.Input[1], &reasoning); reasoning.EncryptedContent != encryptedA {
		t.Errorf("the encrypted content went back as %q", reasoning.EncryptedContent)
	}
}

// Reasoning that cannot go back is left out: with store: false, a
// reasoning item without encrypted content (OpenAI keeps nothing to find
// it by); with Store, it goes back by id.
func TestReasoningWithoutEncryptedContent(t *testing.T) {
	history := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockRedactedThinking, ID: "rs_1"}, llm.TextBlock("Hello.")}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("again")}},
	}
	for _, store := range []bool{false, true} {
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		if _, err := newClient(t, api.v1(), responses.Store(store)).Generate(t.Context(), &llm.Request{Messages: history}, nil); err != nil {
			t.Fatal(err)
		}
		w := api.body(t, 0)
		var types []string
		for _, it := range w.Input {
			types = append(types, it.Type+it.Role)
		}
		want := []string{"user", "assistant", "user"}
		if store {
			want = []string{"user", "reasoning", "assistant", "user"}
		}
		if !reflect.DeepEqual(types, want) || *w.Store != store {
			t.Errorf("store %v: input %v, want %v", store, types, want)
		}
	}
}

// The runtime against a reasoning model (a tool call, then an answer):
// the reasoning survives the turn's transcript and reaches the next
// request in place, its encrypted content unchanged.
func TestRuntimeKeepsReasoning(t *testing.T) {
	call := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockRedactedThinking, ID: "rs_77", Signature: encryptedB, Thinking: "**Checking the time**\n\nlocal_time gives the time of a city."},
			llm.ToolUseBlock("call_T", "local_time", json.RawMessage(`{"city":"Lisbon"}`)),
		}},
		StopReason: llm.StopToolUse,
	}
	api := newFakeAPI(t, answer{resp: call}, answer{resp: textResponse("I could not read the time in Lisbon.")})
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "responses", Model: "gpt-6.1-terra"},
		agent.Collaborators{Client: newClient(t, api.v1()), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s1", Input: "What time is it in Lisbon?"})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if res.StopReason != agent.StopAnswered || res.Answer != "I could not read the time in Lisbon." || res.Iterations != 2 {
		t.Fatalf("stop %s, answer %q, %d iterations, err %v", res.StopReason, res.Answer, res.Iterations, res.Err)
	}
	w := api.body(t, 1)
	var at = -1
	for i, it := range w.Input {
		if it.Type == "reasoning" {
			at = i
		}
	}
	if at < 0 || at+1 >= len(w.Input) || w.Input[at].ID != "rs_77" || w.Input[at].EncryptedContent == nil || *w.Input[at].EncryptedContent != encryptedB ||
		len(w.Input[at].Summary) != 1 || w.Input[at+1].Type != "function_call" || w.Input[at+1].CallID != "call_T" {
		t.Errorf("the second request's input: %s", api.raw(t, 1))
	}
}
