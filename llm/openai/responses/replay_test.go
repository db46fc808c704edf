package responses_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
	"github.com/orca-agent/orca/llm/openai/responses"
)

// Real exchanges with the Responses API, recorded by others:
// charm.land/fantasy's providertests (Apache-2.0; .ci/run points
// llmtest.RecordingsEnv at the module's providertests/testdata, which is
// not copied here). Each conversation is sent again by orca, request by
// request, to a replay of the recorded responses, byte for byte:
//
//   - orca's first request carries what the recorded one did — the user's
//     message, the tools, the output format, the reasoning asked for — and
//     the system prompt (a developer or system message there) as
//     instructions;
//   - each response orca returns is what the recorded stream carried: its
//     items as blocks, in order (reasoning items with their ids, encrypted
//     content and summary parts), the text streamed, the usage, the stop
//     reason, the model and the response's id, all computed from the
//     recorded events;
//   - each later request carries the recorded request's function calls
//     and their outputs, item for item, and, before the calls they
//     preceded, the reasoning items of the recorded response that came
//     with encrypted content, exactly as the API gave them (fantasy sends
//     none back; orca must).
func TestRecorded(t *testing.T) {
	common := func(model string) []string {
		files := []string{"simple_streaming", "tool_streaming"}
		if !strings.Contains(model, "o4-mini") {
			files = append(files, "multi_tool_streaming") // parallel calls
		}
		var out []string
		for _, f := range files {
			out = append(out, "TestOpenAIResponsesCommon/"+model+"/"+f+".yaml")
		}
		return out
	}
	var cassettes []string
	for _, m := range []string{"openai-gpt-4o", "openai-gpt-4o-mini", "openai-gpt-5", "openai-o4-mini"} {
		cassettes = append(cassettes, common(m)...)
	}
	for _, m := range []string{"azure-gpt-5-mini", "azure-o4-mini"} {
		cassettes = append(cassettes, "TestAzureResponsesCommon/"+m+"/simple_streaming.yaml", "TestAzureResponsesCommon/"+m+"/tool_streaming.yaml")
	}
	cassettes = append(cassettes,
		"TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking-streaming.yaml",
		"TestOpenAIResponsesWithSummaryThinking/openai-o4-mini/thinking-streaming.yaml",
		"TestAzureResponsesWithSummaryThinking/azure-gpt-5-mini/thinking-streaming.yaml",
		"TestOpenAIResponsesObjectGeneration/openai-gpt-4o/simple_object_streaming.yaml",
		"TestOpenAIResponsesObjectGeneration/openai-gpt-5/complex_object_streaming.yaml",
	)
	for _, path := range cassettes {
		t.Run(strings.TrimSuffix(path, ".yaml"), func(t *testing.T) { replayConversation(t, path) })
	}
}

// The recordings of reasoning with a summary: the reasoning items come
// with encrypted content, and orca's next request sends them back.
func TestRecordedReasoningRoundTrip(t *testing.T) {
	for _, path := range []string{
		"TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking-streaming.yaml",
		"TestAzureResponsesWithSummaryThinking/azure-gpt-5-mini/thinking-streaming.yaml",
	} {
		t.Run(path, func(t *testing.T) {
			conv := replayConversation(t, path)
			if len(conv.sent) != 2 {
				t.Fatalf("%d requests", len(conv.sent))
			}
			first := conv.responses[0]
			if len(first) == 0 || first[0].Type != llm.BlockRedactedThinking || first[0].Signature == "" || first[0].Thinking == "" {
				t.Fatalf("the first response's reasoning: %+v", first)
			}
			var reasoning int
			for _, it := range conv.sent[1] {
				var item struct{ Type, ID string }
				json.Unmarshal(it, &item)
				if item.Type == "reasoning" && item.ID == first[0].ID {
					reasoning++
				}
			}
			if reasoning != 1 {
				t.Errorf("the second request sent the reasoning item %s %d times", first[0].ID, reasoning)
			}
		})
	}
}

// recordedRequest is what a recorded request carried, as far as orca has
// it to say.
type recordedRequest struct {
	Model           string            `json:"model"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	Input           []json.RawMessage `json:"input"`
	Tools           []json.RawMessage `json:"tools"`
	Include         []string          `json:"include"`
	Reasoning       *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	Text *struct {
		Format struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"format"`
	} `json:"text"`
}

