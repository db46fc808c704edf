package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a client of the API at baseURL ("" for the default),
// with an HTTP client of the test's own whose idle connections are closed
// when the test ends.
func newClient(t *testing.T, baseURL string, opts ...openai.Option) *openai.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	all := []openai.Option{openai.APIKey("sk-test"), openai.HTTPClient(hc)}
	if baseURL != "" {
		all = append(all, openai.BaseURL(baseURL))
	}
	c, err := openai.New(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newFakeAPI(t, answer{resp: c.Response, err: c.Err})
		return newClient(t, api.v1()), api.seen
	})
}

func userRequest(text string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}}}}
}

func textResponse(text string) llm.Response {
	return llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(text)}},
		StopReason: llm.StopEndTurn,
		Usage:      llm.Usage{InputTokens: 10, OutputTokens: 3},
	}
}

// Tool calls whose argument pieces arrive interleaved are assembled per
// index, announced before their input, in the order they started.
func TestInterleavedToolCalls(t *testing.T) {
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("Reading three files."),
			llm.ToolUseBlock("call_A", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
			llm.ToolUseBlock("call_B", "Read", json.RawMessage(`{"file_path":"b.go","offset":10,"limit":200}`)),
			llm.ToolUseBlock("call_C", "Glob", json.RawMessage(`{"pattern":"**/*_test.go"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 100, OutputTokens: 40, CacheReadTokens: 900, CacheWriteTokens: 50},
	}
	api := newFakeAPI(t, answer{resp: want, interleave: true})
	var deltas []llm.Delta
	got, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Message.Content) != 4 || got.StopReason != llm.StopToolUse || got.Usage != want.Usage || got.Model != "gpt-6.1-terra-2026-10-26" || got.ID != "chatcmpl-CN1x" {
		t.Fatalf("response %+v", got)
	}
	for i, w := range want.Message.Content[1:] {
		g := got.Message.Content[i+1]
		if g.ID != w.ID || g.Name != w.Name || string(g.Input) != string(w.Input) {
			t.Errorf("tool use %d = %+v, want %+v", i, g, w)
		}
	}
	// The pieces really were interleaved, and each went to its block.
	var indexes []int
	inputs := map[int]string{}
	for _, d := range deltas {
		if d.Type == llm.DeltaToolInput {
			indexes = append(indexes, d.Index)
			inputs[d.Index] += d.Text
		}
	}
	if len(indexes) < 4 || indexes[0] != 1 || indexes[1] != 2 || indexes[2] != 3 || indexes[3] != 1 {
		t.Errorf("input deltas for blocks %v, want them round-robin", indexes)
	}
	for i, w := range want.Message.Content[1:] {
		if inputs[i+1] != string(w.Input) {
			t.Errorf("input deltas of block %d add up to %s", i+1, inputs[i+1])
		}
	}
}

func TestStreamCutIsRetryable(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := map[bool]string{false: "Ended", true: "Dropped"}[abort]
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(t, answer{resp: textResponse("This answer will not arrive in full."), cutAfter: 3, abort: abort})
			var deltas []llm.Delta
			got, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), func(d llm.Delta) { deltas = append(deltas, d) })
			if err == nil {
				t.Fatalf("Generate succeeded with %+v", got)
			}
			if !errors.Is(err, llm.ErrServer) || !llm.Retryable(err) {
				t.Errorf("error %v: want a retryable server error", err)
			}
			if len(deltas) == 0 || api.requests() != 1 {
				t.Errorf("%d deltas, %d requests", len(deltas), api.requests())
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		header     http.Header
		kind       llm.ErrorKind
		msg        string
		retryAfter time.Duration
	}{
		{"ContextLength", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, nil, llm.KindPromptTooLong, "This model's maximum context length is 128000 tokens.", 0},
		{"ContextLengthNoCode", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens","type":"invalid_request_error","param":null,"code":null}}`, nil, llm.KindPromptTooLong, "This model's maximum context length is 8192 tokens, however you requested 9000 tokens", 0},
		{"BadRequest", 400, `{"error":{"message":"Unrecognized request argument supplied: foo","type":"invalid_request_error","param":null,"code":null}}`, nil, llm.KindInvalidRequest, "Unrecognized request argument supplied: foo", 0},
		{"Unauthorized", 401, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, nil, llm.KindAuthentication, "Incorrect API key provided: sk-test.", 0},
		{"Forbidden", 403, `{"error":{"message":"Project does not have access to model gpt-6.1-terra","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil, llm.KindAuthentication, "Project does not have access to model gpt-6.1-terra", 0},
		{"NotFound", 404, `{"error":{"message":"The model gpt-9 does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil, llm.KindInvalidRequest, "The model gpt-9 does not exist", 0},
		{"OllamaNotFound", 404, `{"error":"model \"llama9\" not found, try pulling it first"}`, nil, llm.KindInvalidRequest, `model "llama9" not found, try pulling it first`, 0},
		{"RateLimited", 429, `{"error":{"message":"Rate limit reached. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, http.Header{"Retry-After": {"2"}}, llm.KindRateLimited, "Rate limit reached. Please try again in 2s.", 2 * time.Second},
		{"RateLimitedMillis", 429, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, http.Header{"Retry-After-Ms": {"750"}}, llm.KindRateLimited, "slow down", 750 * time.Millisecond},
		{"NoQuota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, http.Header{"Retry-After": {"2"}}, llm.KindAuthentication, "You exceeded your current quota, please check your plan and billing details.", 0},
		{"Overloaded", 503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`, nil, llm.KindOverloaded, "The server is overloaded or not ready yet.", 0},
		{"Internal", 500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, nil, llm.KindServer, "The server had an error while processing your request.", 0},
		{"ProxyText", 502, "Bad Gateway\n", nil, llm.KindServer, "Bad Gateway", 0},
		{"Empty", 504, "", nil, llm.KindServer, "Gateway Timeout", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, answer{status: tc.status, body: tc.body, header: tc.header})
			_, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), nil)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not an *llm.Error", err)
			}
			if le.Kind != tc.kind || le.StatusCode != tc.status || le.Message != tc.msg || le.RetryAfter != tc.retryAfter {
				t.Errorf("error = %+v\nwant kind %s, status %d, message %q, retry after %v", le, tc.kind, tc.status, tc.msg, tc.retryAfter)
			}
			if n := api.requests(); n != 1 {
				t.Errorf("the server saw %d requests, want exactly 1 (the SDK must not retry)", n)
			}
		})
	}
}

