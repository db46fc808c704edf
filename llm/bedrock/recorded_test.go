package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/bedrock"
	"github.com/orca-agent/orca/llm/llmtest"
)

// Bedrock's own ConverseStream answers, recorded against the real API by
// Pydantic AI's tests (MIT; testdata/pydantic-ai/README.md names each
// file's source): this client is given what Bedrock sent, byte for byte,
// and what it sends next is compared with what Bedrock was sent and
// accepted.

// recording is a cassette of testdata/pydantic-ai and the model its
// requests named.
type recording struct {
	exs   []llmtest.Exchange
	model string
}

func record(t *testing.T, name string) recording {
	t.Helper()
	exs := llmtest.Cassette(t, filepath.Join("testdata", "pydantic-ai", name+".yaml"))
	u, err := url.Parse(exs[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	model, ok := strings.CutPrefix(u.Path, "/model/")
	model, _, ok2 := strings.Cut(model, "/")
	if !ok || !ok2 {
		t.Fatalf("%s: %s is no Bedrock model's URL", name, exs[0].URL)
	}
	return recording{exs: exs, model: model}
}

// replay returns a client of a server answering r's requests with r's
// answers, in order; the client signs with SigV4 (static keys), as a
// user of the credential chain's does.
func (r recording) replay(t *testing.T, opts ...bedrock.Option) (*bedrock.Client, *llmtest.Replay) {
	t.Helper()
	isolate(t)
	srv := llmtest.NewReplay(t, r.exs)
	keys := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDRECORDED", SecretAccessKey: "secret", Source: "test"}, nil
	})
	c, err := bedrock.New(t.Context(), append([]bedrock.Option{
		bedrock.Region("us-east-1"), bedrock.BaseURL(srv.URL), bedrock.Credentials(keys), bedrock.Model(r.model),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

// sent is exchange n's request body, decoded.
func (r recording) sent(t *testing.T, n int) wireRequest {
	t.Helper()
	var w wireRequest
	if err := json.Unmarshal(r.exs[n].RequestBody, &w); err != nil {
		t.Fatalf("the recorded request %d: %v", n+1, err)
	}
	w.raw = r.exs[n].RequestBody
	return w
}

// events are the events Bedrock streamed in exchange n: each event's
// type and its payload.
func (r recording) events(t *testing.T, n int) []event {
	t.Helper()
	var out []event
	body := bytes.NewReader(r.exs[n].ResponseBody)
	dec := eventstream.NewDecoder()
	for body.Len() > 0 {
		msg, err := dec.Decode(body, nil)
		if err != nil {
			t.Fatalf("exchange %d: %v", n+1, err)
		}
		ev := event{}
		for _, h := range msg.Headers {
			switch h.Name {
			case ":event-type":
				ev.typ = h.Value.String()
			case ":exception-type":
				ev.typ, ev.exception = h.Value.String(), true
			}
		}
		if err := json.Unmarshal(msg.Payload, &ev.payload); err != nil {
			t.Fatalf("exchange %d, event %s: %v", n+1, ev.typ, err)
		}
		out = append(out, ev)
	}
	return out
}

// streamed is what exchange n streamed of kind ("text", or
// "reasoningContent.text", "reasoningContent.signature",
// "reasoningContent.redactedContent"), per content block index.
func (r recording) streamed(t *testing.T, n int, kind string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, ev := range r.events(t, n) {
		if ev.typ != "contentBlockDelta" {
			continue
		}
		var v any = ev.payload["delta"]
		for _, k := range strings.Split(kind, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if s, ok := v.(string); ok {
			out[int(ev.payload["contentBlockIndex"].(float64))] += s
		}
	}
	return out
}

// generate sends req and checks that what streamed adds up to the answer.
func generate(t *testing.T, c *bedrock.Client, req *llm.Request) *llm.Response {
	t.Helper()
	var deltas []llm.Delta
	resp, err := c.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	llmtest.CheckDeltas(t, resp, deltas)
	return resp
}

// asSent is the messages m of a request as this client and Bedrock's
// recorded callers both would send them: orca's cache points (it marks
// Claude's conversation for prompt caching; Pydantic AI did not) left
// out, and a tool result's "success" status, which this client leaves
// unsaid (Converse takes a status from Nova and Claude only), too.
func asSent(t *testing.T, m any) []map[string]any {
	t.Helper()
	raw, _ := json.Marshal(m)
	var msgs []map[string]any
	if err := json.Unmarshal(raw, &msgs); err != nil {
		t.Fatalf("messages: %v", err)
	}
	for _, msg := range msgs {
		var kept []any
		for _, c := range msg["content"].([]any) {
			c := c.(map[string]any)
			if _, ok := c["cachePoint"]; ok {
				continue
			}
			if r, ok := c["toolResult"].(map[string]any); ok && r["status"] == "success" {
				delete(r, "status")
			}
			kept = append(kept, c)
		}
		msg["content"] = kept
	}
	return msgs
}

// sameJSON fails the test unless got and want are the same JSON value.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		raw, ok := v.([]byte)
		if !ok {
			if r, isRaw := v.(json.RawMessage); isRaw {
				raw, ok = r, true
			}
		}
		if !ok {
			raw, _ = json.Marshal(v)
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v: %s", what, err, raw)
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Errorf("%s:\n sent     %s\n recorded %s", what, gj, wj)
	}
}

// Amazon Nova's streamed text: the answer is the text Bedrock streamed,
// the stop and the usage are its metadata's, and the request carried the
// conversation as the recorded one did.
func TestRecordedText(t *testing.T) {
	r := record(t, "test_bedrock_model_stream")
	c, srv := r.replay(t)
	sent := r.sent(t, 0)
	resp := generate(t, c, sent.request(t))
	if want := r.streamed(t, 0, "text")[0]; resp.Message.Text() != want || !strings.HasPrefix(want, "The capital of France is Paris.") {
		t.Errorf("text %q, Bedrock streamed %q", resp.Message.Text(), want)
	}
	if resp.StopReason != llm.StopEndTurn || resp.Usage.InputTokens != 13 || resp.Usage.OutputTokens != 82 {
		t.Errorf("stop %q, usage %+v", resp.StopReason, resp.Usage)
	}
	var got wireRequest
	if err := json.Unmarshal(srv.Bodies()[0], &got); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "messages", got.Messages, sent.Messages)
	sameJSON(t, "system", got.System, sent.System)
}

// A tool call streamed by Nova, and the conversation that answers it: the
// call comes back with Bedrock's id, name and input; the next request
// carries the assistant's message and the tool's result exactly as the
// recorded one, which Bedrock answered.
func TestRecordedToolCall(t *testing.T) {
	r := record(t, "test_bedrock_model_iter_stream")
	c, srv := r.replay(t)
	first := r.sent(t, 0).request(t)
	resp := generate(t, c, first)
	uses := resp.Message.ToolUses()
	if resp.StopReason != llm.StopToolUse || len(uses) != 1 || uses[0].ID != "tooluse_lAG_zP8QRHmSYOwZzzaCqA" ||
		uses[0].Name != "get_temperature" || string(uses[0].Input) != `{"city":"Paris"}` {
		t.Fatalf("stop %q, calls %+v", resp.StopReason, uses)
	}
	if want := r.streamed(t, 0, "text")[0]; resp.Message.Text() != want {
		t.Errorf("text %q, Bedrock streamed %q", resp.Message.Text(), want)
	}

	next := *first
	next.Model = r.model
	next.Messages = append(append([]llm.Message(nil), first.Messages...), resp.Message,
		user(llm.ToolResultBlock(uses[0].ID, "30°C", false)))
	second := generate(t, c, &next)
	if want := "The current temperature in Paris, the capital of France, is 30°C."; second.Message.Text() != want {
		t.Errorf("second answer %q, want %q", second.Message.Text(), want)
	}
	var got wireRequest
	if err := json.Unmarshal(srv.Bodies()[1], &got); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the second request's messages", asSent(t, got.Messages), asSent(t, r.sent(t, 1).Messages))
	sameJSON(t, "the second request's tools", got.ToolConfig.Tools, r.sent(t, 1).ToolConfig.Tools)
}

// Claude's reasoning streamed through Bedrock: its text and signature are
// the answer's thinking block, and the next request sends them back as
// the reasoningText Bedrock streamed.
func TestRecordedThinking(t *testing.T) {
	r := record(t, "test_bedrock_model_thinking_part_stream")
	c, srv := r.replay(t, bedrock.Thinking(1024))
	first := r.sent(t, 0).request(t)
	resp := generate(t, c, first)
	text, sig := r.streamed(t, 0, "reasoningContent.text")[0], r.streamed(t, 0, "reasoningContent.signature")[0]
	if len(resp.Message.Content) != 2 {
		t.Fatalf("content %+v", resp.Message.Content)
	}
	if b := resp.Message.Content[0]; b.Type != llm.BlockThinking || b.Thinking != text || b.Signature != sig || sig == "" {
		t.Errorf("thinking %+v, Bedrock streamed %q signed %q", b, text, sig)
	}
	if got, want := resp.Message.Content[1].Text, r.streamed(t, 0, "text")[1]; got != want {
		t.Errorf("text %q, Bedrock streamed %q", got, want)
	}
	var fields struct {
		Thinking struct {
			Type         string `json:"type"`
			BudgetTokens int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	var got wireRequest
	if err := json.Unmarshal(srv.Bodies()[0], &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got.AdditionalModelRequestFields, &fields); err != nil || fields.Thinking.Type != "enabled" || fields.Thinking.BudgetTokens != 1024 {
		t.Errorf("additionalModelRequestFields %s, recorded %s", got.AdditionalModelRequestFields, r.sent(t, 0).AdditionalModelRequestFields)
	}

	// The next request (the recording has none: the fake API answers it).
	api := newFakeAPI(t, textAnswer("fine"))
	next := *first
	next.Model = r.model
	next.Messages = append(append([]llm.Message(nil), first.Messages...), resp.Message, user(llm.TextBlock("And you?")))
	if _, err := newClient(t, api, bedrock.Thinking(1024)).Generate(t.Context(), &next, nil); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the answer sent back", asSent(t, api.body(t, 0).Messages)[1], map[string]any{"role": "assistant", "content": []any{
		map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]any{"text": text, "signature": sig}}},
		map[string]any{"text": resp.Message.Content[1].Text},
	}})
}

