package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"

	"github.com/orca-agent/orca/llm"
	"github.com/orca-agent/orca/llm/llmtest"
)

// FuzzAccumulator feeds the stream accumulator any events a server of the
// API may send (one event's JSON a line): it must never panic, and what it
// streamed must be what it returns — every delta names a block of the
// final message, a function call is announced once, before its arguments,
// with the final call id and name, the text and arguments streamed are the
// final ones, every call has an id for its result to answer, and the
// sources of the API's web search have a URL each, each URL once.
func FuzzAccumulator(f *testing.F) {
	f.Add([]byte(`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}
{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"gAAA","summary":[{"type":"summary_text","text":"a"},{"type":"summary_text","text":"b"}]}}
{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"Read"}}
{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"file_path\":"}
{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","arguments":"{\"file_path\":\"a.go\"}","call_id":"call_1","name":"Read"}}
{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":5,"output_tokens":3}}}`))
	f.Add([]byte(`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","content":[]}}
{"type":"response.output_text.delta","output_index":0,"delta":"Hel"}
{"type":"response.refusal.delta","output_index":0,"delta":"No."}
{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Hello"},{"type":"refusal","refusal":"No."}]}}
{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"Hello"}]},{"id":"fc_9","type":"function_call","arguments":"{}","name":"Glob"}]}}`))
	f.Add([]byte(`{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}
{"type":"response.output_item.done","output_index":3,"item":{"type":"function_call","arguments":"{}"}}
{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"web_search_call"}]}}`))
	f.Add([]byte(`{"type":"response.output_item.added","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress","action":{"type":"search"}}}
{"type":"response.output_item.done","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","sources":[{"type":"url","url":"https://a.example"},{"type":"url","url":""}]}}}
{"type":"response.output_text.delta","output_index":1,"delta":"See a."}
{"type":"response.completed","response":{"status":"completed","output":[{"type":"web_search_call","action":{"type":"open_page","url":"https://b.example"}},{"type":"message","content":[{"type":"output_text","text":"See a.","annotations":[{"type":"url_citation","title":"A","url":"https://a.example"},{"type":"url_citation","url":""}]}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var deltas []llm.Delta
		a := newAccumulator(func(d llm.Delta) { deltas = append(deltas, d) })
		for line := range bytes.Lines(data) {
			var ev responses.ResponseStreamEventUnion
			if json.Unmarshal(line, &ev) != nil {
				continue // the stream's decoder refuses it before the accumulator sees it
			}
			if a.add(ev) != nil {
				return
			}
		}
		resp := a.response()
		llmtest.CheckDeltas(t, resp, deltas)
		for i, b := range resp.Message.Content {
			if b.Type == llm.BlockToolUse && b.ID == "" {
				t.Fatalf("block %d: a call without an id for its result to answer: %+v", i, b)
			}
		}
		seen := map[string]bool{}
		for _, s := range resp.Sources {
			if s.URL == "" || seen[s.URL] {
				t.Fatalf("sources %+v: a URL empty or twice", resp.Sources)
			}
			seen[s.URL] = true
		}
	})
}
