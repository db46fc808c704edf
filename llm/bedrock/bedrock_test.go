package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.uber.org/goleak"

	"github.com/orca-agent/orca/catalog"
	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/bedrock"
	"github.com/orca-agent/orca/llm/llmtest"
)

const claude = "us.anthropic.claude-sonnet-4-6"

// canon is raw JSON in one form for every writer: keys sorted, no space,
// numbers as they were written.
func canon(t *testing.T, raw []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// contents is each message of w as "role: [blocks]", canonical.
func contents(t *testing.T, w wireRequest) []string {
	t.Helper()
	var out []string
	for _, m := range w.Messages {
		raw, _ := json.Marshal(m.Content)
		out = append(out, m.Role+": "+canon(t, raw))
	}
	return out
}

func user(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: blocks}
}

func assistant(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: blocks}
}

func textAnswer(text string) answer {
	return answer{resp: llm.Response{Message: assistant(llm.TextBlock(text)), StopReason: llm.StopEndTurn}}
}

func delta(i int, d map[string]any) event {
	return event{typ: "contentBlockDelta", payload: map[string]any{"contentBlockIndex": i, "delta": d}}
}

func blockStop(i int) event {
	return event{typ: "contentBlockStop", payload: map[string]any{"contentBlockIndex": i}}
}

func messageStop(reason string) event {
	return event{typ: "messageStop", payload: map[string]any{"stopReason": reason}}
}

func metadata(in, out, read, write int) event {
	return event{typ: "metadata", payload: map[string]any{"usage": map[string]any{
		"inputTokens": in, "outputTokens": out, "totalTokens": in + out + read + write,
		"cacheReadInputTokens": read, "cacheWriteInputTokens": write}}}
}

