package openai_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/orca-agent/orca/agent"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/toolset"
)

// replayAPI is an httptest server that answers POST /v1/chat/completions
// with given streams: request n gets stream n, the last one repeating,
// each chunk framed as a server-sent event (data: <chunk>) and the stream
// ended with data: [DONE], as the API does. The streams are written in
// the shapes real servers send, in testdata/*.chunks.txt (one chunk's JSON
// a line; testdata/README.md says which shape each reproduces) or out in
// the test. It keeps the bodies it received.
type replayAPI struct {
	*httptest.Server
	streams [][]string
	mu      sync.Mutex
	bodies  [][]byte
}

func newReplayAPI(t *testing.T, streams ...[]string) *replayAPI {
	t.Helper()
	f := &replayAPI{streams: streams}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// chunks returns the chunks of testdata/name.
func chunks(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	for line := range bytes.Lines(b) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			chunks = append(chunks, string(line))
		}
	}
	return chunks
}

func (f *replayAPI) v1() string { return f.URL + "/v1" }

func (f *replayAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, chunk := range f.streams[min(n, len(f.streams)-1)] {
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *replayAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// body returns the JSON body of request i, decoded.
func (f *replayAPI) body(t *testing.T, i int) wireRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		t.Fatalf("the API saw %d requests; want request %d", len(f.bodies), i)
	}
	var w wireRequest
	if err := json.Unmarshal(f.bodies[i], &w); err != nil {
		t.Fatalf("request %d is not JSON: %v\n%s", i, err, f.bodies[i])
	}
	return w
}