func TestStreamErrorChunk(t *testing.T) {
	for event, kind := range map[string]llm.ErrorKind{
		"server_error: The server had an error while processing your request.": llm.KindServer,
		"invalid_request_error: Invalid 'messages[3].tool_call_id'":            llm.KindInvalidRequest,
	} {
		api := newFakeAPI(t, answer{resp: textResponse("x"), streamError: event})
		_, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), nil)
		var le *llm.Error
		_, msg, _ := strings.Cut(event, ": ")
		if !errors.As(err, &le) || le.Kind != kind || le.Message != msg {
			t.Errorf("error chunk %q: got %v, want kind %s", event, err, kind)
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("x"), hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := newClient(t, api.v1()).Generate(ctx, userRequest("go"), func(d llm.Delta) {
			if d.Text == "Thinking about" {
				close(started)
			}
		})
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || llm.Retryable(err) {
			t.Errorf("error %v: want one wrapping context.Canceled, not retryable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return after the context was cancelled")
	}
}

// orca's messages on the wire: system message, tool_calls, one tool
// message per result (ahead of the user's text), the error prefix,
// thinking left out, malformed arguments quoted.
func TestMessageMapping(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	req := &llm.Request{
		System: "You are careful.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Fix it."), llm.TextBlock("Quickly.")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"},
				llm.TextBlock("Looking."),
				llm.ToolUseBlock("call_1", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
				llm.ToolUseBlock("call_2", "Bash", json.RawMessage(`{"command": "go test"`)),
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				llm.ToolResultBlock("call_1", "package a", false),
				llm.ToolResultBlock("call_2", "invalid input: unexpected end of JSON", true),
				llm.TextBlock("Also check b.go."),
			}},
		},
		Tools: []llm.ToolDefinition{{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)}},
	}
	if _, err := newClient(t, api.v1()).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	w := api.body(t, 0)
	roles := make([]string, len(w.Messages))
	for i, m := range w.Messages {
		roles[i] = m.Role
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles %v", roles)
	}
	if got := w.Messages[1].texts(); len(got) != 2 || got[1] != "Quickly." {
		t.Errorf("user parts %q", got)
	}
	a := w.Messages[2]
	if strings.Join(a.texts(), "") != "Looking." || len(a.ToolCalls) != 2 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Arguments != `{"file_path":"a.go"}` {
		t.Errorf("assistant message %+v", a)
	}
	var quoted map[string]string
	if err := json.Unmarshal([]byte(a.ToolCalls[1].Function.Arguments), &quoted); err != nil || quoted["_raw_input"] != `{"command": "go test"` {
		t.Errorf("malformed arguments sent as %s", a.ToolCalls[1].Function.Arguments)
	}
	if m := w.Messages[4]; m.ToolCallID != "call_2" || strings.Join(m.texts(), "") != "Error: invalid input: unexpected end of JSON" {
		t.Errorf("failed tool result sent as %+v", m)
	}
	if m := w.Messages[3]; m.ToolCallID != "call_1" || strings.Join(m.texts(), "") != "package a" {
		t.Errorf("tool result sent as %+v", m)
	}
	if len(w.Tools) != 1 || w.Tools[0].Type != "function" || !jsonEqual(w.Tools[0].Function.Parameters, req.Tools[0].InputSchema) {
		t.Errorf("tools %+v", w.Tools)
	}
	if w.Model != openai.DefaultModel || w.MaxCompletionTokens != openai.DefaultMaxTokens || !w.Stream || string(w.StreamOptions) != `{"include_usage":true}` {
		t.Errorf("request %+v", w)
	}
}