// A conversation with Claude's signed reasoning and a tool call, as
// Bedrock accepted it (its Converse answer is recorded beside it): this
// client sends the same messages for the same conversation.
func TestRecordedThinkingAccepted(t *testing.T) {
	r := record(t, "test_bedrock_anthropic_tool_with_thinking")
	if r.exs[1].Status != 200 {
		t.Fatalf("the recorded second request was answered %d", r.exs[1].Status)
	}
	var answered struct {
		Output struct {
			Message struct {
				Content []struct {
					ReasoningContent *struct {
						ReasoningText struct{ Text, Signature string }
					}
					Text    *string
					ToolUse *struct {
						ToolUseID string `json:"toolUseId"`
						Name      string
						Input     json.RawMessage
					}
				}
			}
		}
	}
	if err := json.Unmarshal(r.exs[0].ResponseBody, &answered); err != nil {
		t.Fatal(err)
	}
	var reply llm.Message
	reply.Role = llm.RoleAssistant
	for _, b := range answered.Output.Message.Content {
		switch {
		case b.ReasoningContent != nil:
			reply.Content = append(reply.Content, llm.Block{Type: llm.BlockThinking, Thinking: b.ReasoningContent.ReasoningText.Text, Signature: b.ReasoningContent.ReasoningText.Signature})
		case b.Text != nil:
			reply.Content = append(reply.Content, llm.TextBlock(*b.Text))
		case b.ToolUse != nil:
			reply.Content = append(reply.Content, llm.ToolUseBlock(b.ToolUse.ToolUseID, b.ToolUse.Name, b.ToolUse.Input))
		}
	}
	if len(reply.Content) != 3 {
		t.Fatalf("the recorded answer: %s", r.exs[0].ResponseBody)
	}
	req := r.sent(t, 0).request(t)
	req.Model = r.model
	req.Messages = append(req.Messages, reply, user(llm.ToolResultBlock(reply.Content[2].ID, "Mexico", false)))
	api := newFakeAPI(t, textAnswer("Mexico City"))
	if _, err := newClient(t, api, bedrock.Thinking(1024)).Generate(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "messages", asSent(t, api.body(t, 0).Messages), asSent(t, r.sent(t, 1).Messages))
}