// generate runs req against api with a client of the test's, and returns
// the response and the text the deltas streamed.
func generate(t *testing.T, api *replayAPI, req *llm.Request) (*llm.Response, string) {
	t.Helper()
	var streamed strings.Builder
	resp, err := newClient(t, api.v1()).Generate(t.Context(), req, func(d llm.Delta) {
		if d.Type == llm.DeltaText {
			streamed.WriteString(d.Text)
		}
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp, streamed.String()
}

// thinkings returns the thinking blocks of m.
func thinkings(m llm.Message) []llm.Block {
	var out []llm.Block
	for _, b := range m.Content {
		if b.Type == llm.BlockThinking {
			out = append(out, b)
		}
	}
	return out
}

// assistant returns the only assistant message of w.
func assistant(t *testing.T, w wireRequest) wireMessage {
	t.Helper()
	var found []wireMessage
	for _, m := range w.Messages {
		if m.Role == "assistant" {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d assistant messages in %+v", len(found), w.Messages)
	}
	return found[0]
}

// afterToolUse is req followed by the response's message and a result for
// each of its tool uses: the next request of a tool-calling turn.
func afterToolUse(req *llm.Request, resp *llm.Response) *llm.Request {
	next := *req
	next.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message)
	var results []llm.Block
	for _, u := range resp.Message.ToolUses() {
		results = append(results, llm.ToolResultBlock(u.ID, "14:07", false))
	}
	next.Messages = append(next.Messages, llm.Message{Role: llm.RoleUser, Content: results})
	return &next
}

const deepseekReasoning = `The question is what time it is in Lisbon now. I have no clock of my own, but local_time gives the time of a city. I'll call it for "Lisbon" and ask for the 24-hour format.`

// DeepSeek's reasoner calling a tool: its reasoning_content is
// the message's thinking, named after the field, ahead of the call; and
// the next request of the turn sends it back as the assistant message's
// reasoning_content, which DeepSeek refuses a tool-calling conversation
// without.
func TestDeepSeekToolCall(t *testing.T) {
	api := newReplayAPI(t, chunks(t, "deepseek-tool-call.chunks.txt"), chunks(t, "deepseek-tool-call.chunks.txt"))
	req := userRequest("What time is it in Lisbon?")
	req.Model = "deepseek-reasoner"
	resp, streamed := generate(t, api, req)

	c := resp.Message.Content
	if len(c) != 2 || c[0].Type != llm.BlockThinking || c[1].Type != llm.BlockToolUse {
		t.Fatalf("content %+v: want a thinking block, then the tool use", c)
	}
	if c[0].Thinking != deepseekReasoning || c[0].Name != "reasoning_content" || c[0].Signature != "" {
		t.Errorf("thinking block %+v", c[0])
	}
	if c[1].ID != "call_00_Qm4vT8rXc2LhN6sWb1ZyKe9D" || c[1].Name != "local_time" || string(c[1].Input) != `{"city": "Lisbon", "format": "24h"}` {
		t.Errorf("tool use %+v (input %s)", c[1], c[1].Input)
	}
	if streamed != "" || resp.Message.Text() != "" {
		t.Errorf("text %q, streamed %q: the reasoning is not text", resp.Message.Text(), streamed)
	}
	if resp.StopReason != llm.StopToolUse || resp.Model != "deepseek-reasoner" ||
		resp.Usage != (llm.Usage{InputTokens: 31, OutputTokens: 58, CacheReadTokens: 256}) {
		t.Errorf("stop %q, model %q, usage %+v", resp.StopReason, resp.Model, resp.Usage)
	}

	if _, err := newClient(t, api.v1()).Generate(t.Context(), afterToolUse(req, resp), nil); err != nil {
		t.Fatal(err)
	}
	a := assistant(t, api.body(t, 1))
	if a.ReasoningContent == nil || *a.ReasoningContent != deepseekReasoning {
		t.Errorf("the assistant message sent back has reasoning_content %v, want the reasoning", a.ReasoningContent)
	}
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_00_Qm4vT8rXc2LhN6sWb1ZyKe9D" || a.ToolCalls[0].Function.Arguments != `{"city": "Lisbon", "format": "24h"}` {
		t.Errorf("tool calls sent back %+v", a.ToolCalls)
	}
	if r := api.body(t, 0); len(r.Messages) != 1 {
		t.Errorf("the first request had %d messages", len(r.Messages))
	}
}

// The runtime against DeepSeek (the tool call of testdata, then an answer):
// the reasoning survives the turn's transcript and reaches the next
// request as reasoning_content.
func TestRuntimeKeepsDeepSeekReasoning(t *testing.T) {
	answer := []string{
		`{"id":"1","object":"chat.completion.chunk","created":1780312458,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"The tool failed."},"finish_reason":null}]}`,
		`{"id":"1","object":"chat.completion.chunk","created":1780312458,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"content":"I could not read the time in Lisbon."},"finish_reason":"stop"}],"usage":{"prompt_tokens":360,"completion_tokens":14,"total_tokens":374}}`,
	}
	api := newReplayAPI(t, chunks(t, "deepseek-tool-call.chunks.txt"), answer)
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "deepseek", Model: "deepseek-reasoner"},
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
	if n := api.requests(); n != 2 {
		t.Fatalf("the API saw %d requests", n)
	}
	a := assistant(t, api.body(t, 1))
	if a.ReasoningContent == nil || *a.ReasoningContent != deepseekReasoning || len(a.ToolCalls) != 1 {
		t.Errorf("the second request's assistant message: reasoning_content %v, tool calls %+v", a.ReasoningContent, a.ToolCalls)
	}
}

const cerebrasReasoning = "The user wants the support tickets that are still open. There is a tool for that, \"listOpenTickets\", which takes no parameters.\n\n" +
	"Its schema:\n- name: listOpenTickets\n- parameters: an empty object\n\nSo I will call it with {}."

// GLM on Cerebras calling a tool: its reasoning, in the reasoning field,
// is the thinking (named so) ahead of the call, and is not sent back on
// the next request, which Cerebras does not want.
func TestCerebrasGLMToolCall(t *testing.T) {
	api := newReplayAPI(t, chunks(t, "cerebras-glm-tool-call.chunks.txt"))
	req := userRequest("Which support tickets are still open?")
	req.Model = "zai-glm-4.7"
	resp, streamed := generate(t, api, req)

	c := resp.Message.Content
	if len(c) != 2 || c[0].Type != llm.BlockThinking || c[1].Type != llm.BlockToolUse {
		t.Fatalf("content %+v: want a thinking block, then the tool use", c)
	}
	if c[0].Name != "reasoning" || c[0].Thinking != cerebrasReasoning {
		t.Errorf("thinking block %+v", c[0])
	}
	if c[1].ID != "a7c03e51f" || c[1].Name != "listOpenTickets" || string(c[1].Input) != "{}" {
		t.Errorf("tool use %+v (input %s)", c[1], c[1].Input)
	}
	if streamed != "" {
		t.Errorf("streamed text %q", streamed)
	}
	if resp.StopReason != llm.StopToolUse || resp.Usage != (llm.Usage{InputTokens: 170, OutputTokens: 71, CacheReadTokens: 128}) {
		t.Errorf("stop %q, usage %+v", resp.StopReason, resp.Usage)
	}

	if _, err := newClient(t, api.v1()).Generate(t.Context(), afterToolUse(req, resp), nil); err != nil {
		t.Fatal(err)
	}
	a := assistant(t, api.body(t, 1))
	if a.ReasoningContent != nil || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "a7c03e51f" || a.ToolCalls[0].Function.Arguments != "{}" {
		t.Errorf("assistant message sent back: reasoning_content %v, tool calls %+v", a.ReasoningContent, a.ToolCalls)
	}
}

