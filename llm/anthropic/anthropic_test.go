package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/anthropic"
	"github.com/orca-agent/orca/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a client of the API at baseURL ("" for the default),
// with an HTTP client of the test's own whose idle connections are closed
// when the test ends.
func newClient(t *testing.T, baseURL string, opts ...anthropic.Option) *anthropic.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	all := []anthropic.Option{anthropic.APIKey("sk-ant-test"), anthropic.HTTPClient(hc)}
	if baseURL != "" {
		all = append(all, anthropic.BaseURL(baseURL))
	}
	c, err := anthropic.New(append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	llmtest.TestClient(t, func(t *testing.T, c llmtest.ClientCase) (llm.Client, func() []*llm.Request) {
		api := newFakeAPI(t, answer{resp: c.Response, err: c.Err})
		return newClient(t, api.URL), api.seen
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

// Several tool calls in one response: each is announced, its input
// streamed in pieces under its own index, and assembled in order.
func TestMultipleToolCalls(t *testing.T) {
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.TextBlock("Reading both files."),
			llm.ToolUseBlock("toolu_01A", "Read", json.RawMessage(`{"file_path":"a.go"}`)),
			llm.ToolUseBlock("toolu_01B", "Read", json.RawMessage(`{"file_path":"b.go","offset":10}`)),
			llm.ToolUseBlock("toolu_01C", "TodoWrite", json.RawMessage(`{}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 100, OutputTokens: 40, CacheReadTokens: 900, CacheWriteTokens: 50},
	}
	api := newFakeAPI(t, answer{resp: want, fullUsage: true})
	var deltas []llm.Delta
	got, err := newClient(t, api.URL).Generate(t.Context(), userRequest("go"), func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Message.Content) != 4 || got.StopReason != llm.StopToolUse || got.Usage != want.Usage {
		t.Fatalf("response %+v", got)
	}
	for i, w := range want.Message.Content[1:] {
		g := got.Message.Content[i+1]
		if g.ID != w.ID || g.Name != w.Name || string(g.Input) != string(w.Input) {
			t.Errorf("tool use %d = %+v, want %+v", i, g, w)
		}
	}
	if got.Model != "claude-sonnet-5-5-20261001" || got.ID != "msg_01XFDUDYJgAACzvnptvVoYEL" {
		t.Errorf("model = %q, id = %q", got.Model, got.ID)
	}
	inputs := map[int][]string{}
	var order []int
	for _, d := range deltas {
		switch d.Type {
		case llm.DeltaToolUse:
			order = append(order, d.Index)
		case llm.DeltaToolInput:
			inputs[d.Index] = append(inputs[d.Index], d.Text)
		}
	}
	if len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 3 {
		t.Errorf("tool_use deltas for blocks %v, want [1 2 3]", order)
	}
	if len(inputs[2]) < 2 || strings.Join(inputs[2], "") != `{"file_path":"b.go","offset":10}` {
		t.Errorf("input pieces of block 2: %q", inputs[2])
	}
	if len(inputs[3]) != 1 {
		t.Errorf("input pieces of the tool without parameters: %q", inputs[3])
	}
}

// A stream that ends, or whose connection drops, before message_stop is a
// retryable server error that says what happened.
func TestStreamCutIsRetryable(t *testing.T) {
	for _, abort := range []bool{false, true} {
		name := map[bool]string{false: "Ended", true: "Dropped"}[abort]
		t.Run(name, func(t *testing.T) {
			resp := textResponse("This answer will not arrive in full.")
			api := newFakeAPI(t, answer{resp: resp, cutAfter: 4, abort: abort})
			var deltas []llm.Delta
			got, err := newClient(t, api.URL).Generate(t.Context(), userRequest("go"), func(d llm.Delta) { deltas = append(deltas, d) })
			if err == nil {
				t.Fatalf("Generate succeeded with %+v", got)
			}
			if !errors.Is(err, llm.ErrServer) || !llm.Retryable(err) {
				t.Errorf("error %v: want a retryable server error", err)
			}
			if len(deltas) == 0 {
				t.Error("no delta before the cut")
			}
			if api.requests() != 1 {
				t.Errorf("%d requests, want 1", api.requests())
			}
		})
	}
}

// HTTP errors: the kind, the provider's words, the retry hint, and no
// retry by the SDK.
func TestHTTPErrors(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name       string
		status     int
		typ, msg   string
		header     http.Header
		kind       llm.ErrorKind
		retryAfter time.Duration // exact, or (for the date) at least
	}{
		{"PromptTooLong", 400, "invalid_request_error", "prompt is too long: 215304 tokens > 200000 maximum", nil, llm.KindPromptTooLong, 0},
		{"ContextLimit", 400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000", nil, llm.KindPromptTooLong, 0},
		{"BadRequest", 400, "invalid_request_error", "messages: at least one message is required", nil, llm.KindInvalidRequest, 0},
		{"Unauthorized", 401, "authentication_error", "invalid x-api-key", nil, llm.KindAuthentication, 0},
		{"Forbidden", 403, "permission_error", "Your API key does not have permission to use the specified resource.", nil, llm.KindAuthentication, 0},
		{"NotFound", 404, "not_found_error", "model: claude-nonexistent", nil, llm.KindInvalidRequest, 0},
		{"TooLarge", 413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", nil, llm.KindInvalidRequest, 0},
		{"Unprocessable", 422, "invalid_request_error", "unprocessable", nil, llm.KindInvalidRequest, 0},
		{"RateLimitedSeconds", 429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", http.Header{"Retry-After": {"7"}}, llm.KindRateLimited, 7 * time.Second},
		{"RateLimitedMillis", 429, "rate_limit_error", "slow down", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, llm.KindRateLimited, 1500 * time.Millisecond},
		{"RateLimitedDate", 429, "rate_limit_error", "slow down", http.Header{"Retry-After": {date}}, llm.KindRateLimited, 20 * time.Second},
		{"Overloaded", 529, "overloaded_error", "Overloaded", nil, llm.KindOverloaded, 0},
		{"Internal", 500, "api_error", "Internal server error", nil, llm.KindServer, 0},
		{"BadGateway", 502, "api_error", "bad gateway", nil, llm.KindServer, 0},
		{"Unavailable", 503, "api_error", "unavailable", nil, llm.KindServer, 0},
		{"GatewayTimeout", 504, "timeout_error", "timeout", nil, llm.KindServer, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t)
			api.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				api.mu.Lock()
				api.bodies = append(api.bodies, nil)
				api.mu.Unlock()
				for k, v := range tc.header {
					w.Header()[k] = v
				}
				writeError(w, tc.status, tc.typ, tc.msg)
			})
			_, err := newClient(t, api.URL).Generate(t.Context(), userRequest("go"), nil)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not an *llm.Error", err)
			}
			if le.Kind != tc.kind || le.StatusCode != tc.status || le.Message != tc.msg {
				t.Errorf("error = %+v, want kind %s, status %d, message %q", le, tc.kind, tc.status, tc.msg)
			}
			if tc.name == "RateLimitedDate" {
				if le.RetryAfter < tc.retryAfter || le.RetryAfter > 31*time.Second {
					t.Errorf("RetryAfter = %v, want about 30s", le.RetryAfter)
				}
			} else if le.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", le.RetryAfter, tc.retryAfter)
			}
			if want := tc.kind == llm.KindRateLimited || tc.kind == llm.KindOverloaded || tc.kind == llm.KindServer; llm.Retryable(err) != want {
				t.Errorf("Retryable = %v, want %v", !want, want)
			}
			if n := api.requests(); n != 1 {
				t.Errorf("the server saw %d requests, want exactly 1 (the SDK must not retry)", n)
			}
		})
	}
}

// An error event inside a 200 stream is classified by its type and keeps
// no HTTP status.
func TestStreamErrorEvent(t *testing.T) {
	for event, kind := range map[string]llm.ErrorKind{
		"overloaded_error: Overloaded":                         llm.KindOverloaded,
		"api_error: Internal server error":                     llm.KindServer,
		"rate_limit_error: slow down":                          llm.KindRateLimited,
		"invalid_request_error: prompt is too long: 1 > 0":     llm.KindPromptTooLong,
		"invalid_request_error: tools.0.name: String too long": llm.KindInvalidRequest,
	} {
		api := newFakeAPI(t, answer{resp: textResponse("x"), streamError: event})
		_, err := newClient(t, api.URL).Generate(t.Context(), userRequest("go"), nil)
		var le *llm.Error
		_, msg, _ := strings.Cut(event, ": ")
		if !errors.As(err, &le) || le.Kind != kind || le.StatusCode != 0 || le.Message != msg {
			t.Errorf("error event %q: got %#v, want kind %s", event, err, kind)
		}
	}
}

// Cancelling the context mid-stream ends Generate promptly with an error
// that wraps context.Canceled.
func TestCancelMidStream(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("x"), hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := newClient(t, api.URL).Generate(ctx, userRequest("go"), func(d llm.Delta) {
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
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
		if llm.Retryable(err) {
			t.Errorf("a cancelled call is retryable: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return after the context was cancelled")
	}
}

// The cache breakpoints sit on the last tool, the system prompt and the
// last message before the newest user turn — nowhere else.
func TestCacheControlPlacement(t *testing.T) {
	tools := []llm.ToolDefinition{
		{Name: "Read", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false}`)},
		{Name: "Bash", Description: "Runs a command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
	}
	user := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: b} }
	asst := func(b ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: b} }
	for _, tc := range []struct {
		name     string
		messages []llm.Message
		want     []string // "message.block" positions with a breakpoint
	}{
		{"FirstTurn", []llm.Message{user(llm.TextBlock("Fix the bug."))}, nil},
		{"ToolLoop", []llm.Message{
			user(llm.TextBlock("Fix the bug.")),
			asst(llm.TextBlock("Reading."), llm.ToolUseBlock("t1", "Read", json.RawMessage(`{"file_path":"a.go"}`))),
			user(llm.ToolResultBlock("t1", "package a", false)),
			asst(llm.ToolUseBlock("t2", "Bash", json.RawMessage(`{"command":"go test"}`))),
			user(llm.ToolResultBlock("t2", "FAIL", true)),
		}, []string{"3.0"}},
		{"NewUserTurn", []llm.Message{
			user(llm.TextBlock("Fix the bug.")),
			asst(llm.TextBlock("Done."), llm.TextBlock("")),
			user(llm.TextBlock("Thanks; now add a test.")),
		}, []string{"1.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, answer{resp: textResponse("ok")})
			req := &llm.Request{System: "You are careful.", Messages: tc.messages, Tools: tools}
			if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err != nil {
				t.Fatal(err)
			}
			w := api.body(t, 0)
			if len(w.Tools) != 2 || w.Tools[0].CacheControl != nil || w.Tools[1].CacheControl == nil || w.Tools[1].CacheControl.Type != "ephemeral" {
				t.Errorf("tools: %+v", w.Tools)
			}
			if string(w.Tools[0].InputSchema) != string(tools[0].InputSchema) {
				t.Errorf("schema sent as %s, want %s", w.Tools[0].InputSchema, tools[0].InputSchema)
			}
			if len(w.System) != 1 || w.System[0].CacheControl == nil || w.System[0].Text != "You are careful." {
				t.Errorf("system: %+v", w.System)
			}
			var got []string
			for i, m := range w.Messages {
				for j, b := range m.Content {
					if b.CacheControl != nil {
						got = append(got, string(rune('0'+i))+"."+string(rune('0'+j)))
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("breakpoints on messages %v, want %v", got, tc.want)
			}
		})
	}
}

// Thinking blocks come back with their signatures and go out again
// unchanged, in place; one without a signature is left out.
func TestThinkingRoundTrip(t *testing.T) {
	first := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Thinking: "The user wants the tests run. I should call Bash.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
			{Type: llm.BlockRedactedThinking, Signature: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
			llm.TextBlock("Running the tests."),
			llm.ToolUseBlock("toolu_1", "Bash", json.RawMessage(`{"command":"go test ./..."}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 50, OutputTokens: 80},
	}
	api := newFakeAPI(t, answer{resp: first}, answer{resp: textResponse("All green.")})
	c := newClient(t, api.URL, anthropic.Thinking(2048))
	req := userRequest("run the tests")
	req.MaxTokens = 1024
	var deltas []llm.Delta
	got, err := c.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Message.Content) != 4 {
		t.Fatalf("blocks: %+v", got.Message.Content)
	}
	for i := range 2 {
		if g, w := got.Message.Content[i], first.Message.Content[i]; !reflect.DeepEqual(g, llm.Block{Type: w.Type, Thinking: w.Thinking, Signature: w.Signature}) {
			t.Errorf("block %d = %+v, want %+v", i, g, w)
		}
	}
	for _, d := range deltas {
		if d.Index < 2 {
			t.Errorf("delta for a thinking block: %+v", d)
		}
	}
	w := api.body(t, 0)
	if w.MaxTokens != 1024+2048 || string(w.Thinking) != `{"budget_tokens":2048,"type":"enabled"}` {
		t.Errorf("max_tokens %d, thinking %s", w.MaxTokens, w.Thinking)
	}

	next := &llm.Request{Messages: []llm.Message{
		req.Messages[0],
		got.Message,
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock("toolu_1", "ok", false)}},
	}}
	// A thinking block that lost its signature (in storage, say) cannot be
	// verified: it is left out rather than failing the request.
	next.Messages[1].Content = append([]llm.Block{{Type: llm.BlockThinking, Thinking: "unsigned"}}, got.Message.Content...)
	if _, err := c.Generate(t.Context(), next, nil); err != nil {
		t.Fatal(err)
	}
	sent := api.body(t, 1).Messages[1].Content
	if len(sent) != 4 || sent[0].Type != "thinking" || sent[0].Thinking != first.Message.Content[0].Thinking || sent[0].Signature != first.Message.Content[0].Signature ||
		sent[1].Type != "redacted_thinking" || sent[1].Data != first.Message.Content[1].Signature || sent[2].Type != "text" || sent[3].Type != "tool_use" {
		t.Errorf("assistant message sent back as %+v", sent)
	}
	if sent[3].CacheControl == nil || sent[0].CacheControl != nil {
		t.Errorf("breakpoint: %+v", sent)
	}
}

func TestAdaptiveThinking(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	if _, err := newClient(t, api.URL, anthropic.AdaptiveThinking()).Generate(t.Context(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if w := api.body(t, 0); string(w.Thinking) != `{"type":"adaptive"}` || w.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("thinking %s, max_tokens %d", w.Thinking, w.MaxTokens)
	}
}

// Tool input the model produced malformed, or not as an object, is sent
// quoted in an object, so the request stays valid and the model sees it.
func TestInvalidToolInput(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	inputs := []string{`{"file_path": "a.go"`, `["a.go"]`, ``, "{\"x\":\"\xff\"}", ` {"file_path":"b.go"} `}
	var msgs []llm.Message
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("go")}})
	for i, in := range inputs {
		id := "t" + string(rune('0'+i))
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUseBlock(id, "Read", json.RawMessage(in))}},
			llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResultBlock(id, "invalid input", true)}})
	}
	if _, err := newClient(t, api.URL).Generate(t.Context(), &llm.Request{Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	w := api.body(t, 0)
	for i, in := range inputs {
		got := w.Messages[1+2*i].Content[0].Input
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Errorf("input %q sent as %s: not an object", in, got)
			continue
		}
		switch i {
		case 0, 1:
			if obj["_raw_input"] != in {
				t.Errorf("input %q sent as %s", in, got)
			}
		case 2:
			if len(obj) != 0 {
				t.Errorf("empty input sent as %s", got)
			}
		case 4:
			if obj["file_path"] != "b.go" {
				t.Errorf("valid input sent as %s", got)
			}
		}
		if r := w.Messages[2+2*i].Content[0]; !r.IsError || r.Content[0].Text != "invalid input" {
			t.Errorf("tool result sent as %+v", r)
		}
	}
}

// The base URL comes from ANTHROPIC_BASE_URL unless BaseURL says
// otherwise; the key goes out with every request.
func TestBaseURL(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("from the environment")})
	t.Setenv(anthropic.BaseURLEnv, api.URL)
	got, err := newClient(t, "").Generate(t.Context(), userRequest("hi"), nil)
	if err != nil || got.Message.Text() != "from the environment" {
		t.Fatalf("Generate: %+v, %v", got, err)
	}
	if h := api.headers[0]; h.Get("X-Api-Key") != "sk-ant-test" && h.Get("Authorization") != "Bearer sk-ant-test" || h.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", h)
	}

	other := newFakeAPI(t, answer{resp: textResponse("from the option")})
	got, err = newClient(t, other.URL).Generate(t.Context(), userRequest("hi"), nil)
	if err != nil || got.Message.Text() != "from the option" || api.requests() != 1 {
		t.Errorf("explicit base URL: %+v, %v; environment's server saw %d requests", got, err, api.requests())
	}
}

func TestNewNeedsAKey(t *testing.T) {
	t.Setenv(anthropic.APIKeyEnv, "")
	t.Setenv(anthropic.AuthTokenEnv, "")
	if _, err := anthropic.New(); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") || !strings.Contains(err.Error(), "ANTHROPIC_AUTH_TOKEN") {
		t.Errorf("New without a key: %v, want an error naming ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN", err)
	}
	t.Setenv(anthropic.APIKeyEnv, "sk-ant-env")
	if _, err := anthropic.New(); err != nil {
		t.Errorf("New with the key in the environment: %v", err)
	}
	if _, err := anthropic.New(anthropic.Thinking(100)); err == nil {
		t.Error("New accepted a thinking budget under the minimum")
	}
}

// The credential a request carries: a gateway's bearer token
// (ANTHROPIC_AUTH_TOKEN, as Claude Code's users set it beside
// ANTHROPIC_BASE_URL) is enough, and wins over ANTHROPIC_API_KEY, as in
// Claude Code; a key given with APIKey wins over both.
func TestCredentialOrder(t *testing.T) {
	for _, tc := range []struct {
		name, token, key, given, want string
	}{
		{"token alone", "gw-token", "", "", "gw-token"},
		{"token and key", "gw-token", "sk-ant-env", "", "gw-token"},
		{"key alone", "", "sk-ant-env", "", "sk-ant-env"},
		{"given", "gw-token", "sk-ant-env", "sk-ant-given", "sk-ant-given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(anthropic.AuthTokenEnv, tc.token)
			t.Setenv(anthropic.APIKeyEnv, tc.key)
			api := newFakeAPI(t, answer{resp: textResponse("ok")})
			hc := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(hc.CloseIdleConnections)
			opts := []anthropic.Option{anthropic.HTTPClient(hc), anthropic.BaseURL(api.URL)}
			if tc.given != "" {
				opts = append(opts, anthropic.APIKey(tc.given))
			}
			c, err := anthropic.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Generate(t.Context(), userRequest("hi"), nil); err != nil {
				t.Fatal(err)
			}
			h := api.headers[0]
			if got := h.Get("Authorization") + h.Get("X-Api-Key"); !strings.Contains(got, tc.want) || tc.want != tc.given && tc.want != tc.key && strings.Contains(got, "sk-ant") {
				t.Errorf("the request's credential: Authorization %q, X-Api-Key %q; want %s", h.Get("Authorization"), h.Get("X-Api-Key"), tc.want)
			}
		})
	}
}

// The request carries the model, the defaults and the stream flag.
func TestRequestDefaults(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	c := newClient(t, api.URL)
	if _, err := c.Generate(t.Context(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	req := userRequest("hi")
	req.Model, req.MaxTokens = "claude-haiku-5-5", 300
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	w0, w1 := api.body(t, 0), api.body(t, 1)
	if w0.Model != anthropic.DefaultModel || w0.MaxTokens != anthropic.DefaultMaxTokens || !w0.Stream || w0.System != nil || w0.Tools != nil {
		t.Errorf("defaults: %+v", w0)
	}
	if w1.Model != "claude-haiku-5-5" || w1.MaxTokens != 300 {
		t.Errorf("request's own: %+v", w1)
	}
}

// A request that cannot be sent fails as an invalid request, before
// reaching the API.
func TestUnsendableRequest(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse("ok")})
	c := newClient(t, api.URL)
	badSchema := userRequest("hi")
	badSchema.Tools = []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":`)}}
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

// OneToolCall is tool_choice auto with disable_parallel_tool_use, sent
// only with tools; without it the API's default (parallel) stands.
func TestOneToolCall(t *testing.T) {
	tools := []llm.ToolDefinition{{Name: "Read", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for _, tc := range []struct {
		one   bool
		tools []llm.ToolDefinition
		want  string
	}{
		{true, tools, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{false, tools, ``},
		{true, nil, ``},
	} {
		api := newFakeAPI(t, answer{resp: textResponse("ok")})
		req := userRequest("hi")
		req.Tools, req.OneToolCall = tc.tools, tc.one
		if _, err := newClient(t, api.URL).Generate(t.Context(), req, nil); err != nil {
			t.Fatal(err)
		}
		if got := string(api.body(t, 0).ToolChoice); got != tc.want {
			t.Errorf("one %v, %d tools: tool_choice %s, want %s", tc.one, len(tc.tools), got, tc.want)
		}
	}
}

// Output is output_config.format: the JSON Schema, as given.
func TestOutputConfig(t *testing.T) {
	api := newFakeAPI(t, answer{resp: textResponse(`{"city":"Oslo"}`)}, answer{resp: textResponse("ok")})
	req := userRequest("hi")
	req.Output = &llm.Output{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}
	c := newClient(t, api.URL)
	if _, err := c.Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Generate(t.Context(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Format struct {
			Type   string         `json:"type"`
			Schema map[string]any `json:"schema"`
		} `json:"format"`
	}
	if err := json.Unmarshal(api.body(t, 0).OutputConfig, &got); err != nil || got.Format.Type != "json_schema" || got.Format.Schema["additionalProperties"] != false || got.Format.Schema["required"] == nil {
		t.Errorf("output_config %s (%v)", api.body(t, 0).OutputConfig, err)
	}
	if oc := api.body(t, 1).OutputConfig; oc != nil {
		t.Errorf("a request without Output sent output_config %s", oc)
	}
	if !llm.HasNativeOutput(c) {
		t.Error("the client does not say it has a mechanism")
	}
}