// Claude's redacted reasoning: each block Bedrock streamed is kept, and
// sent back byte for byte.
func TestRecordedRedactedThinking(t *testing.T) {
	r := record(t, "test_bedrock_model_thinking_part_redacted_stream")
	c, _ := r.replay(t, bedrock.Thinking(1024))
	first := r.sent(t, 0).request(t)
	resp := generate(t, c, first)
	redacted := r.streamed(t, 0, "reasoningContent.redactedContent")
	if len(resp.Message.Content) != 3 || len(redacted) != 2 {
		t.Fatalf("content %+v; Bedrock streamed %d redacted blocks", resp.Message.Content, len(redacted))
	}
	for i := range 2 {
		if b := resp.Message.Content[i]; b.Type != llm.BlockRedactedThinking || b.Signature != redacted[i] {
			t.Errorf("block %d: %s %q, Bedrock streamed %q", i, b.Type, b.Signature, redacted[i])
		}
	}
	if got, want := resp.Message.Content[2].Text, r.streamed(t, 0, "text")[2]; got != want || want == "" {
		t.Errorf("text %q, Bedrock streamed %q", got, want)
	}

	api := newFakeAPI(t, textAnswer("ok"))
	next := *first
	next.Model = r.model
	next.Messages = append(append([]llm.Message(nil), first.Messages...), resp.Message, user(llm.TextBlock("go on")))
	if _, err := newClient(t, api, bedrock.Thinking(1024)).Generate(t.Context(), &next, nil); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the answer sent back", asSent(t, api.body(t, 0).Messages)[1], map[string]any{"role": "assistant", "content": []any{
		map[string]any{"reasoningContent": map[string]any{"redactedContent": redacted[0]}},
		map[string]any{"reasoningContent": map[string]any{"redactedContent": redacted[1]}},
		map[string]any{"text": resp.Message.Content[2].Text},
	}})
}