// event is one recorded server-sent event's data.
type event struct {
	Type        string          `json:"type"`
	Delta       string          `json:"delta"`
	OutputIndex int             `json:"output_index"`
	Item        json.RawMessage `json:"item"`
	Response    *struct {
		ID     string `json:"id"`
		Model  string `json:"model"`
		Status string `json:"status"`
		Usage  struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	} `json:"response"`
}

// outputItem is a recorded output item.
type outputItem struct {
	Type             string `json:"type"`
	Role             string `json:"role"`
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// recordedStream is what a recorded stream carried, computed from its
// events: the response orca must give, the text deltas, and the done
// items as the API sent them.
type recordedStream struct {
	resp     llm.Response
	streamed string
	done     []json.RawMessage // the output items, as output_item.done gave them
}

func readStream(t *testing.T, body []byte) recordedStream {
	t.Helper()
	var out recordedStream
	var text strings.Builder
	calls, finished := false, false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("the recorded stream: %v", err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.output_item.done":
			out.done = append(out.done, ev.Item)
			var it outputItem
			if err := json.Unmarshal(ev.Item, &it); err != nil {
				t.Fatal(err)
			}
			c := &out.resp.Message.Content
			switch it.Type {
			case "reasoning":
				b := llm.Block{Type: llm.BlockRedactedThinking, ID: it.ID, Signature: it.EncryptedContent}
				if len(it.Summary) == 0 {
					*c = append(*c, b)
				}
				for i, s := range it.Summary {
					b.Thinking = s.Text
					if i > 0 {
						b.Signature = ""
					}
					*c = append(*c, b)
				}
			case "message":
				var s strings.Builder
				for _, p := range it.Content {
					if p.Type == "output_text" {
						s.WriteString(p.Text)
					}
				}
				*c = append(*c, llm.TextBlock(s.String()))
			case "function_call":
				*c = append(*c, llm.ToolUseBlock(it.CallID, it.Name, json.RawMessage(it.Arguments)))
				calls = true
			}
		case "response.completed", "response.incomplete":
			r := ev.Response
			u := r.Usage
			out.resp.Usage = llm.Usage{InputTokens: u.InputTokens - u.InputTokensDetails.CachedTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.InputTokensDetails.CachedTokens}
			out.resp.Model, out.resp.ID = r.Model, r.ID
			switch {
			case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
				out.resp.StopReason = llm.StopMaxTokens
			case calls:
				out.resp.StopReason = llm.StopToolUse
			default:
				out.resp.StopReason = llm.StopEndTurn
			}
			finished = true
		}
	}
	if !finished || len(out.resp.Message.Content) == 0 || out.resp.Usage.OutputTokens == 0 || out.resp.Model == "" {
		t.Fatalf("the recorded stream has no response: %+v", out.resp)
	}
	out.resp.Message.Role = llm.RoleAssistant
	out.streamed = text.String()
	return out
}

// conversation is what replayConversation saw: the input items of each
// request orca sent, and the blocks of each response.
type conversation struct {
	sent      [][]json.RawMessage
	responses [][]llm.Block
}