// Reasoning models that take tools on Chat Completions only without
// reasoning get reasoning_effort "none" when there are tools; an explicit
// effort wins; other models get none.
func TestReasoningEffort(t *testing.T) {
	tools := []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		model  string
		tools  bool
		option string
		want   string
	}{
		{"gpt-6.1-terra", true, "", "none"},
		{"gpt-5.6-luna", true, "", "none"},
		{"gpt-6.1-terra", false, "", ""},
		{"gpt-4.1", true, "", ""},
		{"gpt-5-mini", true, "", ""},
		{"llama3.2", true, "", ""},
		{"gpt-6.1-terra", true, "low", "low"},
	} {
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		var opts []openai.Option
		if tc.option != "" {
			opts = append(opts, openai.ReasoningEffort(tc.option))
		}
		req := userRequest("hi")
		req.Model = tc.model
		if tc.tools {
			req.Tools = tools
		}
		if _, err := newClient(t, api.v1(), opts...).Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := api.body(t, 0).ReasoningEffort; got != tc.want {
			t.Errorf("%s, tools %v, option %q: reasoning_effort %q, want %q", tc.model, tc.tools, tc.option, got, tc.want)
		}
	}
}

// OPENAI_BASE_URL is honoured, and a server at a base URL needs no key.
func TestBaseURLWithoutKey(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("local model")})
	t.Setenv(openai.BaseURLEnv, api.v1())
	t.Setenv(openai.APIKeyEnv, "")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := openai.New(openai.HTTPClient(hc), openai.Model("llama3.2"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Generate(t.Context(), userRequest("hi"), nil)
	if err != nil || got.Message.Text() != "local model" {
		t.Fatalf("Generate: %+v, %v", got, err)
	}
	if h := api.headers[0].Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
	if m := api.body(t, 0).Model; m != "llama3.2" {
		t.Errorf("model %q", m)
	}

	other := newFakeAPI(t, answer{resp: textResponse("from the option")})
	got, err = newClient(t, other.v1()).Generate(t.Context(), userRequest("hi"), nil)
	if err != nil || got.Message.Text() != "from the option" || api.requests() != 1 {
		t.Errorf("explicit base URL: %+v, %v", got, err)
	}
	if h := other.headers[0].Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("Authorization %q", h)
	}
}