// What orca sends, in Converse's form, byte for byte where it matters:
// the system prompt and tools, each followed by a cache point for Claude;
// the user's image and PDFs (named from their files, as Bedrock allows,
// each name its own); reasoning with its signature and redacted reasoning
// in place; tool uses with their input exactly (a big number kept, a
// malformed input quoted) and an id Converse would refuse replaced, the
// same for its result; results with the images they showed inside them,
// an empty failed one with text and status "error"; a cache point after
// the message before the newest user turn; the output cap; the model in
// the path; the API key as a bearer token.
func TestRequestForm(t *testing.T) {
	api := newFakeAPI(t, textAnswer("seen"))
	png := []byte("\x89PNG\r\n\x1a\nbytes")
	pdf := []byte("%PDF-1.4 doc")
	redacted := []byte{0, 1, 2, 0xfe, 0xff}
	thought := llm.Block{Type: llm.BlockThinking, Thinking: "Look at the image.", Signature: "c2lnbmVk"}
	schema := `{"type":"object","properties":{"file_path":{"type":"string"},"n":{"type":"integer","maximum":12345678901234567890}},"required":["file_path"],"additionalProperties":false}`
	req := &llm.Request{Model: claude, System: "Be brief.", MaxTokens: 100,
		Tools: []llm.ToolDefinition{{Name: "Read", Description: "Reads.", InputSchema: json.RawMessage(schema)}, {Name: "Clock"}},
		Messages: []llm.Message{
			user(llm.TextBlock("Look"), llm.ImageBlock(&llm.Media{MediaType: llm.MediaPNG, Data: png}),
				llm.DocumentBlock(&llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "/tmp/Q3  report_final.v2.pdf"}),
				llm.DocumentBlock(&llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "Q3 report_final.v2.pdf"}),
				llm.DocumentBlock(&llm.Media{MediaType: llm.MediaPDF, Data: pdf, Name: "¿¿¿.pdf"})),
			assistant(thought, llm.Block{Type: llm.BlockRedactedThinking, Signature: b64(redacted)},
				llm.Block{Type: llm.BlockThinking, Thinking: "unsigned: not sent"}, llm.TextBlock("Reading."),
				llm.ToolUseBlock("c1", "Read", json.RawMessage(`{"file_path":"a.png","n":12345678901234567890}`)),
				llm.ToolUseBlock("call/from elsewhere", "Read", json.RawMessage(`{"file_path": "b`))),
			user(llm.ToolResultBlock("c1", "an image", false), llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPNG, Data: png}),
				llm.ToolResultBlock("call/from elsewhere", "", true)),
		}}
	before, _ := json.Marshal(req)
	if _, err := newClient(t, api).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(req); !bytes.Equal(before, after) {
		t.Errorf("Generate modified the request")
	}
	body := api.body(t, 0)
	got := contents(t, body)
	if len(got) != 3 {
		t.Fatalf("%d messages: %s", len(got), body.raw)
	}
	// The id Converse would refuse, as the client replaced it.
	var use struct {
		ToolUse struct{ ToolUseID string } `json:"toolUse"`
	}
	json.Unmarshal(body.Messages[1].Content[4], &use)
	id := use.ToolUse.ToolUseID
	if !regexp.MustCompile(`^[a-zA-Z0-9_.:-]{1,64}$`).MatchString(id) || id == "call/from elsewhere" {
		t.Errorf("the replaced tool use id %q", id)
	}
	img := `{"image":{"format":"png","source":{"bytes":"` + b64(png) + `"}}}`
	doc := func(name string) string {
		return `{"document":{"format":"pdf","name":"` + name + `","source":{"bytes":"` + b64(pdf) + `"}}}`
	}
	want := []string{
		`user: [{"text":"Look"},` + img + `,` + doc("Q3 report final v2") + `,` + doc("Q3 report final v2 (2)") + `,` + doc("document") + `]`,
		`assistant: [{"reasoningContent":{"reasoningText":{"text":"Look at the image.","signature":"c2lnbmVk"}}},` +
			`{"reasoningContent":{"redactedContent":"` + b64(redacted) + `"}},{"text":"Reading."},` +
			`{"toolUse":{"toolUseId":"c1","name":"Read","input":{"file_path":"a.png","n":12345678901234567890}}},` +
			`{"toolUse":{"toolUseId":"` + id + `","name":"Read","input":{"_raw_input":"{\"file_path\": \"b"}}},` +
			`{"cachePoint":{"type":"default"}}]`,
		`user: [{"toolResult":{"toolUseId":"c1","content":[{"text":"an image"},` + img + `]}},` +
			`{"toolResult":{"toolUseId":"` + id + `","content":[{"text":"(no output)"}],"status":"error"}}]`,
	}
	for i := range want {
		if w := strings.SplitN(want[i], ": ", 2); got[i] != w[0]+": "+canon(t, []byte(w[1])) {
			t.Errorf("message %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	system, _ := json.Marshal(body.System)
	tools, _ := json.Marshal(body.ToolConfig.Tools)
	if g, w := canon(t, system), canon(t, []byte(`[{"text":"Be brief."},{"cachePoint":{"type":"default"}}]`)); g != w {
		t.Errorf("system %s, want %s", g, w)
	}
	wantTools := `[{"toolSpec":{"name":"Read","description":"Reads.","inputSchema":{"json":` + schema + `}}},` +
		`{"toolSpec":{"name":"Clock","inputSchema":{"json":{"type":"object","properties":{}}}}},{"cachePoint":{"type":"default"}}]`
	if g, w := canon(t, tools), canon(t, []byte(wantTools)); g != w {
		t.Errorf("tools\n got %s\nwant %s", g, w)
	}
	api.mu.Lock()
	model, auth := api.models[0], api.requests[0].Header.Get("Authorization")
	api.mu.Unlock()
	if body.InferenceConfig.MaxTokens != 100 || model != claude || auth != "Bearer test-key" || body.AdditionalModelRequestFields != nil {
		t.Errorf("max tokens %d, model %q, authorization %q, additional fields %s", body.InferenceConfig.MaxTokens, model, auth, body.AdditionalModelRequestFields)
	}
}

// A conversation of two requests: the first answer streams Claude's
// reasoning (text and signature), redacted reasoning, text and two tool
// calls (one without input); deltas add up to the message, usage and stop
// reason are Bedrock's, the id is the request's. The second request
// carries that answer back exactly — reasoning in place with its
// signature, the calls' ids, names and input — and the results.
func TestToolConversation(t *testing.T) {
	redacted := []byte("opaque \x00 bytes")
	first := []event{
		{typ: "messageStart", payload: map[string]any{"role": "assistant"}},
		delta(0, map[string]any{"reasoningContent": map[string]any{"text": "The user wants "}}),
		delta(0, map[string]any{"reasoningContent": map[string]any{"text": "the weather."}}),
		delta(0, map[string]any{"reasoningContent": map[string]any{"signature": "EqQBCkYIBxgCKkB"}}),
		delta(0, map[string]any{"reasoningContent": map[string]any{"signature": "+sig/end=="}}),
		blockStop(0),
		delta(1, map[string]any{"reasoningContent": map[string]any{"redactedContent": b64(redacted)}}),
		blockStop(1),
		delta(2, map[string]any{"text": "Let me "}),
		delta(2, map[string]any{"text": "check."}),
		blockStop(2),
		{typ: "contentBlockStart", payload: map[string]any{"contentBlockIndex": 3, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "weather"}}}},
		delta(3, map[string]any{"toolUse": map[string]any{"input": `{"location":`}}),
		delta(3, map[string]any{"toolUse": map[string]any{"input": ` "Florence, Italy"}`}}),
		blockStop(3),
		{typ: "contentBlockStart", payload: map[string]any{"contentBlockIndex": 4, "start": map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_2", "name": "clock"}}}},
		blockStop(4),
		messageStop("tool_use"),
		metadata(17, 92, 1200, 300),
	}
	api := newFakeAPI(t, answer{events: first, header: http.Header{"X-Amzn-Requestid": {"0f3b2e8c-request"}}}, textAnswer("40 C and sunny."))
	c := newClient(t, api)
	req := &llm.Request{Model: claude, System: "You are a helpful assistant", MaxTokens: 4000,
		Tools: []llm.ToolDefinition{
			{Name: "weather", Description: "Get weather information for a location", InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)},
			{Name: "clock", Description: "The time", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		Messages: []llm.Message{user(llm.TextBlock("What's the weather in Florence, Italy?"))}}
	var deltas []llm.Delta
	resp, err := c.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckDeltas(t, resp, deltas)
	want := []llm.Block{
		{Type: llm.BlockThinking, Thinking: "The user wants the weather.", Signature: "EqQBCkYIBxgCKkB+sig/end=="},
		{Type: llm.BlockRedactedThinking, Signature: b64(redacted)},
		llm.TextBlock("Let me check."),
		llm.ToolUseBlock("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "weather", json.RawMessage(`{"location": "Florence, Italy"}`)),
		llm.ToolUseBlock("tooluse_2", "clock", json.RawMessage(`{}`)),
	}
	if !resp.Message.Equal(assistant(want...)) {
		t.Errorf("message %+v, want %+v", resp.Message.Content, want)
	}
	if resp.StopReason != llm.StopToolUse || resp.Usage != (llm.Usage{InputTokens: 17, OutputTokens: 92, CacheReadTokens: 1200, CacheWriteTokens: 300}) ||
		resp.ID != "0f3b2e8c-request" || resp.Model != claude {
		t.Errorf("stop %q, usage %+v, id %q, model %q", resp.StopReason, resp.Usage, resp.ID, resp.Model)
	}
	if len(deltas) != 6 || deltas[2].Type != llm.DeltaToolUse || deltas[2].Index != 3 || deltas[5].Type != llm.DeltaToolUse || deltas[5].Index != 4 {
		t.Errorf("deltas %+v", deltas)
	}

	req.Messages = append(req.Messages, resp.Message, user(
		llm.ToolResultBlock("tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "40 C", false),
		llm.ToolResultBlock("tooluse_2", "12:00", false)))
	resp, err = c.Generate(t.Context(), req, nil)
	if err != nil || resp.Message.Text() != "40 C and sunny." || resp.StopReason != llm.StopEndTurn {
		t.Fatalf("second answer %+v, %v", resp, err)
	}
	got := contents(t, api.body(t, 1))
	wantWire := []string{
		`user: [{"text":"What's the weather in Florence, Italy?"}]`,
		`assistant: [{"reasoningContent":{"reasoningText":{"text":"The user wants the weather.","signature":"EqQBCkYIBxgCKkB+sig/end=="}}},` +
			`{"reasoningContent":{"redactedContent":"` + b64(redacted) + `"}},{"text":"Let me check."},` +
			`{"toolUse":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","name":"weather","input":{"location":"Florence, Italy"}}},` +
			`{"toolUse":{"toolUseId":"tooluse_2","name":"clock","input":{}}},{"cachePoint":{"type":"default"}}]`,
		`user: [{"toolResult":{"toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q","content":[{"text":"40 C"}]}},` +
			`{"toolResult":{"toolUseId":"tooluse_2","content":[{"text":"12:00"}]}}]`,
	}
	if len(got) != len(wantWire) {
		t.Fatalf("second request: %d messages:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i, w := range wantWire {
		role, blocks, _ := strings.Cut(w, ": ")
		if got[i] != role+": "+canon(t, []byte(blocks)) {
			t.Errorf("second request, message %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	// The first request had no message before its newest user turn: no
	// cache point among its messages.
	if raw, _ := json.Marshal(api.body(t, 0).Messages); bytes.Contains(raw, []byte("cachePoint")) {
		t.Errorf("first request's messages: %s", raw)
	}
}

// Cache points go to Claude models (by id, inference profile or ARN) that
// take them, and to no other model.
func TestCachePoints(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{
		{claude, 3},
		{"global.anthropic.claude-opus-4-6-v1", 3},
		{"anthropic.claude-3-7-sonnet-20250219-v1:0", 3},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", 3},
		{"us.anthropic.claude-3-5-sonnet-20241022-v2:0", 0},
		{"anthropic.claude-3-haiku-20240307-v1:0", 0},
		{"amazon.nova-pro-v1:0", 0},
		{"meta.llama3-3-70b-instruct-v1:0", 0},
		{"openai.gpt-oss-120b-1:0", 0},
	} {
		model, want := tc.model, tc.want
		api := newFakeAPI(t, textAnswer("ok"))
		req := &llm.Request{Model: model, System: "sys", Tools: []llm.ToolDefinition{{Name: "Read"}},
			Messages: []llm.Message{user(llm.TextBlock("a")), assistant(llm.TextBlock("b")), user(llm.TextBlock("c"))}}
		if _, err := newClient(t, api).Generate(t.Context(), req, nil); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		body := api.body(t, 0)
		api.mu.Lock()
		path := api.models[0]
		api.mu.Unlock()
		if n := bytes.Count(body.raw, []byte(`"cachePoint":{"type":"default"}`)); n != want || path != model {
			t.Errorf("%s: %d cache points, want %d (path model %q): %s", model, n, want, path, body.raw)
		}
		if want > 0 && !strings.Contains(contents(t, body)[1], `"cachePoint"`) {
			t.Errorf("%s: no cache point after the message before the newest user turn: %s", model, body.raw)
		}
	}
}

// Converse wants alternating roles and refuses tool blocks in a request
// without tools: consecutive messages of a role go as one (also where an
// empty message between them is left out), and the tool blocks of a
// request without tools as text, the results' images beside them.
func TestRolesAndToollessRequests(t *testing.T) {
	api := newFakeAPI(t, textAnswer("summary"))
	png := []byte("\x89PNG\r\n\x1a\nimg")
	req := &llm.Request{Model: claude, Messages: []llm.Message{
		user(llm.TextBlock("Fix it.")), user(llm.TextBlock("Please.")),
		assistant(llm.TextBlock("Looking."), llm.ToolUseBlock("c1", "Read", json.RawMessage(`{"file_path":"a.go"}`))),
		user(llm.ToolResultBlock("c1", "package a", true), llm.ResultMediaBlock("c1", &llm.Media{MediaType: llm.MediaPNG, Data: png})),
		assistant(llm.TextBlock("")),
		user(llm.TextBlock("Summarise.")),
	}}
	if _, err := newClient(t, api).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	body := api.body(t, 0)
	want := []string{
		`user: [{"text":"Fix it."},{"text":"Please."}]`,
		`assistant: [{"text":"Looking."},{"text":"[called tool Read (call c1) with input {\"file_path\":\"a.go\"}]"}]`,
		`user: [{"text":"[error of tool call c1]\npackage a"},{"image":{"format":"png","source":{"bytes":"` + b64(png) + `"}}},{"text":"Summarise."}]`,
	}
	got := contents(t, body)
	if len(got) != len(want) {
		t.Fatalf("%d messages: %s", len(got), body.raw)
	}
	for i, w := range want {
		role, blocks, _ := strings.Cut(w, ": ")
		if got[i] != role+": "+canon(t, []byte(blocks)) {
			t.Errorf("message %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	if body.ToolConfig != nil || bytes.Contains(body.raw, []byte("toolUse")) || bytes.Contains(body.raw, []byte("toolResult")) {
		t.Errorf("tool blocks or a tool configuration in a request without tools: %s", body.raw)
	}
}

// Thinking asks Claude to think, the cap raised by the budget;
// AdaptiveThinking lets it choose; other models are asked nothing; a
// budget under the minimum is refused.
func TestThinking(t *testing.T) {
	for _, tc := range []struct {
		opt       bedrock.Option
		model     string
		fields    string
		maxTokens int
	}{
		{bedrock.Thinking(2048), claude, `{"thinking":{"budget_tokens":2048,"type":"enabled"}}`, 100 + 2048},
		{bedrock.AdaptiveThinking(), "global.anthropic.claude-opus-4-6-v1", `{"thinking":{"type":"adaptive"}}`, 100},
		{bedrock.Thinking(2048), "amazon.nova-pro-v1:0", ``, 100},
	} {
		api := newFakeAPI(t, textAnswer("ok"))
		_, err := newClient(t, api, tc.opt).Generate(t.Context(), &llm.Request{Model: tc.model, MaxTokens: 100, Messages: []llm.Message{user(llm.TextBlock("x"))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		body := api.body(t, 0)
		fields := ""
		if body.AdditionalModelRequestFields != nil {
			fields = canon(t, body.AdditionalModelRequestFields)
		}
		if fields != tc.fields || body.InferenceConfig.MaxTokens != tc.maxTokens {
			t.Errorf("%s: fields %s, max tokens %d; want %s, %d", tc.model, fields, body.InferenceConfig.MaxTokens, tc.fields, tc.maxTokens)
		}
	}
	isolate(t)
	if _, err := bedrock.New(t.Context(), bedrock.APIKey("k"), bedrock.Region("us-east-1"), bedrock.Thinking(100)); err == nil {
		t.Error("a budget of 100 tokens was taken")
	}
}

// Bedrock's errors, in the HTTP answer or inside the stream, are llm's
// kinds: the ones to retry retryable, a throttling's retry hint kept,
// the window a prompt-too-long refusal states readable; a stream cut
// before messageStop is a server error; the SDK tries once.
func TestErrors(t *testing.T) {
	req := &llm.Request{Model: claude, Messages: []llm.Message{user(llm.TextBlock("x"))}}
	for _, tc := range []struct {
		status      int
		code, msg   string
		kind        llm.ErrorKind
		window      int64
		retryAfter  time.Duration
		retryHeader string
	}{
		{429, "ThrottlingException", "Too many tokens, please wait before trying again.", llm.KindRateLimited, 0, 7 * time.Second, "7"},
		{400, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account.", llm.KindRateLimited, 0, 0, ""},
		{503, "ServiceUnavailableException", "Bedrock is unable to process your request.", llm.KindOverloaded, 0, 0, ""},
		{429, "ModelNotReadyException", "Model is not ready to serve inference requests.", llm.KindOverloaded, 0, 0, ""},
		{500, "InternalServerException", "The system encountered an unexpected error.", llm.KindServer, 0, 0, ""},
		{424, "ModelErrorException", "The model returned an error.", llm.KindServer, 0, 0, ""},
		{408, "ModelTimeoutException", "Model has timed out in processing the request.", llm.KindServer, 0, 0, ""},
		{403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", llm.KindAuthentication, 0, 0, ""},
		{403, "UnrecognizedClientException", "The security token included in the request is invalid.", llm.KindAuthentication, 0, 0, ""},
		{403, "ExpiredTokenException", "The security token included in the request is expired", llm.KindAuthentication, 0, 0, ""},
		{400, "ValidationException", "prompt is too long: 215430 tokens > 200000 maximum", llm.KindPromptTooLong, 200000, 0, ""},
		{400, "ValidationException", "Input is too long for requested model.", llm.KindPromptTooLong, 0, 0, ""},
		{400, "ValidationException", "The model returned the following errors: input length and `max_tokens` exceed context limit: 197202 + 8192 > 200000, decrease input length or `max_tokens` and try again", llm.KindPromptTooLong, 0, 0, ""},
		{400, "ValidationException", "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`.", llm.KindInvalidRequest, 0, 0, ""},
		{404, "ResourceNotFoundException", "Model not found.", llm.KindInvalidRequest, 0, 0, ""},
	} {
		a := answer{status: tc.status, code: tc.code, msg: tc.msg}
		if tc.retryHeader != "" {
			a.header = http.Header{"Retry-After": {tc.retryHeader}}
		}
		api := newFakeAPI(t, a)
		_, err := newClient(t, api).Generate(t.Context(), req, nil)
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != tc.kind || e.StatusCode != tc.status || !strings.Contains(e.Message, tc.msg) ||
			llm.StatedWindow(err) != tc.window || e.RetryAfter != tc.retryAfter {
			t.Errorf("%d %s: %v (window %d, retry after %v)", tc.status, tc.code, err, llm.StatedWindow(err), e.RetryAfter)
		}
		if n := api.count(); n != 1 {
			t.Errorf("%d %s: %d requests: the SDK retried", tc.status, tc.code, n)
		}
	}

	// Inside the stream, after text has streamed.
	for _, tc := range []struct {
		typ, msg string
		kind     llm.ErrorKind
		window   int64
	}{
		{"throttlingException", "Too many tokens, please wait before trying again.", llm.KindRateLimited, 0},
		{"serviceUnavailableException", "Bedrock is unable to process your request.", llm.KindOverloaded, 0},
		{"internalServerException", "The system encountered an unexpected error during processing.", llm.KindServer, 0},
		{"modelStreamErrorException", "The model stream had an error.", llm.KindServer, 0},
		{"validationException", "prompt is too long: 250000 tokens > 200000 maximum", llm.KindPromptTooLong, 200000},
		{"validationException", "The provided request is not valid.", llm.KindInvalidRequest, 0},
	} {
		api := newFakeAPI(t, answer{events: []event{
			{typ: "messageStart", payload: map[string]any{"role": "assistant"}},
			delta(0, map[string]any{"text": "Hel"}),
			{typ: tc.typ, exception: true, payload: map[string]any{"message": tc.msg}},
		}})
		var streamed string
		_, err := newClient(t, api).Generate(t.Context(), req, func(d llm.Delta) { streamed += d.Text })
		var e *llm.Error
		if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(e.Message, tc.msg) || llm.StatedWindow(err) != tc.window || streamed != "Hel" {
			t.Errorf("in-stream %s: %v (window %d), streamed %q", tc.typ, err, llm.StatedWindow(err), streamed)
		}
	}

	// A stream cut before messageStop.
	api := newFakeAPI(t, answer{events: []event{{typ: "messageStart", payload: map[string]any{"role": "assistant"}}, delta(0, map[string]any{"text": "half"})}})
	if _, err := newClient(t, api).Generate(t.Context(), req, nil); !errors.Is(err, llm.ErrServer) || !llm.Retryable(err) {
		t.Errorf("cut stream: %v", err)
	}
}

// Refusals, as Bedrock ends an answer it blocks, say why; a cap reached
// by the answer or by the window is max_tokens; a malformed answer ends
// the turn with a word of why.
func TestStops(t *testing.T) {
	for _, tc := range []struct {
		reason  string
		text    string
		stop    llm.StopReason
		refusal string
	}{
		{"guardrail_intervened", "Sorry, the model cannot answer this question.", llm.StopRefusal, "a guardrail intervened (guardrail_intervened): Sorry, the model cannot answer this question."},
		{"content_filtered", "", llm.StopRefusal, "the content was filtered (content_filtered)"},
		{"max_tokens", "cut", llm.StopMaxTokens, ""},
		{"model_context_window_exceeded", "cut", llm.StopMaxTokens, ""},
		{"stop_sequence", "END", llm.StopSequence, ""},
		{"malformed_tool_use", "", llm.StopEndTurn, ""},
	} {
		evs := []event{{typ: "messageStart", payload: map[string]any{"role": "assistant"}}}
		if tc.text != "" {
			evs = append(evs, delta(0, map[string]any{"text": tc.text}), blockStop(0))
		}
		evs = append(evs, messageStop(tc.reason), metadata(7, 1, 0, 0))
		api := newFakeAPI(t, answer{events: evs})
		resp, err := newClient(t, api).Generate(t.Context(), &llm.Request{Model: claude, Messages: []llm.Message{user(llm.TextBlock("x"))}}, nil)
		blocks := 1 // the text, or for a malformed answer, the note
		if tc.text == "" && tc.stop == llm.StopRefusal {
			blocks = 0
		}
		if err != nil || resp.StopReason != tc.stop || resp.Refusal != tc.refusal || resp.Usage.InputTokens != 7 || len(resp.Message.Content) != blocks {
			t.Errorf("%s: %+v, %v", tc.reason, resp, err)
		}
	}
}

// New reads the standard AWS configuration: without a region or without
// credentials it says what to set; access keys of the environment or of
// a profile sign the requests (SigV4, for the region); a Bedrock API key
// of the environment is a bearer token; the endpoint variable and the CA
// bundle are honoured; credentials that cannot be refreshed fail a call
// as an authentication error, before it is sent.
func TestNew(t *testing.T) {
	ctx := t.Context()
	isolate(t)
	if _, err := bedrock.New(ctx, bedrock.APIKey("k")); err == nil || !strings.Contains(err.Error(), "set AWS_REGION") {
		t.Errorf("no region: %v", err)
	}
	_, err := bedrock.New(ctx, bedrock.Region("us-east-1"))
	for _, v := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_BEARER_TOKEN_BEDROCK"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("no credentials: %v, which does not name %s", err, v)
		}
	}
	if _, err := bedrock.New(ctx, bedrock.APIKey("k"), bedrock.Region("us-east-1"), bedrock.BaseURL("http://127.0.0.1:1")); err == nil {
		t.Error("an API key for an http:// endpoint was taken")
	}

	signed := func(t *testing.T, api *fakeAPI, c *bedrock.Client) string {
		t.Helper()
		if _, err := c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{user(llm.TextBlock("x"))}}, nil); err != nil {
			t.Fatal(err)
		}
		api.mu.Lock()
		defer api.mu.Unlock()
		if api.models[len(api.models)-1] != bedrock.DefaultModel {
			t.Errorf("model %q, want the default", api.models[len(api.models)-1])
		}
		return api.requests[len(api.requests)-1].Header.Get("Authorization")
	}

	t.Run("EnvironmentKeys", func(t *testing.T) {
		api := newFakeAPI(t, textAnswer("ok"))
		isolate(t)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
		t.Setenv("AWS_REGION", "us-west-2")
		c, err := bedrock.New(t.Context(), bedrock.BaseURL(api.URL), bedrock.HTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		if auth := signed(t, api, c); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDENVIRONMENT/") || !strings.Contains(auth, "/us-west-2/bedrock/aws4_request") {
			t.Errorf("authorization %q", auth)
		}
	})
	t.Run("Profile", func(t *testing.T) {
		api := newFakeAPI(t, textAnswer("ok"))
		isolate(t)
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config"), []byte("[profile work]\nregion = eu-west-1\n"), 0o600)
		os.WriteFile(filepath.Join(dir, "credentials"), []byte("[work]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = secret\n"), 0o600)
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
		t.Setenv("AWS_PROFILE", "work")
		c, err := bedrock.New(t.Context(), bedrock.BaseURL(api.URL), bedrock.HTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		if auth := signed(t, api, c); !strings.Contains(auth, "Credential=AKIDPROFILE/") || !strings.Contains(auth, "/eu-west-1/bedrock/aws4_request") {
			t.Errorf("authorization %q", auth)
		}
	})
	t.Run("EnvironmentAPIKeyAndEndpoint", func(t *testing.T) {
		api := newFakeAPI(t, textAnswer("ok"))
		isolate(t)
		t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "env-token")
		t.Setenv("AWS_REGION", "us-east-1")
		t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", api.URL)
		c, err := bedrock.New(t.Context(), bedrock.HTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		if auth := signed(t, api, c); auth != "Bearer env-token" {
			t.Errorf("authorization %q", auth)
		}
	})
	t.Run("CABundle", func(t *testing.T) {
		// The SDK's own client trusts $AWS_CA_BUNDLE (a corporate proxy's
		// certificate, say); a client given with HTTPClient goes with it.
		api := newFakeAPI(t, textAnswer("ok"))
		isolate(t)
		bundle := filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}), 0o600)
		t.Setenv("AWS_CA_BUNDLE", bundle)
		for _, opts := range [][]bedrock.Option{nil, {bedrock.HTTPClient(api.Client())}} {
			c, err := bedrock.New(t.Context(), append(opts, bedrock.APIKey("k"), bedrock.Region("us-east-1"), bedrock.BaseURL(api.URL))...)
			if err != nil {
				t.Fatal(err)
			}
			signed(t, api, c)
		}
	})
	t.Run("NoRetries", func(t *testing.T) {
		// Not even where the configuration asks the SDK for them.
		api := newFakeAPI(t, answer{err: llm.ErrOverloaded})
		c := newClient(t, api)
		t.Setenv("AWS_MAX_ATTEMPTS", "5")
		t.Setenv("AWS_RETRY_MODE", "adaptive")
		c2, err := bedrock.New(t.Context(), bedrock.APIKey("k"), bedrock.Region("us-east-1"), bedrock.BaseURL(api.URL), bedrock.HTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*bedrock.Client{c, c2} {
			c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{user(llm.TextBlock("x"))}}, nil)
		}
		if n := api.count(); n != 2 {
			t.Errorf("%d requests for 2 calls", n)
		}
	})
	t.Run("ExpiredCredentials", func(t *testing.T) {
		api := newFakeAPI(t, textAnswer("ok"))
		isolate(t)
		calls := 0
		creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			calls++
			if calls > 1 {
				return aws.Credentials{}, errors.New("the SSO session has expired")
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "s", CanExpire: true, Expires: time.Now().Add(-time.Minute)}, nil
		})
		c, err := bedrock.New(t.Context(), bedrock.Credentials(creds), bedrock.Region("us-east-1"), bedrock.BaseURL(api.URL), bedrock.HTTPClient(api.Client()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Generate(t.Context(), &llm.Request{Messages: []llm.Message{user(llm.TextBlock("x"))}}, nil)
		if !errors.Is(err, llm.ErrAuthentication) || llm.Retryable(err) || !strings.Contains(err.Error(), "the SSO session has expired") || api.count() != 0 {
			t.Errorf("expired credentials: %v (%d requests)", err, api.count())
		}
	})
}

// A cancelled call returns at once, its error the context's, also while
// the stream is open.
func TestCancelMidStream(t *testing.T) {
	// After its events, the server holds the stream open until the test
	// ends.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	api := newFakeAPI(t, answer{hold: hold, events: []event{{typ: "messageStart", payload: map[string]any{"role": "assistant"}}, delta(0, map[string]any{"text": "Hel"})}})
	ctx, cancel := context.WithCancel(t.Context())
	var got []string
	_, err := newClient(t, api).Generate(ctx, &llm.Request{Messages: []llm.Message{user(llm.TextBlock("x"))}}, func(d llm.Delta) {
		got = append(got, d.Text)
		cancel()
	})
	if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(got, []string{"Hel"}) {
		t.Errorf("cancelled mid-stream: %v, deltas %q", err, got)
	}
}

// DefaultModel and the aliases are Claude inference profiles of the US
// regions; the cache points apply to them.
func TestModels(t *testing.T) {
	aliases := catalog.Default().Aliases("bedrock")
	for alias, m := range aliases {
		if !strings.HasPrefix(m, "us.anthropic.claude-") {
			t.Errorf("%s: %s", alias, m)
		}
	}
	if aliases["sonnet"] != bedrock.DefaultModel {
		t.Errorf("sonnet is not the default model")
	}
}

// Every call leaves no goroutine behind — the SDK reads a stream on
// goroutines of its own — whether it ends well, with an exception inside
// the stream, cut short, or cancelled while the stream is open.
func TestNoGoroutinesLeft(t *testing.T) {
	opts := []goleak.Option{goleak.IgnoreCurrent()}
	hold := make(chan struct{})
	defer close(hold)
	start := event{typ: "messageStart", payload: map[string]any{"role": "assistant"}}
	api := newFakeAPI(t,
		textAnswer("fine"),
		answer{events: []event{start, delta(0, map[string]any{"text": "Hel"}), {typ: "throttlingException", exception: true, payload: map[string]any{"message": "slow down"}}}},
		answer{events: []event{start, delta(0, map[string]any{"text": "half"})}},
		answer{hold: hold, events: []event{start, delta(0, map[string]any{"text": "Hel"})}},
	)
	c := newClient(t, api)
	req := &llm.Request{Messages: []llm.Message{user(llm.TextBlock("x"))}}
	for i := range 3 {
		if _, err := c.Generate(t.Context(), req, nil); (err == nil) != (i == 0) {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := c.Generate(ctx, req, func(llm.Delta) { cancel() }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	api.Close()
	goleak.VerifyNone(t, opts...)
}
