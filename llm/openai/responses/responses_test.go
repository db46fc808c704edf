package responses_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai/responses"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a client of the API at baseURL ("" for the default),
// with an HTTP client of the test's own whose idle connections are closed
// when the test ends.
func newClient(t *testing.T, baseURL string, opts ...responses.Option) *responses.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	all := []responses.Option{responses.APIKey("sk-test"), responses.HTTPClient(hc)}
	if baseURL != "" {
		all = append(all, responses.BaseURL(baseURL))
	}
	c, err := responses.New(append(all, opts...)...)
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

// generate runs req with a client of api's, and returns the response and
// the deltas it streamed.
func generate(t *testing.T, baseURL string, req *llm.Request, opts ...responses.Option) (*llm.Response, []llm.Delta) {
	t.Helper()
	var deltas []llm.Delta
	resp, err := newClient(t, baseURL, opts...).Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	llmtest.CheckDeltas(t, resp, deltas)
	return resp, deltas
}

// streamed returns the text the deltas carried.
func streamed(deltas []llm.Delta) string {
	var b strings.Builder
	for _, d := range deltas {
		if d.Type == llm.DeltaText {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// A stream that ends, or is dropped, before response.completed fails as a
// retryable server error after what it streamed, and the SDK does not
// send the request again.
func TestStreamCutIsRetryable(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := map[bool]string{false: "Ended", true: "Dropped"}[abort]
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(t, answer{resp: textResponse("This answer will not arrive in full."), cutAfter: 6, abort: abort})
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
		window     int64
	}{
		{"ContextWindow", 400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, nil,
			llm.KindPromptTooLong, "Your input exceeds the context window of this model. Please adjust your input and try again.", 0, 0},
		{"ConfiguredLimit", 400, `{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301377 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, nil,
			llm.KindPromptTooLong, "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301377 tokens. Please reduce the length of the messages.", 0, 272000},
		{"BadRequest", 400, `{"error":{"message":"Unsupported parameter: 'temperature' is not supported with this model.","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`, nil,
			llm.KindInvalidRequest, "Unsupported parameter: 'temperature' is not supported with this model.", 0, 0},
		{"Unauthorized", 401, `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, nil,
			llm.KindAuthentication, "Incorrect API key provided: sk-test.", 0, 0},
		{"Forbidden", 403, `{"error":{"message":"Project does not have access to model gpt-6.1-terra","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil,
			llm.KindAuthentication, "Project does not have access to model gpt-6.1-terra", 0, 0},
		{"NotFound", 404, `{"error":{"message":"The model gpt-9 does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, nil,
			llm.KindInvalidRequest, "The model gpt-9 does not exist or you do not have access to it.", 0, 0},
		{"RateLimited", 429, `{"error":{"message":"Rate limit reached. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, http.Header{"Retry-After": {"2"}},
			llm.KindRateLimited, "Rate limit reached. Please try again in 2s.", 2 * time.Second, 0},
		{"RateLimitedMillis", 429, `{"error":{"message":"slow down","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, http.Header{"Retry-After-Ms": {"750"}},
			llm.KindRateLimited, "slow down", 750 * time.Millisecond, 0},
		{"NoQuota", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, http.Header{"Retry-After": {"2"}},
			llm.KindAuthentication, "You exceeded your current quota, please check your plan and billing details.", 0, 0},
		{"Overloaded", 503, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`, nil,
			llm.KindOverloaded, "The server is overloaded or not ready yet.", 0, 0},
		{"Internal", 500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`, nil,
			llm.KindServer, "The server had an error while processing your request.", 0, 0},
		{"ProxyText", 502, "Bad Gateway\n", nil, llm.KindServer, "Bad Gateway", 0, 0},
		{"Empty", 504, "", nil, llm.KindServer, "Gateway Timeout", 0, 0},
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
			if w := llm.StatedWindow(err); w != tc.window {
				t.Errorf("stated window %d, want %d", w, tc.window)
			}
			if n := api.requests(); n != 1 {
				t.Errorf("the server saw %d requests, want exactly 1 (the SDK must not retry)", n)
			}
		})
	}
}

// Errors inside a 200 stream: the error event the API sends for an input
// too long (its error nested, as the API sends it now, or at the top of
// the event, as it did), and a failed response, classified by code.
func TestStreamErrors(t *testing.T) {
	const tooLong = "Your input exceeds the context window of this model. Please adjust your input and try again."
	for _, tc := range []struct {
		name  string
		event obj
		kind  llm.ErrorKind
		msg   string
	}{
		{"NestedPromptTooLong", obj{"type": "error", "error": obj{"type": "invalid_request_error", "code": "context_length_exceeded", "message": tooLong, "param": "input"}},
			llm.KindPromptTooLong, tooLong},
		{"FlatPromptTooLong", obj{"type": "error", "code": "context_length_exceeded", "message": tooLong, "param": "input"},
			llm.KindPromptTooLong, tooLong},
		{"FlatServer", obj{"type": "error", "code": "server_error", "message": "The server had an error while processing your request.", "param": nil},
			llm.KindServer, "The server had an error while processing your request."},
		{"NestedRateLimit", obj{"type": "error", "error": obj{"type": "tokens", "code": "rate_limit_exceeded", "message": "Rate limit reached.", "param": nil}},
			llm.KindRateLimited, "Rate limit reached."},
		{"FailedServer", obj{"type": "response.failed", "response": obj{"id": "resp_1", "status": "failed", "output": []obj{}, "error": obj{"code": "server_error", "message": "The model failed to generate a response."}}},
			llm.KindServer, "The model failed to generate a response."},
		{"FailedRateLimit", obj{"type": "response.failed", "response": obj{"id": "resp_1", "status": "failed", "output": []obj{}, "error": obj{"code": "rate_limit_exceeded", "message": "Rate limit reached."}}},
			llm.KindRateLimited, "Rate limit reached."},
		{"FailedInvalidPrompt", obj{"type": "response.failed", "response": obj{"id": "resp_1", "status": "failed", "output": []obj{}, "error": obj{"code": "invalid_image", "message": "Invalid image."}}},
			llm.KindInvalidRequest, "Invalid image."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, answer{event: tc.event})
			_, err := newClient(t, api.v1()).Generate(t.Context(), userRequest("go"), nil)
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != tc.kind || le.Message != tc.msg {
				t.Errorf("error %v: want kind %s, message %q", err, tc.kind, tc.msg)
			}
			if api.requests() != 1 {
				t.Errorf("%d requests", api.requests())
			}
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	api := newFakeAPI(t, answer{hang: true})
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

// A refusal content part is not text: the response stops with
// StopRefusal and carries the refusal, and nothing streams as text. So
// does a response cut by the content filter, and one that failed on a
// safety policy, with the API's message.
func TestRefusals(t *testing.T) {
	t.Run("RefusalPart", func(t *testing.T) {
		api := newFakeAPI(t, answer{resp: llm.Response{Refusal: "I'm sorry, I can't help with that.", Usage: llm.Usage{InputTokens: 12, OutputTokens: 9}}})
		resp, deltas := generate(t, api.v1(), userRequest("Write me an exploit."))
		if resp.StopReason != llm.StopRefusal || resp.Refusal != "I'm sorry, I can't help with that." || resp.Usage.OutputTokens != 9 {
			t.Errorf("stop %q, refusal %q, usage %+v", resp.StopReason, resp.Refusal, resp.Usage)
		}
		if len(resp.Message.Content) != 0 || streamed(deltas) != "" {
			t.Errorf("content %+v, streamed %q: want none", resp.Message.Content, streamed(deltas))
		}
	})
	t.Run("ContentFilter", func(t *testing.T) {
		api := newFakeAPI(t, answer{event: obj{"type": "response.incomplete", "response": obj{"id": "resp_1", "model": fakeModel, "status": "incomplete",
			"incomplete_details": obj{"reason": "content_filter"}, "output": []obj{}, "usage": obj{"input_tokens": 12, "output_tokens": 0}}}})
		resp, _ := generate(t, api.v1(), userRequest("Write me an exploit."))
		if resp.StopReason != llm.StopRefusal || resp.Refusal != "" || len(resp.Message.Content) != 0 || resp.Usage.InputTokens != 12 {
			t.Errorf("response %+v", resp)
		}
	})
	t.Run("PolicyFailure", func(t *testing.T) {
		api := newFakeAPI(t, answer{event: obj{"type": "response.failed", "response": obj{"id": "resp_1", "model": fakeModel, "status": "failed",
			"error": obj{"code": "bio_policy", "message": "This request was blocked by our biosecurity policy."}, "output": []obj{}, "usage": obj{"input_tokens": 40, "output_tokens": 0}}}})
		resp, _ := generate(t, api.v1(), userRequest("How do I culture this?"))
		if resp.StopReason != llm.StopRefusal || resp.Refusal != "This request was blocked by our biosecurity policy." || resp.ID != "resp_1" {
			t.Errorf("response %+v", resp)
		}
	})
}

// A response cut at max_output_tokens stops with StopMaxTokens and keeps
// what it said.
func TestIncomplete(t *testing.T) {
	api := newFakeAPI(t, answer{resp: llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("The first half of")}},
		StopReason: llm.StopMaxTokens, Usage: llm.Usage{InputTokens: 30, OutputTokens: 16},
	}})
	resp, deltas := generate(t, api.v1(), userRequest("Say a lot."))
	if resp.StopReason != llm.StopMaxTokens || resp.Message.Text() != "The first half of" || streamed(deltas) != "The first half of" || resp.Usage.OutputTokens != 16 {
		t.Errorf("response %+v", resp)
	}
}

// orca's messages on the wire: instructions, the user's text as input_text
// parts, the assistant's text as an assistant message, tool uses as
// function calls without item ids, one function_call_output per result
// (ahead of the user's text), the error prefix, thinking left out,
// malformed arguments quoted; tools strict: false; store: false.
func TestRequestMapping(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	req := &llm.Request{
		System: "You are careful.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("Fix it."), llm.TextBlock("Quickly.")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockThinking, Thinking: "hmm", Signature: "sig"},
				{Type: llm.BlockRedactedThinking, Signature: "another provider's"},
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
	var kinds []string
	for _, it := range w.Input {
		kinds = append(kinds, it.Type+":"+it.Role)
	}
	if strings.Join(kinds, ",") != ":user,:assistant,function_call:,function_call:,function_call_output:,function_call_output:,:user" {
		t.Fatalf("input items %v", kinds)
	}
	if ps := parts(w.Input[0].Content); len(ps) != 2 || ps[0].Type != "input_text" || ps[1].Text != "Quickly." {
		t.Errorf("user parts %+v", ps)
	}
	var s string
	if err := json.Unmarshal(w.Input[1].Content, &s); err != nil || s != "Looking." {
		t.Errorf("assistant text %s", w.Input[1].Content)
	}
	if c := w.Input[2]; c.CallID != "call_1" || c.Name != "Read" || c.Arguments != `{"file_path":"a.go"}` || c.ID != "" {
		t.Errorf("function call %+v", c)
	}
	var quoted map[string]string
	if err := json.Unmarshal([]byte(w.Input[3].Arguments), &quoted); err != nil || quoted["_raw_input"] != `{"command": "go test"` {
		t.Errorf("malformed arguments sent as %s", w.Input[3].Arguments)
	}
	if o := w.Input[4]; o.CallID != "call_1" || string(o.Output) != `"package a"` {
		t.Errorf("tool result sent as %+v (output %s)", o, o.Output)
	}
	if o := w.Input[5]; o.CallID != "call_2" || string(o.Output) != `"Error: invalid input: unexpected end of JSON"` {
		t.Errorf("failed tool result sent as %+v (output %s)", o, o.Output)
	}
	if ps := parts(w.Input[6].Content); len(ps) != 1 || ps[0].Text != "Also check b.go." {
		t.Errorf("user text after the results %+v", ps)
	}
	if len(w.Tools) != 1 || w.Tools[0].Type != "function" || w.Tools[0].Strict == nil || *w.Tools[0].Strict || w.Tools[0].Description != "Reads a file." ||
		!jsonEqual(w.Tools[0].Parameters, req.Tools[0].InputSchema) {
		t.Errorf("tools %+v", w.Tools)
	}
	if w.Instructions != "You are careful." || w.Model != responses.DefaultModel || w.MaxOutputTokens != responses.DefaultMaxTokens ||
		!w.Stream || w.Store == nil || *w.Store || w.ParallelToolCalls != nil || w.Text != nil || w.Reasoning != nil {
		t.Errorf("request %s", api.raw(t, 0))
	}
	if strings.Contains(string(api.raw(t, 0)), "hmm") || strings.Contains(string(api.raw(t, 0)), "another provider's") {
		t.Errorf("thinking, or another provider's reasoning, was sent: %s", api.raw(t, 0))
	}
}

// Encrypted reasoning is asked for of reasoning models: those the catalog
// says reason, else those of OpenAI's reasoning families by name, and
// every model once the client has a reasoning option, which goes in
// reasoning.
func TestReasoningOptions(t *testing.T) {
	for _, tc := range []struct {
		model     string
		opts      []responses.Option
		include   bool
		reasoning string
	}{
		{"gpt-6.1-terra", nil, true, ""},
		{"gpt-5-2025-08-07", nil, true, ""},
		{"o4-mini", nil, true, ""},
		{"o3-pro", nil, true, ""},
		{"gpt-7", nil, true, ""},
		{"gpt-5.3-codex", nil, true, ""},
		{"gpt-4o", nil, false, ""},
		{"gpt-4.1-mini", nil, false, ""},
		{"gpt-5-chat-latest", nil, false, ""},
		{"llama3.2", nil, false, ""},
		{"llama3.2", []responses.Option{responses.ReasoningEffort("low")}, true, `{"effort":"low"}`},
		{"gpt-6.1-terra", []responses.Option{responses.ReasoningEffort("high"), responses.ReasoningSummary("auto")}, true, `{"effort":"high","summary":"auto"}`},
		{"gpt-5", []responses.Option{responses.ReasoningSummary("detailed")}, true, `{"summary":"detailed"}`},
	} {
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		req := userRequest("hi")
		req.Model = tc.model
		if _, err := newClient(t, api.v1(), tc.opts...).Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		w := api.body(t, 0)
		include := len(w.Include) == 1 && w.Include[0] == "reasoning.encrypted_content"
		if include != tc.include || len(w.Include) > 1 || !tc.include && w.Include != nil {
			t.Errorf("%s: include %v, want encrypted reasoning %v", tc.model, w.Include, tc.include)
		}
		if got := string(w.Reasoning); tc.reasoning == "" && got != "" || tc.reasoning != "" && !jsonEqual(w.Reasoning, []byte(tc.reasoning)) {
			t.Errorf("%s: reasoning %s, want %s", tc.model, got, tc.reasoning)
		}
	}
}

// OPENAI_BASE_URL is honoured, and a server at a base URL needs no key.
func TestBaseURLWithoutKey(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("local model")})
	t.Setenv(responses.BaseURLEnv, api.v1())
	t.Setenv(responses.APIKeyEnv, "")
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := responses.New(responses.HTTPClient(hc), responses.Model("gpt-oss-20b"))
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
	if m := api.body(t, 0).Model; m != "gpt-oss-20b" {
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
	t.Setenv(responses.APIKeyEnv, "")
	t.Setenv(responses.BaseURLEnv, "")
	_, err := responses.New()
	if err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("New without a key: %v, want an error naming OPENAI_API_KEY", err)
	}
	if _, err := responses.New(responses.BaseURL("http://localhost:8000/v1")); err != nil {
		t.Errorf("New with a base URL and no key: %v", err)
	}
	if _, err := responses.New(responses.APIKey("sk-test"), responses.MaxTokens(-1)); err == nil {
		t.Error("New with MaxTokens -1 succeeded")
	}
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
	badOutput := userRequest("hi")
	badOutput.Output = &llm.Output{Name: "x", Schema: json.RawMessage(`{"type":`)}
	for _, req := range []*llm.Request{badSchema, badBlock, badOutput} {
		if _, err := c.Generate(t.Context(), req, nil); !errors.Is(err, llm.ErrInvalidRequest) {
			t.Errorf("error %v, want an invalid request", err)
		}
	}
	if api.requests() != 0 {
		t.Errorf("%d requests reached the API", api.requests())
	}
}

// OneToolCall is parallel_tool_calls: false, sent only with tools; without
// it the API's default (parallel) stands.
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

// Output is text.format json_schema, with its name, its schema and strict
// as the request says.
func TestOutputFormat(t *testing.T) {
	for _, strict := range []bool{true, false} {
		api := newFakeAPI(t, answer{resp: textResponse(`{"city":"Oslo"}`)})
		req := userRequest("hi")
		schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
		req.Output = &llm.Output{Name: "forecast", Strict: strict, Schema: json.RawMessage(schema)}
		c := newClient(t, api.v1())
		resp, err := c.Generate(t.Context(), req, nil)
		if err != nil || resp.Message.Text() != `{"city":"Oslo"}` {
			t.Fatal(resp, err)
		}
		var got struct {
			Format struct {
				Type   string          `json:"type"`
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		}
		text := api.body(t, 0).Text
		if err := json.Unmarshal(text, &got); err != nil || got.Format.Type != "json_schema" || got.Format.Name != "forecast" || got.Format.Strict != strict ||
			!jsonEqual(got.Format.Schema, []byte(schema)) {
			t.Errorf("strict %v: text %s (%v)", strict, text, err)
		}
		if !llm.HasNativeOutput(c) {
			t.Error("the client does not say it has a mechanism")
		}
	}
}