func TestNewNeedsAKey(t *testing.T) {
	t.Setenv(openai.APIKeyEnv, "")
	t.Setenv(openai.BaseURLEnv, "")
	_, err := openai.New()
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("New without a key: %v, want an error naming OPENAI_API_KEY", err)
	}
	if _, err := openai.New(openai.BaseURL("http://localhost:11434/v1")); err != nil {
		t.Errorf("New with a base URL and no key: %v", err)
	}
}

// A server of the protocol that gives tool calls no id, and its whole
// call in one chunk, still yields a usable tool use.
func TestToolCallWithoutID(t *testing.T) {
	resp := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUseBlock("", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
		}},
		StopReason: llm.StopToolUse,
	}
	api := newFakeAPI(t, answer{resp: resp})
	var deltas []llm.Delta
	got, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	b := got.Message.Content[0]
	if b.ID == "" || b.Name != "Read" || string(b.Input) != `{"file_path":"a.go"}` {
		t.Errorf("tool use %+v", b)
	}
	if deltas[0].Type != llm.DeltaToolUse || deltas[0].ID != b.ID {
		t.Errorf("deltas %+v", deltas)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// A request that cannot be sent fails as an invalid request, before
// reaching the API.
func TestUnsendableRequest(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	c := newClient(t, api.v1())
	badSchema := userRequest("hi")
	badSchema.Tools = []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`["not", "an", "object"]`)}}
	badBlock := userRequest("hi")
	badBlock.Messages[0].Content = append(badBlock.Messages[0].Content, llm.Block{Type: "image"})
	for _, req := range []*llm.Request{badSchema, badBlock} {
		if _, err := c.Generate(t.Context(), req, nil); !errors.Is(err, llm.ErrInvalidRequest) {
			t.Errorf("error %v, want an invalid request", err)
		}
	}
	if api.requests() != 0 {
		t.Errorf("%d requests reached the API", api.requests())
	}
}

// OneToolCall is parallel_tool_calls: false, sent only with tools (the
// API refuses it without); without it the API's default (parallel) stands.
func TestOneToolCall(t *testing.T) {
	tools := []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		one   bool
		tools []llm.ToolDefinition
		want  string
	}{
		{true, tools, "false"},
		{false, tools, "absent"},
		{true, nil, "absent"},
	} {
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		req := userRequest("hi")
		req.Tools, req.OneToolCall = tc.tools, tc.one
		if _, err := newClient(t, api.v1()).Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		got := "absent"
		if p := api.body(t, 0).ParallelToolCalls; p != nil {
			got = fmt.Sprint(*p)
		}
		if got != tc.want {
			t.Errorf("one %v, %d tools: parallel_tool_calls %s, want %s", tc.one, len(tc.tools), got, tc.want)
		}
	}
}

// Output is response_format json_schema, with its name and strict as the
// request says.
func TestResponseFormat(t *testing.T) {
	for _, strict := range []bool{true, false} {
		api := newFakeAPI(t, answer{resp: textResponse(`{"city":"Oslo"}`)})
		req := userRequest("hi")
		req.Output = &llm.Output{Name: "forecast", Strict: strict, Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}
		c := newClient(t, api.v1())
		if _, err := c.Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		}
		rf := api.body(t, 0).ResponseFormat
		if err := json.Unmarshal(rf, &got); err != nil || got.Type != "json_schema" || got.JSONSchema.Name != "forecast" || got.JSONSchema.Strict != strict || got.JSONSchema.Schema["required"] == nil {
			t.Errorf("strict %v: response_format %s (%v)", strict, rf, err)
		}
		if !llm.HasNativeOutput(c) {
			t.Error("the client does not say it has a mechanism")
		}
	}
}