// replayConversation sends the conversation of the cassette at path
// again, as TestRecorded says, and checks each request and response.
func replayConversation(t *testing.T, path string) conversation {
	t.Helper()
	exs := llmtest.Recorded(t, path)
	var rec recordedRequest
	if err := json.Unmarshal(exs[0].RequestBody, &rec); err != nil {
		t.Fatalf("the recorded request: %v", err)
	}
	u, err := url.Parse(exs[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	api := llmtest.NewReplay(t, exs)
	var opts []responses.Option
	if r := rec.Reasoning; r != nil {
		opts = append(opts, responses.ReasoningEffort(r.Effort), responses.ReasoningSummary(r.Summary))
	}
	client := newClient(t, api.URL+strings.TrimSuffix(u.Path, "/responses"), opts...)

	// The first request: the recorded system message, user message,
	// tools and output format, in orca's form.
	req := &llm.Request{Model: rec.Model, MaxTokens: rec.MaxOutputTokens}
	var system bool
	for _, raw := range rec.Input {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(raw, &m)
		text := ""
		for _, p := range parts(m.Content) {
			text += p.Text
		}
		switch m.Role {
		case "system", "developer":
			req.System, system = text, true
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock(text)}})
		}
	}
	for _, raw := range rec.Tools {
		var tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		json.Unmarshal(raw, &tool)
		req.Tools = append(req.Tools, llm.ToolDefinition{Name: tool.Name, Description: tool.Description, InputSchema: tool.Parameters})
	}
	if f := rec.Text; f != nil {
		req.Output = &llm.Output{Name: f.Format.Name, Schema: f.Format.Schema, Strict: f.Format.Strict}
	}

	var conv conversation
	var previous recordedStream
	for i, ex := range exs {
		var deltas []llm.Delta
		resp, err := client.Generate(t.Context(), req, func(d llm.Delta) { deltas = append(deltas, d) })
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		llmtest.CheckDeltas(t, resp, deltas)

		// The request orca sent.
		var sent struct {
			Instructions string            `json:"instructions"`
			Input        []json.RawMessage `json:"input"`
			Tools        []json.RawMessage `json:"tools"`
			Include      []string          `json:"include"`
			Reasoning    json.RawMessage   `json:"reasoning"`
			Text         *struct {
				Format map[string]any `json:"format"`
			} `json:"text"`
		}
		if err := json.Unmarshal(api.Bodies()[i], &sent); err != nil {
			t.Fatal(err)
		}
		conv.sent = append(conv.sent, sent.Input)
		var recorded recordedRequest
		json.Unmarshal(ex.RequestBody, &recorded)
		if system && sent.Instructions != req.System {
			t.Errorf("request %d: instructions %q, want the recorded system message %q", i, sent.Instructions, req.System)
		}
		checkItems(t, i, sent.Input, recorded.Input, previous)
		if len(sent.Tools) != len(recorded.Tools) {
			t.Errorf("request %d: %d tools, the recorded request %d", i, len(sent.Tools), len(recorded.Tools))
		}
		for j := range min(len(sent.Tools), len(recorded.Tools)) {
			if !jsonEqual(sent.Tools[j], recorded.Tools[j]) {
				t.Errorf("request %d: tool %d = %s\nthe recorded one %s", i, j, sent.Tools[j], recorded.Tools[j])
			}
		}
		if recorded.Reasoning != nil {
			r, _ := json.Marshal(recorded.Reasoning)
			if !jsonEqual(sent.Reasoning, r) || !reflect.DeepEqual(sent.Include, recorded.Include) {
				t.Errorf("request %d: reasoning %s, include %v; the recorded request's %s, %v", i, sent.Reasoning, sent.Include, r, recorded.Include)
			}
		}
		if recorded.Text != nil {
			f := recorded.Text.Format
			if sent.Text == nil || sent.Text.Format["type"] != "json_schema" || sent.Text.Format["name"] != f.Name || !jsonEqual(canonical(sent.Text.Format["schema"]), f.Schema) {
				t.Errorf("request %d: text %+v, want the recorded format %s", i, sent.Text, f.Schema)
			}
		}

		// The response orca gave.
		want := readStream(t, ex.ResponseBody)
		conv.responses = append(conv.responses, resp.Message.Content)
		if !reflect.DeepEqual(resp.Message, want.resp.Message) {
			t.Errorf("response %d: message\n%s\nthe recorded stream's\n%s", i, show(resp.Message), show(want.resp.Message))
		}
		if resp.StopReason != want.resp.StopReason || resp.Usage != want.resp.Usage || resp.Model != want.resp.Model || resp.ID != want.resp.ID || resp.Refusal != "" {
			t.Errorf("response %d: stop %q, usage %+v, model %q, id %q; the recorded stream's %q, %+v, %q, %q",
				i, resp.StopReason, resp.Usage, resp.Model, resp.ID, want.resp.StopReason, want.resp.Usage, want.resp.Model, want.resp.ID)
		}
		if got := streamed(deltas); got != want.streamed {
			t.Errorf("response %d: streamed %q, the recorded deltas %q", i, got, want.streamed)
		}
		previous = want

		// The next request: the response, and the outputs the recorded
		// next request gave its calls.
		if i+1 == len(exs) {
			break
		}
		var next recordedRequest
		json.Unmarshal(exs[i+1].RequestBody, &next)
		outputs := map[string]string{}
		for _, raw := range next.Input {
			var o struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
				Output string `json:"output"`
			}
			if json.Unmarshal(raw, &o); o.Type == "function_call_output" {
				outputs[o.CallID] = o.Output
			}
		}
		var results []llm.Block
		for _, use := range resp.Message.ToolUses() {
			out, ok := outputs[use.ID]
			if !ok {
				t.Fatalf("the recorded request %d has no output for call %s", i+1, use.ID)
			}
			results = append(results, llm.ToolResultBlock(use.ID, out, false))
		}
		more := *req
		more.Messages = append(append([]llm.Message(nil), req.Messages...), resp.Message, llm.Message{Role: llm.RoleUser, Content: results})
		req = &more
	}
	if n := len(api.Bodies()); n != len(exs) {
		t.Errorf("orca sent %d requests; the recording has %d", n, len(exs))
	}
	return conv
}