// Two calls at the same index, each with an id and a name of its own, as
// Ollama sends the calls of a response (ollama/ollama#15457; this stream
// is written out, not recorded), are two tool uses, each with its own
// input, not one whose arguments run together. Pieces with no name, even
// with an id, continue the call at their index.
func TestToolCallsSharingAnIndex(t *testing.T) {
	chunk := func(delta string, finish string) string {
		return `{"id":"chatcmpl-71","object":"chat.completion.chunk","created":1775700000,"model":"qwen2.5-coder:7b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
	}
	api := newReplayAPI(t, []string{
		chunk(`{"role":"assistant","content":""}`, "null"),
		chunk(`{"tool_calls":[{"id":"call_4k2tq1","index":0,"type":"function","function":{"name":"Write","arguments":"{\"file_path\":\"hello.py\","}}]}`, "null"),
		chunk(`{"tool_calls":[{"id":"call_4k2tq1","index":0,"function":{"arguments":"\"content\":\"print('hello')\"}"}}]}`, "null"),
		chunk(`{"tool_calls":[{"id":"call_9x7mz3","index":0,"type":"function","function":{"name":"Write","arguments":"{\"file_path\":\"world.py\","}}]}`, "null"),
		chunk(`{"tool_calls":[{"id":"call_other","index":0,"function":{"arguments":"\"content\":\"print('world')\"}"}}]}`, "null"),
		chunk(`{}`, `"tool_calls"`),
	})
	var deltas []llm.Delta
	resp, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("Create hello.py and world.py."), func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	uses := resp.Message.ToolUses()
	if len(uses) != 2 {
		t.Fatalf("tool uses %+v: want two", resp.Message.Content)
	}
	for i, want := range []struct{ id, input string }{
		{"call_4k2tq1", `{"file_path":"hello.py","content":"print('hello')"}`},
		{"call_9x7mz3", `{"file_path":"world.py","content":"print('world')"}`},
	} {
		if u := uses[i]; u.ID != want.id || u.Name != "Write" || string(u.Input) != want.input {
			t.Errorf("tool use %d: %s %s %s, want %s Write %s", i, u.ID, u.Name, u.Input, want.id, want.input)
		}
	}
	var announced []string
	for _, d := range deltas {
		if d.Type == llm.DeltaToolUse {
			announced = append(announced, fmt.Sprintf("%d:%s", d.Index, d.ID))
		}
	}
	if strings.Join(announced, ",") != "0:call_4k2tq1,1:call_9x7mz3" {
		t.Errorf("tool uses announced %v", announced)
	}
}

// Mistral's reasoning models send the content as a list of
// parts: the thinking parts are the thinking, the text parts the answer,
// and no JSON of the parts reaches the text, streamed or final.
// mistral-thinking also ends with content as a plain string.
func TestMistralContentParts(t *testing.T) {
	for _, tc := range []struct {
		file, model, prompt, thinking, answer string
		usage                                 llm.Usage
	}{
		{"magistral-reasoning.chunks.txt", "magistral-small-2509", "How far is 5 km in miles?",
			"A kilometre is about 0.621 miles, so 5 km is 5 × 0.621 ≈ 3.11 miles.", "5 km is about 3.11 miles.",
			llm.Usage{InputTokens: 13, OutputTokens: 41}},
		{"mistral-thinking.chunks.txt", "mistral-small-latest", "How many seconds are in a week?",
			"The user wants the number of seconds in a week. A minute is 60 seconds and an hour is 60 minutes, so an hour is 60 * 60 = 3600 seconds.\n" +
				"A day is 24 hours: 24 * 3600 = 86400 seconds.\nA week is 7 days: 7 * 86400 = 604800.\n\nSo a week has 604,800 seconds.",
			"A week has 604,800 seconds.",
			llm.Usage{InputTokens: 19, OutputTokens: 112}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			api := newReplayAPI(t, chunks(t, tc.file))
			resp, streamed := generate(t, api, userRequest(tc.prompt))
			if got := resp.Message.Text(); got != tc.answer || streamed != tc.answer {
				t.Errorf("answer %q, streamed %q, want %q", got, streamed, tc.answer)
			}
			th := thinkings(resp.Message)
			if len(th) != 1 || th[0].Thinking != tc.thinking || th[0].Name != "" {
				t.Errorf("thinking %+v", th)
			}
			if c := resp.Message.Content; len(c) != 2 || c[0].Type != llm.BlockThinking || c[1].Type != llm.BlockText {
				t.Errorf("content %+v: want the thinking, then the text", c)
			}
			if resp.StopReason != llm.StopEndTurn || resp.Model != tc.model || resp.Usage != tc.usage {
				t.Errorf("stop %q, model %q, usage %+v", resp.StopReason, resp.Model, resp.Usage)
			}
		})
	}
}

// refusalStream is a refusal as the API streams it (written out, not
// recorded): the refusal in pieces, finish reason stop.
var refusalStream = []string{
	`{"id":"chatcmpl-R1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-6.1-terra-2026-10-26","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-R1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-6.1-terra-2026-10-26","choices":[{"index":0,"delta":{"refusal":"I'm sorry, "},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-R1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-6.1-terra-2026-10-26","choices":[{"index":0,"delta":{"refusal":"I can't help with that."},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-R1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-6.1-terra-2026-10-26","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
	`{"id":"chatcmpl-R1","object":"chat.completion.chunk","created":1764460800,"model":"gpt-6.1-terra-2026-10-26","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`,
}

// A refusal message is not text: the response stops with StopRefusal and
// carries the refusal, and nothing streams as text.
func TestRefusal(t *testing.T) {
	api := newReplayAPI(t, refusalStream)
	resp, streamed := generate(t, api, userRequest("Write me an exploit."))
	if resp.StopReason != llm.StopRefusal || resp.Refusal != "I'm sorry, I can't help with that." {
		t.Errorf("stop %q, refusal %q", resp.StopReason, resp.Refusal)
	}
	if len(resp.Message.Content) != 0 || streamed != "" {
		t.Errorf("content %+v, streamed %q: want none", resp.Message.Content, streamed)
	}
}

// The runtime against a refusal: the turn ends refused, with the refusal
// as its reason and no answer, after one model call.
func TestRuntimeRefusal(t *testing.T) {
	api := newReplayAPI(t, refusalStream)
	rt, err := agent.New(agent.Definition{ToolProviders: toolset.Default(), Name: "refusal"},
		agent.Collaborators{Client: newClient(t, api.v1()), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := agent.NewExecutor().Execute(t.Context(), rt, agent.Request{SessionID: "s1", Input: "Write me an exploit."})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if res.StopReason != agent.StopRefused || res.Answer != "" || res.Reason != "I'm sorry, I can't help with that." || res.Iterations != 1 {
		t.Errorf("stop %s, answer %q, reason %q, %d iterations", res.StopReason, res.Answer, res.Reason, res.Iterations)
	}
	if api.requests() != 1 {
		t.Errorf("the API saw %d requests", api.requests())
	}
}

// A chunk whose content is neither text nor a list of parts fails the
// call as a server error that shows the content, once: the client does
// not retry, and nothing panics.
func TestContentNeitherTextNorParts(t *testing.T) {
	for name, content := range map[string]string{
		"Object": `{"type":"text","text":"4"}`,
		"Number": `4`,
		"Parts":  `[{"type":"text","text":"4"},"4"]`,
	} {
		t.Run(name, func(t *testing.T) {
			api := newReplayAPI(t, []string{
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":` + content + `},"finish_reason":null}]}`,
				`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			})
			resp, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("2+2?"), nil)
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.KindServer {
				t.Fatalf("Generate: %+v, %v: want a server error", resp, err)
			}
			if !strings.Contains(le.Message, "neither text nor a list of content parts") || !strings.Contains(le.Message, content) {
				t.Errorf("message %q does not say what the content was", le.Message)
			}
			if api.requests() != 1 {
				t.Errorf("the API saw %d requests", api.requests())
			}
		})
	}
}