// OpenAI's gpt-oss on Bedrock opens its answer with an empty text block
// and reasons unsigned: the answer holds no empty block (Converse refuses
// blank text sent back), and the unsigned reasoning is not sent back.
func TestRecordedEmptyTextDelta(t *testing.T) {
	r := record(t, "test_bedrock_model_stream_empty_text_delta")
	c, _ := r.replay(t)
	first := r.sent(t, 0).request(t)
	resp := generate(t, c, first)
	var kinds []string
	for _, b := range resp.Message.Content {
		kinds = append(kinds, string(b.Type))
	}
	if strings.Join(kinds, " ") != "thinking text" {
		t.Fatalf("blocks %v, want thinking and text: %+v", kinds, resp.Message.Content)
	}
	if got, want := resp.Message.Content[0].Thinking, r.streamed(t, 0, "reasoningContent.text")[1]; got != want || resp.Message.Content[0].Signature != "" {
		t.Errorf("thinking %q (signed %q), Bedrock streamed %q", got, resp.Message.Content[0].Signature, want)
	}
	if resp.Message.Text() != "Hello! How can I help you today?" {
		t.Errorf("text %q", resp.Message.Text())
	}

	api := newFakeAPI(t, textAnswer("ok"))
	next := *first
	next.Model = r.model
	next.Messages = append(append([]llm.Message(nil), first.Messages...), resp.Message, user(llm.TextBlock("thanks")))
	if _, err := newClient(t, api).Generate(t.Context(), &next, nil); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the answer sent back", asSent(t, api.body(t, 0).Messages)[1], map[string]any{"role": "assistant", "content": []any{map[string]any{"text": "Hello! How can I help you today?"}}})
}

// Nova's code interpreter runs on Bedrock's side: its call and its result
// stream before the answer's own tool call. orca is asked to run only the
// tool it offered, with the index its deltas named.
func TestRecordedServerTool(t *testing.T) {
	r := record(t, "test_bedrock_model_code_execution_tool_stream")
	c, _ := r.replay(t)
	resp := generate(t, c, r.sent(t, 0).request(t))
	uses := resp.Message.ToolUses()
	if resp.StopReason != llm.StopToolUse || len(resp.Message.Content) != 1 || len(uses) != 1 ||
		uses[0].ID != "tooluse_ptgCcZ0uQu-UUMz0abqoWw" || uses[0].Name != "final_result" {
		t.Fatalf("stop %q, content %+v", resp.StopReason, resp.Message.Content)
	}
	sameJSON(t, "the call's input", uses[0].Input, map[string]any{"result": 7006652})
}

// Bedrock's refusal of a model id it does not know, before any stream:
// an invalid request, not retried, saying Bedrock's words.
func TestRecordedError(t *testing.T) {
	r := record(t, "test_bedrock_streaming_error")
	c, srv := r.replay(t)
	_, err := c.Generate(t.Context(), r.sent(t, 0).request(t), nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindInvalidRequest || e.StatusCode != 400 || llm.Retryable(err) ||
		!strings.Contains(err.Error(), "The provided model identifier is invalid.") {
		t.Errorf("%v", err)
	}
	if n := len(srv.Bodies()); n != 1 {
		t.Errorf("%d requests", n)
	}
}