// checkItems checks the input items orca sent (request i) against the
// recorded request's: every recorded item but the system message is
// there, equal, in order; and the other items orca sent are the reasoning
// items of the previous response that had encrypted content, each equal
// to the item the API gave (but for its empty content), right before the
// item that followed it in that response.
func checkItems(t *testing.T, i int, sent, recorded []json.RawMessage, previous recordedStream) {
	t.Helper()
	var rest []json.RawMessage
	for _, it := range recorded {
		var m struct{ Role string }
		if json.Unmarshal(it, &m); m.Role != "system" && m.Role != "developer" {
			rest = append(rest, it)
		}
	}
	var reasoning []json.RawMessage
	var others []json.RawMessage
	follows := map[string]json.RawMessage{} // a reasoning item's id: the item orca sent after it
	for j, it := range sent {
		var item struct{ Type, ID string }
		json.Unmarshal(it, &item)
		if item.Type != "reasoning" {
			others = append(others, it)
			continue
		}
		reasoning = append(reasoning, it)
		if j+1 < len(sent) {
			follows[item.ID] = sent[j+1]
		}
	}
	if len(others) != len(rest) {
		t.Errorf("request %d: %d items besides reasoning, the recorded request %d:\n%s\n%s", i, len(others), len(rest), others, rest)
		return
	}
	for j := range rest {
		if !jsonEqual(others[j], rest[j]) {
			t.Errorf("request %d: item %d = %s\nthe recorded one %s", i, j, others[j], rest[j])
		}
	}
	// The reasoning items of the previous response that can go back.
	var want []json.RawMessage
	after := map[string]outputItem{}
	for j, raw := range previous.done {
		var it outputItem
		json.Unmarshal(raw, &it)
		if it.Type != "reasoning" || it.EncryptedContent == "" {
			continue
		}
		var m map[string]any
		json.Unmarshal(raw, &m)
		if c, ok := m["content"].([]any); ok && len(c) == 0 {
			delete(m, "content")
		}
		want = append(want, canonical(m))
		if j+1 < len(previous.done) {
			json.Unmarshal(previous.done[j+1], &it)
			after[m["id"].(string)] = it
		}
	}
	if len(reasoning) != len(want) {
		t.Errorf("request %d: %d reasoning items, want %d (those of the previous response with encrypted content)", i, len(reasoning), len(want))
		return
	}
	for j := range want {
		if !jsonEqual(reasoning[j], want[j]) {
			t.Errorf("request %d: reasoning item %d = %.300s\nthe API's %.300s", i, j, reasoning[j], want[j])
			continue
		}
		var r struct{ ID string }
		json.Unmarshal(reasoning[j], &r)
		var next outputItem
		json.Unmarshal(follows[r.ID], &next)
		if next.Type == "" && next.Role == "assistant" {
			next.Type = "message"
		}
		if a := after[r.ID]; a.Type != next.Type || a.CallID != next.CallID {
			t.Errorf("request %d: reasoning item %s is followed by %s %s, in the response by %s %s", i, r.ID, next.Type, next.CallID, a.Type, a.CallID)
		}
	}
}

// show prints a message's blocks for a failure, opaque content cut.
func show(m llm.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		sig := c.Signature
		if len(sig) > 24 {
			sig = sig[:12] + "…" + sig[len(sig)-8:]
		}
		fmt.Fprintf(&b, "  %s id=%q name=%q text=%.60q input=%s thinking=%.60q signature=%q\n", c.Type, c.ID, c.Name, c.Text, c.Input, c.Thinking, sig)
	}
	return b.String()
}
